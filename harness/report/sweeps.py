"""A sweep as curves: per workload, figure and metric, one row per point of the sweep (the
values the config's ``sweep`` varied, which every record of the point carries in its
params), and per system its median at that point, the ceiling of its path there and its
share of it, and the verdict between the systems compared at that point.

Nothing here decides a flag, a ceiling or a verdict again: the cells are the view's
annotated records, pooled over repeats by :class:`harness.report.compare.Cells`, whose
``judge`` gives the same verdict as the side-by-side tables. A point's figure is the one
that stands for all its clients: a record of one client host where the point ran one, the
aggregate (``host: all``, or a tool's ``total``) where it ran several — never a client's
own share of a several-client point.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.api import registry
from harness.api.records import CIRCUMSTANTIAL, OVER_CLIENTS, Measurement, describe_cell, flag_marks, flag_notes
from harness.api.tables import MatrixSpec, TableSpec
from harness.report.compare import presentations
from harness.report.verdicts import Cells, SystemKey, Systems, Table
from harness.results.schema import RunInfo
from harness.units import rate

# what a point's record carries besides the swept values that does not set a curve apart
_NOT_IDENTITY = CIRCUMSTANTIAL | {"host", "clients"}


def swept(infos: dict[str, RunInfo]) -> tuple[str, ...]:
    """The keys the runs' configs swept, in the order they name them."""
    keys: dict[str, None] = {}
    for info in infos.values():
        sweep = info.config.get("sweep") if isinstance(info.config, dict) else None
        if isinstance(sweep, dict):
            keys.update((str(k), None) for k in sweep)
    return tuple(keys)


@dataclass
class Curve:
    """One figure of one workload over the sweep's points (see the module)."""

    workload: str
    title: str  # the workload's table and the figure's row label
    metric: str
    unit: str
    keys: tuple[str, ...]
    points: list[tuple[Any, ...]] = field(default_factory=list)
    systems: list[SystemKey] = field(default_factory=list)
    pairs: list[tuple[SystemKey, SystemKey]] = field(default_factory=list)
    cells: Cells = field(default_factory=Cells)

    def row(self, point: tuple[Any, ...]) -> Any:
        return (self.title, point)

    def to_dict(self, systems: Systems) -> dict[str, Any]:
        out = []
        for point in self.points:
            row = self.row(point)
            each = {}
            for s in self.systems:
                value, flags = self.cells.get(row, s, self.metric)
                each[systems.name(s)] = {"value": value, "ceiling": self.cells.ceilings.get((row, s, self.metric)),
                                         "share": self.cells.share(row, s, self.metric), "flags": sorted(flags),
                                         "n": len(self.cells.values.get((row, s, self.metric), []))}
            verdicts = {f"{systems.name(a)} vs {systems.name(b)}": self.cells.judge(row, a, b, self.metric, systems)
                        for a, b in self.pairs}
            out.append({"values": dict(zip(self.keys, point)), "systems": each, "verdicts": verdicts})
        return {"workload": self.workload, "figure": self.title, "metric": self.metric, "unit": self.unit,
                "swept": list(self.keys), "points": out}


def curves(records: list[Measurement], keys: tuple[str, ...], systems: Systems, cv_threshold: float) -> list[Curve]:
    """Every curve the (annotated) records of a sweep over ``keys`` make: per workload
    table and metric it shows, per figure (its test and the parameters that are not swept)
    and phase."""
    if not keys:
        return []
    by_workload: dict[str, list[Measurement]] = {}
    for m in records:
        if all(k in m.params for k in keys):
            by_workload.setdefault(m.workload, []).append(m)
    out: list[Curve] = []
    for workload, mine in by_workload.items():
        if registry.find("workload", workload) is None:  # (the core's own records: resources, faults)
            continue
        for spec in presentations(workload, mine):
            if isinstance(spec, MatrixSpec):
                metrics, select = [spec.metric], (lambda m: True)
            else:  # (the charted metric first: a rate reads as a curve)
                metrics = list(dict.fromkeys([*([spec.chart] if spec.chart else []), *(c.key for c in spec.columns)]))
                select = spec.select
            swept = keys + _following(mine, keys)
            for metric in metrics:
                out += _curves(workload, spec, metric, select, mine, swept, keys, systems, cv_threshold)
    return out


def _following(records: list[Measurement], keys: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters that follow the sweep: one value at each point, another at another
    (a swept option as the records name it: ``sizes`` as ``file_size``, ``record_sizes`` as
    ``record_size``) — the point's, not what sets one figure apart from another."""
    seen: dict[str, dict[tuple[Any, ...], set[str]]] = {}
    for m in records:
        point = tuple(_hashable(m.params.get(k)) for k in keys)
        for k, v in m.params.items():
            if k not in keys and k not in _NOT_IDENTITY:
                seen.setdefault(k, {}).setdefault(point, set()).add(json.dumps(v, sort_keys=True, default=str))
    points = {tuple(_hashable(m.params.get(k)) for k in keys) for m in records}
    return tuple(k for k, by_point in seen.items()
                 if len(by_point) == len(points) > 1 and all(len(v) == 1 for v in by_point.values())
                 and len(set().union(*by_point.values())) > 1)


def _curves(workload: str, spec: TableSpec | MatrixSpec, metric: str, select: Any, records: list[Measurement],
            swept: tuple[str, ...], keys: tuple[str, ...], systems: Systems, cv_threshold: float) -> list[Curve]:
    found: dict[str, Curve] = {}
    for m in records:
        if m.metric != metric or m.test == "cell" or not select(m) or not _whole(m):
            continue
        identity = _identity(m, swept)
        curve = found.get(identity)
        if curve is None:
            curve = found[identity] = Curve(workload, _figure(spec, m), metric, m.unit, keys,
                                            cells=Cells(cv_threshold=cv_threshold))
        point = tuple(_hashable(m.params.get(k)) for k in keys)
        if point not in curve.points:
            curve.points.append(point)
        curve.cells.add(curve.row(point), m)
    titles: dict[str, int] = {}
    for curve in found.values():
        titles[curve.title] = titles.get(curve.title, 0) + 1
    for identity, curve in found.items():
        curve.systems = list(curve.cells.systems)
        curve.pairs = _pairs(curve.systems, systems)
        if titles[curve.title] > 1:  # (figures whose labels read the same: what sets them apart)
            curve.title += f" ({describe_cell(json.loads(identity)[1])})"
    return list(found.values())


def _identity(m: Measurement, keys: tuple[str, ...]) -> str:
    """What a record is a figure of, whatever the point: its test and parameters, less the
    swept ones and those that say how a value came about or which client gave it."""
    rest = {k: v for k, v in m.params.items() if k not in _NOT_IDENTITY and k not in keys}
    return json.dumps([m.test, rest], sort_keys=True, default=str)


def _whole(m: Measurement) -> bool:
    """A record that stands for every client of its point: one of a point run on one
    client host (no ``host``, or ``clients: 1``), or an aggregate over its clients."""
    host = m.params.get("host")
    return host is None or host in OVER_CLIENTS or m.params.get("clients") == 1


def _figure(spec: TableSpec | MatrixSpec, m: Measurement) -> str:
    """How a figure is named: its table's row label, the metric, the phase of a fault."""
    if isinstance(spec, TableSpec):
        group, label = spec.label(m)
        title = f"{spec.title}: {' '.join(x for x in (group, label) if x)}"
    else:
        title = f"{m.workload} {m.test} {describe_cell(m.params, ('phase', 'host', 'clients'))}"
    title = title.strip() + f" [{m.metric}]"
    phase = m.params.get("phase")
    return title + (f" ({phase} the fault)" if phase in ("before", "after") else
                    " (during the fault)" if phase else "")


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True, default=str) if isinstance(v, (dict, list)) else v


def _pairs(present: list[SystemKey], systems: Systems) -> list[tuple[SystemKey, SystemKey]]:
    """The systems compared at each point, as the tables compare them
    (:meth:`harness.report.compare.Systems.pairs`: like variant against like)."""
    return systems.pairs(systems.first([s for s in present if not systems.control(s)]))


def curve_tables(found: list[Curve], systems: Systems) -> list[Table]:
    """A table per curve: a row per point, per system its figure (with its share of the
    ceiling and its flags) and the ceiling, then the verdict of each pair compared."""
    out = []
    for curve in found:
        ceilings = any(k[2] == curve.metric for k in curve.cells.ceilings)
        header = [*curve.keys]
        for s in curve.systems:
            header += [systems.name(s), *([f"{systems.name(s)} ceiling"] if ceilings else [])]
        header += [f"{systems.name(a)} vs {systems.name(b)}" for a, b in curve.pairs]
        seen: set[str] = set()
        rows = []
        for point in curve.points:
            row = curve.row(point)
            line = [str(v) for v in point]
            for s in curve.systems:
                ceiling = curve.cells.ceilings.get((row, s, curve.metric))
                line += [curve.cells.text(row, s, curve.metric, seen),
                         *([rate(ceiling) if ceiling else "—"] if ceilings else [])]
            line += [curve.cells.judge(row, a, b, curve.metric, systems) for a, b in curve.pairs]
            rows.append(line)
        notes = flag_notes(seen) + ["a point's figure is what all its clients did together (host 'all' where "
                                    "several ran)" + ("; (N%): its share of its path's ceiling at that point"
                                                      if ceilings else "")]
        table = Table(f"Sweep over {', '.join(curve.keys)}: {curve.title}", header, rows, notes)
        table.chart = chart(curve, systems)
        out.append(table)
    return out


def chart(curve: Curve, systems: Systems) -> dict[str, Any]:
    """A line per system (and value of the other swept keys) over the first swept key, with
    its ceiling as a dashed line of the same name."""
    first = sorted({p[0] for p in curve.points}, key=lambda v: curve.points.index(
        next(p for p in curve.points if p[0] == v)))
    others = list(dict.fromkeys(p[1:] for p in curve.points))
    lines = []
    for s in curve.systems:
        for rest in others:
            tag = ", ".join(f"{k} {v}" for k, v in zip(curve.keys[1:], rest))
            name = systems.name(s) + (f" ({tag})" if tag else "")
            ys, ceilings, texts = [], [], []
            for x in first:
                row = curve.row((x, *rest))
                value, flags = curve.cells.get(row, s, curve.metric)
                ys.append(value)
                ceilings.append(curve.cells.ceilings.get((row, s, curve.metric)))
                n = len(curve.cells.values.get((row, s, curve.metric), []))
                texts.append(f"n={n}{flag_marks(flags)}")
            if any(y is not None for y in ys):
                lines.append({"name": name, "y": ys, "ceiling": ceilings, "text": texts})
    return {"kind": "sweep", "title": f"{curve.title} over {curve.keys[0]}", "x": [str(x) for x in first],
            "xtitle": curve.keys[0], "series": lines, "unit": curve.unit, "metric": curve.metric}
