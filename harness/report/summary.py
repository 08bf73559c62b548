"""The answer a reader acts on, printed before everything else: per workload and pair of
systems, which was faster in how many comparable cells and by how much (the median and range
of the ratio over those cells), how many cells had no verdict and why; and per system its
usual bottleneck (the busiest node and resource of its cells, harness.report.resources) and
what a GiB cost it (harness.report.cost).

It reads the verdicts the tables decided (``Table.verdicts``, harness.report.compare) and
decides none again. A cell of several clients counts once, by its aggregate row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api.records import Measurement
from harness.api.sampler import HOST, RESOURCES
from harness.report import cells, cost, resources
from harness.report.compare import FAILURES_TITLE
from harness.report.stats import median
from harness.report.verdicts import SystemKey, Systems, Table, Verdict

TITLE = "The answer"
NO_VERDICT = {"n=1": "within one run's noise (n=1)", "not significant": "no significant difference",
              "missing": "a side has no value", "offered": "its rate set by the offered load"}


@dataclass
class Pairing:
    """The verdicts of one workload's cells for one pair of systems."""

    workload: str
    metric: str
    a: SystemKey
    b: SystemKey
    verdicts: list[Verdict] = field(default_factory=list)

    def wins(self, who: SystemKey) -> int:
        return sum(1 for v in self.verdicts if v.winner == who)

    def comparable(self) -> list[Verdict]:
        """Cells where both sides have a value and no flag makes them unfit."""
        return [v for v in self.verdicts if v.reason not in ("flags", "missing") and v.ratio is not None]

    def no_verdict(self) -> Counter[str]:
        """Cells without a winner, by why: degraded, host-bound, other flags (named), n=1,
        not significant, a side missing."""
        out: Counter[str] = Counter()
        for v in self.verdicts:
            if v.winner is not None:
                continue
            if v.reason == "flags":
                out["degraded" if "degraded" in v.unfit else "host-bound" if "host-bound" in v.unfit
                    else "flagged " + ", ".join(v.unfit)] += 1
            else:
                out[NO_VERDICT.get(v.reason or "", v.reason or "")] += 1
        return out

    def lead(self) -> tuple[SystemKey, SystemKey]:
        """(the system said first, the other): the one with more wins; with as many each, the
        one faster by the median ratio (so '1.04×', not '0.96×')."""
        lead, other = (self.a, self.b) if self.wins(self.a) > self.wins(self.b) else (self.b, self.a)
        if self.wins(self.a) == self.wins(self.b):
            ratios = [v.ratio for v in self.comparable() if v.ratio]
            lead, other = (self.b, self.a) if ratios and median(ratios) < 1 else (self.a, self.b)
        return lead, other

    def ratios(self, lead: SystemKey) -> list[float]:
        """How many times ``lead`` is as fast as the other, in each comparable cell."""
        return [v.ratio if lead == self.a else 1 / v.ratio for v in self.comparable() if v.ratio]

    def reference(self) -> SystemKey | None:
        """The one of the two the other is judged against, as the tables judged them."""
        return next((v.reference for v in self.verdicts if v.reference is not None), None)


def pairings(tables: Sequence[Table]) -> list[Pairing]:
    """Every workload's verdicts, by pair of systems, in the order of the tables."""
    found: dict[tuple[str, str, frozenset[SystemKey]], Pairing] = {}
    for t in tables:
        for v in t.verdicts:
            if v.per_client:
                continue
            key = (t.workload, v.metric, frozenset((v.a, v.b)))
            p = found.setdefault(key, Pairing(t.workload, v.metric, v.a, v.b))
            p.verdicts.append(v if (v.a, v.b) == (p.a, p.b) else _flipped(v))
    return list(found.values())


def _flipped(v: Verdict) -> Verdict:
    from dataclasses import replace

    return replace(v, a=v.b, b=v.a, ratio=1 / v.ratio if v.ratio else v.ratio, n=(v.n[1], v.n[0]))


def _times(x: float) -> str:
    return f"{x:.2f}×"


def pairing_line(p: Pairing, name: Callable[[SystemKey], str]) -> str:
    """'largefile (throughput), CephFS vs GlusterFS: CephFS faster in 3 of 4 comparable
    cells, GlusterFS in 1; CephFS 1.62× as fast as GlusterFS (median; range 0.85×–2.40×). No verdict
    in 2 cells: 1 degraded, 1 n=1 (…).'"""
    comparable = p.comparable()
    lead, other = p.lead()
    # (the pair named in one order on every line, the reference first, whichever leads)
    head = f"{p.workload} ({p.metric}), {name(p.a)} vs {name(p.b)}: "
    if comparable:
        ratios = p.ratios(lead)
        wins = p.wins(lead)
        cells = f"{len(comparable)} comparable cell{'s' if len(comparable) != 1 else ''}"
        tie = wins == p.wins(other)
        if not wins:
            text = f"neither faster in any of the {cells}" if len(comparable) > 1 else \
                "neither faster in the one comparable cell"
        else:
            text = f"{name(lead)} faster in {wins} of {cells}"
            if p.wins(other):
                text += f", {name(other)} in {p.wins(other)}"
        single = sum(1 for v in p.verdicts if v.winner is not None and min(v.n) < 2)
        if single:
            text += f" ({single} of these verdicts from one run a side)"
        # (a ratio of speeds, whatever the metric: for a time it is the other's over its own;
        # where the verdicts name no side, it is said as a ratio that names none either)
        text += ("; their ratio, on which no verdict rests: " if not wins else
                 "; their ratio, which names no side (as many verdicts each): " if tie else "; ") \
            + (f"{name(lead)} {_times(median(ratios))} as fast as {name(other)}"
               + (f" (median; range {_times(min(ratios))}–{_times(max(ratios))})" if len(ratios) > 1 else ""))
    else:
        text = "no comparable cell"
    missing = p.no_verdict()
    if missing:
        total = sum(missing.values())
        text += f". No verdict in {total} cell{'s' if total != 1 else ''}: " + ", ".join(
            f"{n} {why}" for why, n in missing.most_common())
    return head + text + "."


def pairing_data(p: Pairing, name: Callable[[SystemKey], str]) -> dict[str, Any]:
    """A line of the answer's verdicts as data: the pair, the reference, who is faster (more
    wins; None on as many each), the cells, the ratio of the first said over the other
    (median and range over the comparable cells: how many times as fast), and why cells
    have no verdict."""
    lead, other = p.lead()
    ratios = p.ratios(lead)
    ref = p.reference()
    return {"workload": p.workload, "metric": p.metric, "pair": [name(p.a), name(p.b)],
            "reference": name(ref) if ref is not None else None,
            "faster": name(lead) if p.wins(lead) > p.wins(other) else None,
            "wins": {name(lead): p.wins(lead), name(other): p.wins(other)},
            "cells": len(p.verdicts), "comparable_cells": len(p.comparable()),
            "single_run_verdicts": sum(1 for v in p.verdicts if v.winner is not None and min(v.n) < 2),
            "ratio": {"of": name(lead), "over": name(other), "median": median(ratios) if ratios else None,
                      "low": min(ratios) if ratios else None, "high": max(ratios) if ratios else None,
                      "unit": "×"},
            "no_verdict": dict(p.no_verdict().most_common()), "text": pairing_line(p, name)}


@dataclass(frozen=True)
class Bottleneck:
    """A system's usual bottleneck: the node kind and resource busiest in most of its cells."""

    kind: str  # "a client's network out"
    cells: int  # of how many cells it was the busiest in
    of: int
    worst: Measurement  # the node's record where it was busiest

    def text(self) -> str:
        # (a cell run: a cell in one repeat of one run — its nodes were sampled in each)
        peak = ", at its peak" if self.worst.metric.startswith("peak_") else ""
        return (f"the busiest was {self.kind} in {self.cells} of {self.of} cell run{'s' if self.of != 1 else ''} "
                f"(up to {self.worst.params['share']:.0f} % of {self.worst.params['capacity']}{peak}, "
                f"{self.worst.test})")

    def to_dict(self) -> dict[str, Any]:
        return {"busiest": self.kind, "cells": self.cells, "of": self.of, "node": self.worst.test,
                "resource": self.worst.metric.removeprefix("peak_"),
                "share": {"value": self.worst.params["share"], "unit": "%"},
                "capacity": str(self.worst.params["capacity"]), "text": self.text()}


def bottlenecks(records: list[Measurement], systems: Systems) -> dict[SystemKey, str]:
    """Per system, the node kind and resource busiest (highest share of its capacity) in
    most of its cells, as the resource table finds each cell's busiest: 'the clients'
    network out was the busiest in 3 of 4 cells (up to 94 % of its link 1.0 Gbit/s, client1)'."""
    return {k: b.text() for k, b in busiest(records, systems).items()}


def busiest(records: Sequence[Measurement], systems: Systems) -> dict[SystemKey, Bottleneck]:
    """:func:`bottlenecks`, as data: chosen among the clients and each system's own storage
    nodes (:mod:`harness.report.cells`)."""
    passes: dict[tuple[Any, ...], list[Measurement]] = {}
    declared = cells.roles(records)
    for m in records:  # (per cell, its phases together: 'in N of M cells' counts cells)
        if cells.is_node(m):
            passes.setdefault(cells.cell_of(m), []).append(m)
    by_system: dict[SystemKey, list[tuple[str, Measurement]]] = {}
    for key, found in passes.items():  # (among the clients and the system's own storage nodes)
        best = resources.top(resources.own_nodes(found, systems.of((key[1], key[2])).services, declared))
        if best is None:
            continue
        role = cells.role_of(best, declared)
        kind = {"client": "a client's", "server": "a server's"}.get(role or "", f"{best.test}'s")
        what = resources.WHAT.get(best.metric.removeprefix("peak_"), best.metric)
        by_system.setdefault((key[1], key[2]), []).append((f"{kind} {what}", best))
    out = {}
    for system, seen in by_system.items():
        counts = Counter(k for k, _ in seen)
        kind, n = counts.most_common(1)[0]
        worst = max((m for k, m in seen if k == kind), key=lambda m: m.params["share"])
        out[system] = Bottleneck(kind, n, len(seen), worst)
    return out


def lines(tables: list[Table], records: list[Measurement], systems: Systems,
          costs: list[cost.Cost] | None = None) -> list[str]:
    """The summary, line by line: the verdicts per workload and pair, then each system's
    bottleneck and cost. Empty where there is nothing to say."""
    out = [pairing_line(p, systems.name) for p in pairings(tables)]
    found = costs if costs is not None else []
    busy = bottlenecks(records, systems)
    keys = list(dict.fromkeys([*busy, *((c.backend, c.variant) for c in found)]))
    if out and not keys and not any(m.workload == RESOURCES for m in records):
        out.append("No node of these runs was sampled (the environment watches none): no bottleneck, and no "
                   "cost per GiB.")
    for key in keys:
        said = [f"bottleneck: {busy[key]}" if key in busy else "",
                f"A GiB moved cost {cost.sentence(found, key)} (medians over its cells)"
                if cost.sentence(found, key) else ""]
        if any(said):
            out.append(f"{systems.name(key)} — " + ". ".join(s for s in said if s) + ".")
    contended: dict[SystemKey, set[Any]] = {}
    for m in records:
        if "contended" in m.flags:
            contended.setdefault((m.backend, m.variant), set()).add(cells.cell_of(m))
    for key, found_cells in contended.items():  # (what no verdict was given on, and why: the lab was shared)
        out.append(f"{systems.name(key)} — {len(found_cells)} cell run{'s' if len(found_cells) != 1 else ''} "
                   "(a cell in one repeat) measured "
                   "while another system's node on the lab was busy (contended [L]: the busiest-node table names it); "
                   "no verdict there.")
    return out


def text(summary: Sequence[str]) -> list[str]:
    """The summary as the terminal and Markdown outputs open with it."""
    if not summary:
        return []
    return [f"{TITLE} (read from the tables' verdicts below; a cell of several clients counts once, by its "
            "aggregate):", *[f"  {line}" for line in summary]]


def complete(records: list[Measurement], tables: list[Table], systems: Systems,
             with_tables: bool = True) -> tuple[list[Measurement], list[str], list[cost.Cost]]:
    """What a view gets besides the workloads' own tables: the cost records of every cell
    whose nodes' CPU time was counted (harness.report.cost), added to its records; their
    table, placed after the resource table; and the summary the outputs open with.
    Returns (the records with the costs, the summary, the costs)."""
    found = cost.costs(records, lambda key: systems.of(key).services)
    records = [*records, *cost.cost_records(found)]
    if not with_tables:
        return records, [], found
    if found:
        rows, notes = cost.table(found, systems.name)
        place(tables, Table(cost.TITLE, cost.COLUMNS, rows, notes, cost.chart(found, systems.name), name="costs",
                            keys=list(cost.KEYS), data=cost.table_data(found, systems.name)))
    return records, lines(tables, records, systems, found), found


def answer(summary: Sequence[str], tables: Sequence[Table], records: Sequence[Measurement], systems: Systems,
           costs: Sequence[cost.Cost]) -> dict[str, Any]:
    """The answer as data: its lines as the outputs print them (``summary``), and what they
    say as figures — the verdicts per workload and pair (:func:`pairing_data`), each
    system's bottleneck, and what a GiB cost it per workload (the median over its cells, in
    CPU-seconds per GiB, per side). What each system holds is the load table's ('load')."""
    busy = busiest(records, systems)
    keys = list(dict.fromkeys([*busy, *((c.backend, c.variant) for c in costs)]))
    return {"title": TITLE, "lines": list(summary),
            "verdicts": [pairing_data(p, systems.name) for p in pairings(tables)],
            "bottlenecks": [{"system": systems.name(k), "backend": k[0], "variant": k[1], **busy[k].to_dict()}
                            for k in keys if k in busy],
            "costs": [{"system": systems.name(k), "backend": k[0], "variant": k[1], "workload": workload,
                       **{f"{side}_cpu_s_per_gib": {"value": value, "unit": "s/GiB"} if value is not None else
                          {"value": None, "unit": "s/GiB", "why": cost.NOT_SAMPLED} for side, value in per.items()}}
                      for k in keys for workload, per in cost.medians(costs, k)]}


def place(tables: list[Table], table: Table) -> None:
    """A table after the resource table, else before the failed cells, else last."""
    titles = [t.title for t in tables]
    if resources.TITLE in titles:
        tables.insert(titles.index(resources.TITLE) + 1, table)
    elif FAILURES_TITLE in titles:
        tables.insert(titles.index(FAILURES_TITLE), table)
    else:
        tables.append(table)
