"""The order a run's cells go in (the config's ``order``: harness.execution.schema.OrderSpec).

Shuffled, the points of the sweep go in another order in each repeat, and so do the cells
of a workload whose cells may run in any order (``Workload.any_order``: fio's profiles and
its points of offered load) at each point — the same order for every backend of that
repeat and point, which alternate as ever (harness.execution.runner.order_for). Each order
is drawn from the run's seed and where it is used alone (the repeat, the point, the
workload's entry), so the same seed gives the same order in every session of the run
('run --resume'), and a cell's key never depends on it. Listed, everything goes as the
config lists it, every repeat of a point before the next point."""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.api.contracts import Workload
from harness.api.records import describe_cell
from harness.execution.sweep import Point

T = TypeVar("T")
SEEDS = 10**6  # a seed drawn for a run is below this: short enough to read out and type again
LISTED_NOTE = "cells in the order the config lists them (order: listed)"


@dataclass(frozen=True)
class Order:
    """The run's order: shuffled from ``seed``, or (None) as listed."""

    seed: int | None = None

    @property
    def shuffled(self) -> bool:
        return self.seed is not None

    def _drawn(self, items: Sequence[T], *where: Any) -> list[T]:
        """``items`` in the order the seed draws for ``where`` (as given, listed)."""
        out = list(items)
        if self.seed is not None and len(out) > 1:
            # (a string seeds the same generator on every machine and Python, hash seed or not)
            random.Random("/".join(map(str, (self.seed, *where)))).shuffle(out)
        return out

    def points(self, points: Sequence[Point], rep: int) -> list[Point]:
        """The points of the sweep in the order repeat ``rep`` runs them: the swept ones
        shuffled, those outside the sweep (run once, on the environment as configured) last."""
        swept = [p for p in points if p.values]
        return self._drawn(swept, "points", rep) + [p for p in points if not p.values]

    def cells(self, workload: Workload, entry: int, cells: Sequence[dict[str, Any]], rep: int,
              point: int) -> list[dict[str, Any]]:
        """The cells of a workload (the config's entry ``entry``) at a point of the sweep (its
        number) in repeat ``rep``: shuffled where they may run in any order."""
        if not getattr(workload, "any_order", False):
            return list(cells)
        return self._drawn(cells, "cells", rep, point, entry)

    def cells_said(self, point: Point, rep: int, at: int) -> list[str]:
        """The order of each shuffled workload's cells at a point of the sweep (number ``at``)
        in repeat ``rep``, a line each (none as listed, or where none has two cells)."""
        if self.seed is None:
            return []
        lines = []
        for entry, w in enumerate(point.workloads):
            cells = w.cells()
            if getattr(w, "any_order", False) and len(cells) > 1:
                lines.append(f"{w.name}'s cells in repeat {rep + 1}" + (f" at {point.describe()}" if point.values
                                                                        else "") + ": " + "; ".join(
                    describe_cell(c) for c in self.cells(w, entry, cells, rep, at)))
        return lines

    def said(self) -> str:
        """The order as a run's progress says it."""
        if self.seed is None:
            return LISTED_NOTE
        return (f"cells in shuffled order, seed {self.seed}: the sweep's points in each repeat, and the cells of "
                "fio (and any workload whose cells may run in any order) at each point; 'order: {seed: "
                f"{self.seed}}}' runs them so again, 'order: listed' as the config lists them")

    def fact(self) -> dict[str, Any]:
        """What the run stores of it, beside its host's facts."""
        return {"shuffle": self.seed is not None, "seed": self.seed}


def ordered(configured: Any) -> Order:
    """A new run's order, from the config's ``order``: shuffled from its seed, or from one
    drawn now; or listed."""
    if not configured.shuffle:
        return Order(None)
    return Order(configured.seed if configured.seed is not None else secrets.randbelow(SEEDS))


def stored_order(fact: Any) -> Order:
    """The order of a run that goes on ('run --resume'): the one its first session stored
    (its ``order`` fact); a run stored without one (by an older dfsbench) went as listed."""
    seed = fact.get("seed") if isinstance(fact, dict) and fact.get("shuffle") else None
    return Order(seed if isinstance(seed, int) and not isinstance(seed, bool) else None)
