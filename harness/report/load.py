"""What load each system holds: the points of offered load (open loop) as response curves,
the knee of each, the highest load within the config's latency target (``slo``), and what a
fault at a fixed offered load did to the tail latency.

A point is one offered rate of one figure (a workload's test and direction, its other
parameters alike) on one system; its records are those that stand for every client that
offered it (the clients' aggregate, ``host: all``, or the one client), pooled over repeats
by their median. Its offered load is what every client offered together
(``offered_iops_per_client`` × clients; the median over repeats), its achieved rate the
aggregate's ``iops``, its latencies the aggregate's total-latency percentiles (of the
clients' merged histograms). A point is named by its cell's rate (``offered_iops``) or share
of the most the clients do (``offered_fraction``; that most, ``max_iops_per_client``, is the
curve's closed-loop maximum), never by what was offered, which a share's repeats vary in.

- **held**: not ``saturated`` in any repeat (it completed at least 95 % of what was offered,
  within the arrivals' chance: ``harness.api.records.FLAGS``).
- **knee**: the highest offered load up to which every point, from the lowest, is held and
  has a p99 at most :data:`KNEE_P99_FACTOR` times the lowest point's p99.
- **within the SLO**: the highest offered load up to which every point, from the lowest, is
  held and has the SLO's percentile at or under its target.
- **through a fault** (a load cell run through a fault): each whole second from the injection
  to the system being healthy again is above the SLO where the clients' percentile in that
  second (of their merged histograms) is above the target, or where no client completed any
  I/O in it (a stall: the I/Os waiting then took over a second). The load is **held while
  the node was down** where no second from the injection to the restore is above it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import CIRCUMSTANTIAL, FLAGS, Measurement, flag_marks, flag_notes
from harness.report.compare import SystemKey, Table
from harness.results.store import RunInfo
from harness.units import latency, parse_latency

OFFERED = "offered_iops_per_client"
POINT = ("offered_iops", "offered_fraction")  # what names a cell's point of offered load
KNEE_P99_FACTOR = 2.0
LATENCY = "lat_p"  # the total latency's percentiles (submission + completion)
# what a point's record carries that does not set its figure apart
_NOT_FIGURE = CIRCUMSTANTIAL | {"host", "clients", *POINT, "phase"}


def slo_of(infos: dict[str, RunInfo]) -> dict[str, float]:
    """The latency targets of the runs' configs (``{"p99": 0.02}``), the first run's where
    two name one percentile; a value that is not a latency is left out."""
    found: dict[str, float] = {}
    for info in infos.values():
        slo = info.config.get("slo") if isinstance(info.config, dict) else None
        for key, value in (slo.items() if isinstance(slo, dict) else ()):
            try:
                found.setdefault(str(key), parse_latency(value))
            except ValueError:
                continue
    return found


@dataclass
class Point:
    offered: float  # I/Os per second, every client's together
    achieved: float | None = None
    latencies: dict[str, float] = field(default_factory=dict)  # 'p99' -> s
    held: bool = True
    flags: set[str] = field(default_factory=set)


@dataclass
class Curve:
    """One figure's points on one system, by offered load."""

    figure: str
    system: SystemKey
    points: dict[float, Point] = field(default_factory=dict)
    closed_loop: float | None = None  # the same figure's rate run as fast as it can (op/s)
    ceiling: float | None = None  # the path's ceiling in I/Os per second

    def ordered(self) -> list[Point]:
        return [self.points[k] for k in sorted(self.points)]

    def knee(self) -> Point | None:
        """See the module: None where the lowest point is not held already."""
        points = self.ordered()
        base = points[0].latencies.get("p99") if points else None
        last = None
        for p in points:
            p99 = p.latencies.get("p99")
            if not p.held or p99 is None or base is None or p99 > KNEE_P99_FACTOR * base:
                break
            last = p
        return last

    def within(self, percentile: str, target: float) -> Point | None:
        last = None
        for p in self.ordered():
            value = p.latencies.get(percentile)
            if not p.held or value is None or value > target:
                break
            last = p
        return last


def _figure(m: Measurement) -> str:
    rest = {k: v for k, v in m.params.items() if k not in _NOT_FIGURE and k != "direction" and k != "profile"}
    return json.dumps([m.workload, m.test, m.params.get("direction"), rest], sort_keys=True, default=str)


def _title(figure: str) -> str:
    workload, test, direction, _ = json.loads(figure)
    return f"{workload} {test} {direction or ''}".strip()


def _clients(m: Measurement) -> int:
    """How many clients a record stands for (one where it does not say)."""
    clients = m.params.get("clients")
    return clients if isinstance(clients, int) and not isinstance(clients, bool) and clients > 0 else 1


def _whole(m: Measurement) -> bool:
    host = m.params.get("host")
    return host is None or host == "all" or m.params.get("clients") == 1


def _point(m: Measurement) -> tuple[str, float] | None:
    """The cell's point of offered load a record is of: its rate, or its share of the most."""
    for key in POINT:
        v = m.params.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return key, float(v)
    return None


def curves(records: list[Measurement]) -> list[Curve]:
    """Every response curve of the records (see the module), in the order first seen."""
    values: dict[tuple[str, SystemKey, tuple[str, float]], dict[str, list[float]]] = {}
    flags: dict[tuple[str, SystemKey, tuple[str, float]], set[str]] = {}
    closed: dict[tuple[str, SystemKey], list[float]] = {}
    ceilings: dict[tuple[str, SystemKey], list[float]] = {}
    for m in records:
        if m.params.get("phase") or not _whole(m) or m.value is None:
            continue
        system = (m.backend, m.variant)
        figure = _figure(m)
        at = _point(m)
        offered = m.params.get(OFFERED)
        if at is None:
            if m.metric == "iops" and OFFERED not in m.params:  # (closed loop: as fast as it can)
                closed.setdefault((figure, system), []).append(m.value)
            continue
        if not isinstance(offered, (int, float)) or isinstance(offered, bool):
            continue
        key = (figure, system, at)
        clients = _clients(m)
        mine = values.setdefault(key, {})
        mine.setdefault(m.metric, []).append(m.value)
        if m.metric == "iops":
            mine.setdefault("offered", []).append(float(offered) * clients)
            most = m.params.get("max_iops_per_client")  # (a share's: the most, measured in its cell)
            if isinstance(most, (int, float)) and not isinstance(most, bool):
                closed.setdefault((figure, system), []).append(float(most) * clients)
        flags.setdefault(key, set()).update(m.flags)
        bs = m.params.get("bs")
        if m.metric == "throughput" and isinstance(m.params.get("ceiling"), (int, float)) and \
                isinstance(bs, int) and bs > 0:
            ceilings.setdefault((figure, system), []).append(float(m.params["ceiling"]) / bs)
    found: dict[tuple[str, SystemKey], Curve] = {}
    for (figure, system, point_key), metrics in values.items():
        if not metrics.get("offered"):
            continue
        curve = found.setdefault((figure, system), Curve(figure, system))
        point = Point(statistics.median(metrics["offered"]), flags=flags[(figure, system, point_key)])
        point.held = "saturated" not in point.flags
        if metrics.get("iops"):
            point.achieved = statistics.median(metrics["iops"])
        for metric, got in metrics.items():
            if metric.startswith(LATENCY):
                point.latencies[metric[len(LATENCY) - 1:]] = statistics.median(got)
        curve.points[point.offered] = point
    for (figure, system), curve in found.items():
        if closed.get((figure, system)):
            curve.closed_loop = statistics.median(closed[(figure, system)])
        if ceilings.get((figure, system)):
            curve.ceiling = min(ceilings[(figure, system)])
    return [c for c in found.values() if any(p.achieved is not None for p in c.points.values())]


@dataclass
class Through:
    """A load cell's fault, as its clients' tail latency saw it."""

    system: SystemKey
    figure: str
    offered: float
    fault: Measurement
    series: list[tuple[float, float]]  # (s from the injection, the percentile in that second)
    stalled: list[float]  # whole seconds (from the injection) in which nothing completed
    percentile: str

    def seconds_above(self, target: float, until: str = "healthy") -> tuple[int, int] | None:
        """How many whole seconds from the injection to ``until`` (the restore, or healthy
        again) were above ``target``, of how many the clients' series covers then."""
        end = self.fault.params.get(until)
        if not isinstance(end, (int, float)):
            return None
        end_s = float(end) - float(self.fault.params["injected"])
        inside = [(t, v) for t, v in self.series if t + 1 > 0 and t < end_s]  # (seconds that overlap it)
        stalls = [t for t in self.stalled if t + 1 > 0 and t < end_s]
        if not inside and not stalls:
            return None
        return sum(1 for _, v in inside if v > target) + len(stalls), len(inside) + len(stalls)


def through_faults(records: list[Measurement], percentile: str = "p99") -> list[Through]:
    """Each fault of a cell of offered load, with the per-second ``percentile`` of the
    latency of every client's I/Os in its 'during' run, on the injection's clock."""
    out = []
    metric = f"lat_{percentile}"
    for f in records:
        if f.workload != FAULT or not isinstance(f.params.get("injected"), (int, float)):
            continue
        zero = float(f.params["injected"])
        for m in records:
            if (m.run_id, m.backend, m.variant, m.repeat) != (f.run_id, f.backend, f.variant, f.repeat) \
                    or m.workload != f.params.get("for") or m.params.get("phase") != "during" \
                    or m.metric != metric or not _whole(m) or m.series is None \
                    or not isinstance(m.params.get(OFFERED), (int, float)) \
                    or any(f.params.get(k) != v for k, v in m.params.items()
                           if k in ("profile", *POINT, "job_file")):
                continue
            clients = _clients(m)
            stalled = [float(t) - zero for t in (m.params.get("stalled_s") or []) if isinstance(t, (int, float))]
            out.append(Through((m.backend, m.variant), _figure(m), float(m.params[OFFERED]) * clients, f,
                               [(t - zero, v) for t, v in m.series.points], stalled, percentile))
    return out


def _rate(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f} op/s"


def tables(records: list[Measurement], slo: dict[str, float], name: Callable[[SystemKey], str]) -> list[Table]:
    """The table of what each system holds (per figure: its knee, its highest load within
    each SLO, the closed-loop maximum and the path's ceiling, and what the fault did), with
    the response curves and the tail through each fault as its charts."""
    found = curves(records)
    if not found:
        return []
    faults = through_faults(records, next(iter(slo), "p99"))
    rows: list[list[str]] = []
    seen: set[str] = set()
    for c in found:
        knee = c.knee()
        row = [_title(c.figure), name(c.system),
               (f"{_rate(knee.offered)} offered, {_rate(knee.achieved)} done, p99 "
                f"{latency(knee.latencies['p99'])}{flag_marks(knee.flags - {'saturated'})}")
               if knee else f"none (not held at {_rate(c.ordered()[0].offered)})",
               _rate(c.closed_loop), _rate(c.ceiling)]
        seen.update(f for p in c.points.values() for f in p.flags if f in FLAGS)
        for percentile, target in slo.items():
            held = c.within(percentile, target)
            row.append(f"{_rate(held.offered)} ({percentile} {latency(held.latencies[percentile])})" if held
                       else f"none ({percentile} over {latency(target)} at {_rate(c.ordered()[0].offered)})")
        for percentile, target in list(slo.items())[:1] if faults else ():
            row.append(_through_text([t for t in faults if t.figure == c.figure and t.system == c.system],
                                     target))
        rows.append(row)
    columns = ["figure", "system", f"knee (held, p99 ≤ {KNEE_P99_FACTOR:g}× the lowest load's)",
               "closed-loop max", "path's ceiling"]
    columns += [f"highest load within {p} ≤ {latency(t)}" for p, t in slo.items()]
    columns += [f"through the fault ({p} ≤ {latency(t)})" for p, t in (list(slo.items())[:1] if faults else ())]
    notes = [f"a load is every client's offered I/Os per second together; 'held': not saturated [S]; the "
             f"knee is the highest offered load up to which every point from the lowest is held with a p99 "
             f"at most {KNEE_P99_FACTOR:g} times the lowest load's; 'within' an SLO likewise, with the "
             "percentile at or under its target (total latency, of every client's I/Os: their merged "
             "histograms)", "closed-loop max: the same figure run as fast as it can, where the run has it; "
             "path's ceiling: the network path's bound for its placement (B/s) in I/Os of its block size"]
    if slo and faults:
        notes.append("through the fault: the fixed offered load; 'held while down' where no whole second from "
                     "the injection to the restore had the clients' percentile above the target or no I/O "
                     "completed (a stall); then the seconds above it from the injection to healthy again")
    elif not slo:
        notes.append("no slo in the config: give one (slo: {p99: 20ms}) for the highest load within it")
    notes += flag_notes(seen)
    table = Table("Offered load: what each system holds", columns, rows, notes)
    table.chart = {"kind": "load", "slo": slo, "curves": [_curve_chart(c, slo, name) for c in found],
                   "faults": [_fault_chart(t, slo, name) for t in faults]}
    return [table]


def _through_text(mine: list[Through], target: float) -> str:
    if not mine:
        return "—"
    parts = []
    for t in mine:
        down, healthy = t.seconds_above(target, "restored"), t.seconds_above(target, "healthy")
        held = "held while down" if down and down[0] == 0 else "not held while down" if down else "?"
        parts.append(f"{_rate(t.offered)}: {held}; " + (f"{healthy[0]} of {healthy[1]} s above to healthy"
                                                       if healthy else "no seconds measured to healthy"))
    return "; ".join(parts)


def _curve_chart(c: Curve, slo: dict[str, float], name: Callable[[SystemKey], str]) -> dict[str, Any]:
    points = [p for p in c.ordered() if p.achieved is not None]
    return {"figure": _title(c.figure), "system": name(c.system),
            "x": [p.achieved for p in points], "offered": [p.offered for p in points],
            "p50": [p.latencies.get("p50") for p in points], "p99": [p.latencies.get("p99") for p in points],
            "held": [p.held for p in points], "closed_loop": c.closed_loop, "ceiling": c.ceiling,
            "knee": knee.offered if (knee := c.knee()) else None,
            "within": {p: held.offered for p, t in slo.items() if (held := c.within(p, t))}}


def _fault_chart(t: Through, slo: dict[str, float], name: Callable[[SystemKey], str]) -> dict[str, Any]:
    zero = float(t.fault.params["injected"])
    moments = {k: float(t.fault.params[k]) - zero for k in ("injected", "noticed", "restored", "healthy")
               if isinstance(t.fault.params.get(k), (int, float))}
    return {"figure": _title(t.figure), "system": name(t.system), "offered": t.offered,
            "percentile": t.percentile, "series": t.series, "stalled": t.stalled, "moments": moments,
            "target": slo.get(t.percentile), "fault": str(t.fault.params.get("fault", "")),
            "verdict": _through_text([t], slo[t.percentile]).split(": ", 1)[1] if t.percentile in slo else ""}


def summary_lines(table: Table) -> list[str]:
    """What the answer says of offered load: per figure, each system's knee, and the highest
    load it holds within each SLO, healthy and through the fault."""
    chart = table.chart or {}
    out = []
    for figure in dict.fromkeys(c["figure"] for c in chart.get("curves", ())):
        mine = [c for c in chart["curves"] if c["figure"] == figure]
        knees = ", ".join(f"{c['system']} {_rate(c['knee']) if c['knee'] else 'none held'}" for c in mine)
        out.append(f"{figure}: the most load each holds at a steady p99 (its knee) — {knees}")
        for percentile, target in (chart.get("slo") or {}).items():
            held = ", ".join(f"{c['system']} {_rate(c['within'].get(percentile)) if c['within'].get(percentile) else 'none'}"
                             for c in mine)
            out.append(f"{figure}: the most load each holds within {percentile} ≤ {latency(target)} — {held}")
        for f in chart.get("faults", ()):
            if f["figure"] == figure and f.get("verdict"):
                out.append(f"{figure}, {f['system']} at {_rate(f['offered'])} through {f['fault']}: {f['verdict']}")
    return out
