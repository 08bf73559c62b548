"""What a plugin declares about how its records are shown and what its system is: table
specs (side by side, or a grid like the report's iozone tables) and the facts of a system
that the limits and the tables read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.api.records import Measurement

# ---------------------------------------------------------------- what plugins declare


@dataclass(frozen=True)
class SystemFacts:
    """What a backend declares about the system behind a target, read by the limits and
    the tables: how to call it, whether its path crosses a network, how many times a
    byte the client writes crosses the client's link, and whether it is the control
    (shown, but never half of a verdict)."""

    display: str
    network: bool = False
    write_copies: float = 1.0
    control: bool = False
    stored_copies: float = 1.0  # bytes kept per byte written (replicas; (k+m)/k for disperse)


@dataclass(frozen=True)
class Column:
    """A table column: a metric (or, in a matrix, a test) and its heading."""

    key: str
    label: str


def _default_label(m: Measurement) -> tuple[str, str]:
    return m.test, ""


def _everything(m: Measurement) -> bool:
    return True


@dataclass(frozen=True)
class TableSpec:
    """A side-by-side table a workload declares: one row per cell (rows are told apart
    by the cell's identity, so records that differ in any parameter are never pooled),
    one column group per system, and a comparison column decided by ``verdict`` — in
    that metric's direction (a time is better smaller, a rate larger).

    ``label`` gives a record's (group, row) labels; ``order`` sorts rows (default: first
    seen); ``chart`` is the metric the HTML report draws as bars; ``curves`` metrics are
    drawn as one line per row and system (e.g. latency percentiles)."""

    title: str
    columns: tuple[Column, ...]
    verdict: str | None  # None: no comparison column (e.g. a baseline)
    row_header: tuple[str, str] = ("test", "cell")
    label: Callable[[Measurement], tuple[str, str]] = _default_label
    order: Callable[[Measurement], Any] | None = None
    select: Callable[[Measurement], bool] = _everything
    chart: str | None = None
    chart_log: bool = False
    curves: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatrixSpec:
    """A grid per system and group, like the report's iozone tables: rows (e.g. file
    size × record size) by columns that are tests, one metric, shown divided by
    ``scale`` in ``unit_label``. The HTML report draws it as a heatmap with one colour
    scale per group across systems."""

    title: str  # formatted with {system} and {group}
    metric: str
    group: Callable[[Measurement], str]
    row: Callable[[Measurement], tuple[Any, tuple[str, ...]]]  # (sort key, row labels)
    row_header: tuple[str, ...]
    columns: tuple[Column, ...]
    scale: float = 1.0
    unit_label: str = ""


Presentation = TableSpec | MatrixSpec


