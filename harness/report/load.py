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
  has a p99 at most :data:`KNEE_P99_FACTOR` times the lowest point's p99 (a point without a
  p99 ends the walk too, and says so).
- **within the SLO**: the highest offered load up to which every point, from the lowest, is
  held and has the SLO's percentile at or under its target.
- what **stopped** either walk: the first point from the lowest that broke its rule, with its
  figure (where that is the lowest point, there is no knee, or none within the SLO);
- **n per point**: how many measurements a point's latency is the median of (one per repeat
  of its cell, of each run shown; each of every client's I/Os together).
- **through a fault** (a load cell run through a fault): the whole seconds of the records'
  clock whose middle falls from the injection to the restore (while down) or to healthy
  again. Each is above the SLO where the clients' percentile in it (of their merged
  histograms) is above the target, or where no client completed any I/O in it (a stall: the
  I/Os waiting then took over a second); not known where no client's figures cover it (a
  second at the edge that only some clients' reports cover is read from theirs). The load is
  **held while the node was down** where every second while down is known and none is
  above, and its pass did not fall behind the offered load [S].

A point, a curve and a fault's figure each stand for one number of clients: a sweep over
``clients`` makes a curve per number.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.api.faults import FAULT
from harness.api.histogram import SLO_PERCENTILES
from harness.api.records import (CIRCUMSTANTIAL, FLAGS, OFFERED_LOAD, OVER_CLIENTS, Measurement, describe_cell,
                                  flag_marks, flag_notes)
from harness.report import cells, data
from harness.report.faults import ABOUT as FAULT_ABOUT, from_injection
from harness.report.verdicts import SystemKey, Table
from harness.results.schema import RunInfo
from harness.units import latency, parse_latency

OFFERED = OFFERED_LOAD
POINT = ("offered_iops", "offered_fraction")  # what names a cell's point of offered load
KNEE_P99_FACTOR = 2.0
LATENCY = "lat_p"  # the total latency's percentiles (submission + completion)
# what a point's record carries that does not set its figure apart
_NOT_FIGURE = CIRCUMSTANTIAL | {"host", *POINT, "phase", "offered_by"}
MOMENTS = ("injected", "noticed", "restored", "healthy")


def _number(v: Any) -> float | None:
    """A stored param as a finite number, or None (a store is not trusted: a string, a
    yes/no, NaN or infinity is no number)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def slo_of(infos: dict[str, RunInfo]) -> dict[str, float]:
    """The latency targets of the runs' configs (``{"p99": 0.02}``), the first run's where
    two name one percentile; a value that is not a latency is left out."""
    found: dict[str, float] = {}
    for info in infos.values():
        slo = info.config.get("slo") if isinstance(info.config, dict) else None
        for key, value in (slo.items() if isinstance(slo, dict) else ()):
            if key not in SLO_PERCENTILES:  # (a stored config is not trusted: no percentile measured)
                continue
            try:
                found.setdefault(str(key), parse_latency(value))
            except (ValueError, TypeError):
                continue
    return found


@dataclass
class Point:
    offered: float  # I/Os per second, every client's together
    achieved: float | None = None
    latencies: dict[str, float] = field(default_factory=dict)  # 'p99' -> s
    held: bool = True
    flags: set[str] = field(default_factory=set)
    n: dict[str, int] = field(default_factory=dict)  # 'p99' -> how many measurements its median is of


@dataclass
class Curve:
    """One figure's points on one system, by offered load."""

    figure: str
    system: SystemKey
    points: dict[tuple[str, float], Point] = field(default_factory=dict)  # by the cell's rate or share
    closed_loop: float | None = None  # the same figure's rate run as fast as it can (op/s): the median
    closed_loops: tuple[float, ...] = ()  # each time it was measured (a share's: before each point)
    ceiling: float | None = None  # the path's ceiling in I/Os per second

    def ordered(self) -> list[Point]:
        return sorted(self.points.values(), key=lambda p: p.offered)

    def knee(self) -> tuple[Point | None, str]:
        """See the module: the knee (None where the lowest point is not held already), and
        what stopped the walk where it did."""
        last, stop = self.knee_stop()
        return last, stop.text

    def knee_stop(self) -> tuple[Point | None, Stop]:
        """The knee, and where and why the walk stopped (:class:`Stop`)."""
        points = self.ordered()
        base = points[0].latencies.get("p99") if points else None
        return self._walk(lambda p: None if base is None else KNEE_P99_FACTOR * base, "p99",
                          "" if base is None else f"{KNEE_P99_FACTOR:g} × the lowest load's {latency(base)}")

    def within(self, percentile: str, target: float) -> tuple[Point | None, str]:
        last, stop = self.within_stop(percentile, target)
        return last, stop.text

    def within_stop(self, percentile: str, target: float) -> tuple[Point | None, Stop]:
        return self._walk(lambda p: target, percentile, f"SLO {latency(target)}")

    def _walk(self, bound: Callable[[Point], float | None], percentile: str, most: str) -> tuple[Point | None, Stop]:
        last = None
        for p in self.ordered():
            value, limit = p.latencies.get(percentile), bound(p)
            why = ("saturated" if not p.held else f"no {percentile} measured" if value is None or limit is None
                   else f"{percentile} {latency(value)} > {most}" if value > limit else "")
            if why:  # (with the point's flags: a client's write buffer [W] says why as well)
                at = _rate(p.offered) if last is not None else f"the lowest load, {_rate(p.offered)}"
                return last, Stop(why, p, f"stopped at {at}{flag_marks(p.flags & set(FLAGS))}: {why}")
            last = p
        return last, Stop("", None, "held at every load offered")

    def rests_on(self, percentiles: tuple[str, ...]) -> str:
        """n per point (see the module) of ``percentiles``: one number, or the fewest and the
        most where the points differ."""
        found = sorted({p.n[q] for p in self.points.values() for q in percentiles if q in p.n})
        if not found:
            return "—"
        return f"{found[0]}" if found[0] == found[-1] else f"{found[0]}–{found[-1]}"


@dataclass(frozen=True)
class Stop:
    """Where a walk up a curve from its lowest load stopped: at the point ``at`` (None where
    every load offered was held within the bound), and ``why`` ('saturated', 'no p99
    measured', 'p99 41.0 ms > SLO 20.0 ms'); ``text`` says both, as the table does."""

    why: str
    at: Point | None
    text: str


def _figure(m: Measurement) -> str:
    rest = {k: v for k, v in m.params.items() if k not in _NOT_FIGURE and k != "direction" and k != "profile"}
    return json.dumps([m.workload, m.test, m.params.get("direction"), rest], sort_keys=True, default=str)


def _title(figure: str) -> str:
    workload, test, direction, rest = json.loads(figure)
    clients = rest.get("clients") if isinstance(rest, dict) else None
    return f"{workload} {test} {direction or ''}".strip() + (f" ({clients} clients)" if isinstance(clients, int)
                                                             and clients > 1 else "")


def _offered_by(m: Measurement) -> int:
    """How many client hosts offered a record's load: the tool's own count where it gives
    one (fio's servers: ``offered_by``), else the clients it stands for (one where it does
    not say)."""
    for key in ("offered_by", "clients"):
        v = m.params.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 1


def _whole(m: Measurement) -> bool:
    """A record that stands for every client of its cell: the aggregate (ours or the tool's),
    or the one client's."""
    host = m.params.get("host")
    return host is None or host in OVER_CLIENTS or m.params.get("clients") == 1


def _point(m: Measurement) -> tuple[str, float] | None:
    """The cell's point of offered load a record is of: its rate, or its share of the most."""
    for key in POINT:
        v = _number(m.params.get(key))
        if v is not None:
            return key, v
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
        if at is None:
            if m.metric == "iops" and OFFERED not in m.params:  # (closed loop: as fast as it can)
                closed.setdefault((figure, system), []).append(m.value)
            continue
        offered = _number(m.params.get(OFFERED))
        if offered is None:
            continue
        key = (figure, system, at)
        mine = values.setdefault(key, {})
        mine.setdefault(m.metric, []).append(m.value)
        if m.metric == "iops":
            mine.setdefault("offered", []).append(offered * _offered_by(m))
            most = _number(m.params.get("max_iops_per_client"))  # (a share's: the most, measured in its cell)
            if most is not None:
                closed.setdefault((figure, system), []).append(most * _offered_by(m))
        flags.setdefault(key, set()).update(m.flags)
        bs, ceiling = m.params.get("bs"), _number(m.params.get("ceiling"))
        if m.metric == "throughput" and ceiling is not None and isinstance(bs, int) and not isinstance(bs, bool) \
                and bs > 0:
            ceilings.setdefault((figure, system), []).append(ceiling / bs)
    found: dict[tuple[str, SystemKey], Curve] = {}
    for (figure, system, at), metrics in values.items():
        if not metrics.get("offered"):
            continue
        curve = found.setdefault((figure, system), Curve(figure, system))
        point = Point(statistics.median(metrics["offered"]), flags=flags[(figure, system, at)])
        point.held = "saturated" not in point.flags
        if metrics.get("iops"):
            point.achieved = statistics.median(metrics["iops"])
        for metric, got in metrics.items():
            if metric.startswith(LATENCY):
                point.latencies[metric[len(LATENCY) - 1:]] = statistics.median(got)
                point.n[metric[len(LATENCY) - 1:]] = len(got)
        curve.points[at] = point
    for (figure, system), curve in found.items():
        if closed.get((figure, system)):
            curve.closed_loops = tuple(sorted(closed[(figure, system)]))
            curve.closed_loop = statistics.median(curve.closed_loops)
        if ceilings.get((figure, system)):
            curve.ceiling = min(ceilings[(figure, system)])
    return [c for c in found.values() if any(p.achieved is not None for p in c.points.values())]


@dataclass(frozen=True)
class Tally:
    """Whole seconds of a window: above the SLO, within it, and not known (not covered)."""

    above: int
    within: int
    unknown: int

    @property
    def seconds(self) -> int:
        return self.above + self.within + self.unknown


@dataclass
class Through:
    """A load cell's fault, as its clients' tail latency saw it (times on the records' clock)."""

    system: SystemKey
    figure: str
    offered: float
    fault: Measurement
    series: list[tuple[float, float]]  # (a whole second, the percentile of the I/Os completed in it)
    stalled: list[float]  # whole seconds in which nothing completed
    percentile: str
    behind: bool = False  # its 'during' pass fell behind the offered load [S]

    def moments(self) -> dict[str, float]:
        return {k: v for k in MOMENTS if (v := _number(self.fault.params.get(k))) is not None}

    def seconds_above(self, target: float, until: str = "healthy") -> Tally | None:
        """The whole seconds whose middle falls from the injection to ``until`` (the restore,
        or healthy again): above ``target`` (or stalled), within it, not known. None where
        the fault's record does not say both times."""
        at = self.moments()
        if "injected" not in at or until not in at or at[until] < at["injected"]:
            return None
        first, last = math.ceil(at["injected"] - 0.5), math.ceil(at[until] - 0.5)  # (seconds [first, last))
        values = {t: v for t, v in self.series if _number(v) is not None}  # (not a number: not known)
        stalls = set(self.stalled)
        above = within = 0
        for second in stalls | set(values):  # (what was measured; the rest of the window is not known —
            if not first <= second < last or second != math.floor(second):  # counted, not walked: a stored
                continue  # time may be anything; one not on a whole second is none of the window's seconds)
            if second in stalls or values[second] > target:
                above += 1
            else:
                within += 1
        return Tally(above, within, max(0, last - first) - above - within)

    def held(self, target: float) -> tuple[bool | None, str]:
        """Whether the load was held while the node was down (None: not known, or no figure),
        and what the table says of it."""
        down = self.seconds_above(target, "restored")
        if down is None:
            return None, "no figure (the fault's record does not say when it was done and undone)"
        if down.seconds == 0:
            return None, "too short to tell (no whole second while down)"
        if down.above:
            return False, "not held while down"
        if down.unknown:
            return None, f"not known while down ({down.unknown} of {down.seconds} s not measured)"
        if self.behind:  # (what completed was fast, and yet not all that was offered did)
            return False, "not held while down (the pass fell behind the offered load [S])"
        return True, "held while down"

    def verdict(self, target: float) -> str:
        held = self.held(target)[1]
        if self.seconds_above(target, "restored") is None:
            return held
        healthy = self.seconds_above(target, "healthy")
        if healthy is None:
            return f"{held}; never healthy again while it was watched"
        return (f"{held}; {healthy.above} of {healthy.seconds} s above it to healthy"
                + (f" ({healthy.unknown} s not measured)" if healthy.unknown else ""))


def _stalled(v: Any) -> list[float]:
    return sorted(t for x in v if (t := _number(x)) is not None) if isinstance(v, list) else []


def through_faults(records: list[Measurement], percentile: str = "p99") -> list[Through]:
    """Each fault of a cell of offered load, per direction of its 'during' pass (the one
    it was injected in), with the per-second ``percentile`` of the latency of every client's
    I/Os; one with no figure (an empty ``figure``) where its clients gave no such figure:
    every second is then not known."""
    out = []
    metric = f"lat_{percentile}"
    for f in records:
        injected = _number(f.params.get("injected"))
        if f.workload != FAULT or injected is None or not any(k in f.params for k in POINT):
            continue
        found = [m for m in records if _during(m, f, injected) and m.metric == metric]
        if not found:
            out.append(Through((f.backend, f.variant), "", 0.0, f, [], [], percentile))
        for m in found:
            figure = _figure(m)
            behind = any("saturated" in r.flags for r in records
                         if _during(r, f, injected) and r.metric == "iops" and _figure(r) == figure)
            points = list(m.series.points) if m.series is not None else []
            out.append(Through((m.backend, m.variant), figure, float(m.params[OFFERED]) * _offered_by(m), f, points,
                               _stalled(m.params.get("stalled_s")), percentile, behind))
    return out


def _during(m: Measurement, f: Measurement, injected: float) -> bool:
    """A record of the 'during' pass of fault ``f``'s cell that stands for all its clients:
    of its cell (:mod:`harness.report.cells`: its run, system, repeat, workload entry and
    point of load), and run while it was injected."""
    started, ended = _number(m.params.get("started")), _number(m.params.get("ended"))
    return m.workload == f.params.get("for") and cells.cell_of(m) == cells.cell_of(f) \
        and m.params.get("phase") == "during" and _whole(m) and _number(m.params.get(OFFERED)) is not None \
        and started is not None and ended is not None and started <= injected <= ended


def needs_series(records: list[Measurement]) -> bool:
    """Whether the records hold a fault of a cell of offered load, whose seconds above an
    SLO are read from its clients' latency every second."""
    return any(m.workload == FAULT and any(k in m.params for k in POINT) for m in records)


def _closed_loop(c: Curve) -> str:
    """The closed-loop maximum as measured: once, its figure; several times, their median and
    range (the points of a share are shares of each its own)."""
    if len(c.closed_loops) < 2:
        return _rate(c.closed_loop)
    return (f"{_rate(c.closed_loop)} (median of {len(c.closed_loops)}: {_rate(c.closed_loops[0])}–"
            f"{_rate(c.closed_loops[-1])})")


def _rate(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f} op/s"


NO_CURVE = "no point of offered load measured but through the fault"


def tables(records: list[Measurement], slo: dict[str, float], name: Callable[[SystemKey], str]) -> list[Table]:
    """The table of what each system holds (per figure: its knee, its highest load within
    each SLO, n per point, the closed-loop maximum and the path's ceiling, and what the
    fault did), with the response curves and the tail through each fault as its charts. A
    fault's figure without a response curve (its profile not swept, or swept otherwise) has
    a row of its own: what the fault did, and no knee."""
    found = curves(records)
    faults = through_faults(records, next(iter(slo), "p99"))
    if not found and not faults:
        return []
    through = list(slo.items())[:1] if faults else []
    rows: list[list[str]] = []
    found_data: list[dict[str, Any]] = []  # (each row as data: harness.report.data)
    seen: set[str] = set()

    def verdicts(figure: str, system: SystemKey) -> list[str]:
        mine = [t for t in faults if t.figure == figure and t.system == system]
        return ["; ".join(f"{_rate(t.offered)}: {t.verdict(target)}" for t in mine) or "—" for _, target in through]

    for c in found:
        knee, why = c.knee()
        row = [_title(c.figure), name(c.system),
               (f"{_rate(knee.offered)} offered, {_rate(knee.achieved)} done, p99 "
                f"{latency(knee.latencies['p99'])}{flag_marks(knee.flags & set(FLAGS) - {'saturated'})} ({why})")
               if knee else f"none ({why})", c.rests_on(("p99", *slo)), _closed_loop(c), _rate(c.ceiling)]
        seen.update(f for p in c.points.values() for f in p.flags if f in FLAGS)
        for percentile, target in slo.items():
            held, why = c.within(percentile, target)
            row.append(f"{_rate(held.offered)} ({percentile} {latency(held.latencies[percentile])}"
                       f"{flag_marks(held.flags & set(FLAGS))}; {why})" if held else f"none ({why})")
        rows.append(row + verdicts(c.figure, c.system))
        found_data.append(_row_data(c, rows[-1], slo, faults))
    swept = {(c.figure, c.system) for c in found}
    for figure, system in dict.fromkeys((t.figure, t.system) for t in faults if t.figure):
        if (figure, system) not in swept:  # (a fault at a fixed load is a row whether or not its figure has a curve)
            rows.append([_title(figure), name(system), f"— ({NO_CURVE})", "—", "—", "—",
                         *(f"— ({NO_CURVE})" for _ in slo), *verdicts(figure, system)])
            found_data.append(_fault_row_data(figure, system, rows[-1], slo, faults))
    columns = ["figure", "system", f"knee (held, p99 ≤ {KNEE_P99_FACTOR:g}× the lowest load's)", "n per point",
               "closed-loop max", "path's ceiling"]
    columns += [f"highest load within {p} ≤ {latency(t)}" for p, t in slo.items()]
    columns += [f"through the fault ({p} ≤ {latency(t)})" for p, t in through]
    notes = [f"a load is every client's offered operations (fio's I/Os, S3 requests) per second together; 'held': not saturated [S]; the "
             f"knee is the highest offered load up to which every point from the lowest is held with a p99 "
             f"at most {KNEE_P99_FACTOR:g} times the lowest load's; 'within' an SLO likewise, with the percentile "
             "at or under its target (total latency, of every client's operations: their merged histograms); in "
             "brackets: what stopped it, the first point from the lowest that broke the rule, with its figure "
             "(where that is the lowest load, there is none)",
             "n per point: how many measurements each point's latency is the median of (one per repeat of its "
             "cell, of each run shown; each of every client's operations together), the fewest–the most where the "
             "points differ",
             "closed-loop max: the same figure run as fast as it can, where the run has it (measured several "
             "times — before each point of a fraction_of_max load —: the median, and the lowest and highest); "
             "path's ceiling: the network path's bound for its placement (B/s) in I/Os of its block size"]
    if slo and faults:
        notes.append("through the fault: at the fixed offered load, the whole seconds whose middle falls from the "
                     "injection to the restore: 'held while down' where each had the clients' percentile at or "
                     "under the target (a second in which no I/O completed, a stall, is above it; one no "
                     "client's figures cover is not known) and the pass did not fall behind the offered load "
                     "[S]; then the seconds above it from the injection "
                     "to healthy again")
    elif not slo:
        notes.append("no slo in the config: give one (slo: {p99: 20ms}) for the highest load within it"
                     + (" and what each fault did to the tail" if faults else ""))
    for t in faults:
        if not t.figure:
            notes.append(f"{name(t.system)}: {t.fault.params.get('fault')} in {t.fault.params.get('for')} "
                         f"{describe_cell(t.fault.params, FAULT_ABOUT)}: no latency every second in its 'during' pass "
                         "for every client; what it did to the tail is not known")
    notes += flag_notes(seen)
    keys = ["figure", "system", "knee", "n_per_point", "closed_loop_max", "ceiling", *(f"within_{p}" for p in slo),
            *(["through_fault"] if through else [])]
    table = Table("Offered load: what each system holds", columns, rows, notes, name="load", keys=keys,
                  data=found_data)
    table.chart = {"kind": "load", "slo": slo, "curves": [_curve_chart(c, slo, name) for c in found],
                   "faults": [_fault_chart(t, slo, name) for t in faults if t.figure]}
    return [table]


def _point_data(p: Point | None, percentile: str, text: str, stop: Stop, less: set[str]) -> dict[str, Any]:
    """The load a walk reached (None: the walk stopped at the lowest), with its figures and
    flags (but ``less``), and what stopped the walk; ``text`` as the table says it."""
    stopped = {"why": stop.why or None, "at": data.figure(stop.at.offered, "op/s") if stop.at else None,
               "flags": data.flags(stop.at.flags) if stop.at else [], "text": stop.text}
    if p is None:
        return data.figure(None, "op/s", stop.text, stopped=stopped, text=text)
    out = data.figure(p.offered, "op/s", achieved=data.figure(p.achieved, "op/s", "not measured"))
    out[percentile] = data.figure(p.latencies.get(percentile), "s", "not measured")
    return {**out, "flags": data.flags(p.flags - less), "stopped": stopped, "text": text}


def _tally(t: Tally | None) -> dict[str, Any] | None:
    return None if t is None else {k: data.figure(getattr(t, k), "s") for k in ("above", "within", "unknown", "seconds")}


def _through_data(figure: str, system: SystemKey, slo: dict[str, float], faults: list[Through]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for percentile, target in list(slo.items())[:1] if faults else ():
        out["through_fault"] = [
            {"offered": data.figure(t.offered, "op/s"), "fault": str(t.fault.params.get("fault", "")),
             "percentile": percentile, "target": data.figure(target, "s"), "held_while_down": t.held(target)[0],
             "fell_behind": t.behind, "while_down": _tally(t.seconds_above(target, "restored")),
             "to_healthy": _tally(t.seconds_above(target, "healthy")), "text": t.verdict(target)}
            for t in faults if t.figure == figure and t.system == system]
    return out


def _of(figure: str) -> dict[str, Any]:
    workload, test, direction, rest = json.loads(figure)
    return {"workload": workload, "test": test, "direction": direction, "params": rest}


def _row_data(c: Curve, row: list[str], slo: dict[str, float], faults: list[Through]) -> dict[str, Any]:
    """A row of the load table as data (harness.report.data): each load in op/s (every
    client's together), each latency in s, and what stopped each walk up the curve."""
    knee, stop = c.knee_stop()
    out: dict[str, Any] = {
        "figure": row[0], "system": row[1], "backend": c.system[0], "variant": c.system[1], "of": _of(c.figure),
        "knee": _point_data(knee, "p99", row[2], stop, {"saturated"}),
        "n_per_point": {"text": row[3], "n": sorted({n for p in c.points.values() for n in p.n.values()})},
        "closed_loop_max": data.figure(c.closed_loop, "op/s", "not measured", text=row[4],
                                       measured=[data.figure(v, "op/s") for v in c.closed_loops]),
        "ceiling": data.figure(c.ceiling, "op/s", "no ceiling known", text=row[5])}
    for i, (percentile, target) in enumerate(slo.items()):
        held, stop = c.within_stop(percentile, target)
        out[f"within_{percentile}"] = {**_point_data(held, percentile, row[6 + i], stop, set()),
                                       "percentile": percentile, "target": data.figure(target, "s")}
    return {**out, **_through_data(c.figure, c.system, slo, faults)}


def _fault_row_data(figure: str, system: SystemKey, row: list[str], slo: dict[str, float],
                    faults: list[Through]) -> dict[str, Any]:
    """A row of a fault's figure without a response curve, as data: what the fault did."""
    none = data.figure(None, "op/s", NO_CURVE)
    return {"figure": row[0], "system": row[1], "backend": system[0], "variant": system[1], "of": _of(figure),
            "knee": none, "n_per_point": {"text": row[3], "n": []}, "closed_loop_max": none, "ceiling": none,
            **{f"within_{p}": {**none, "percentile": p, "target": data.figure(t, "s")} for p, t in slo.items()},
            **_through_data(figure, system, slo, faults)}


def _curve_chart(c: Curve, slo: dict[str, float], name: Callable[[SystemKey], str]) -> dict[str, Any]:
    points = [p for p in c.ordered() if p.achieved is not None]
    return {"figure": _title(c.figure), "system": name(c.system),
            "x": [p.achieved for p in points], "offered": [p.offered for p in points],
            "p50": [p.latencies.get("p50") for p in points], "p99": [p.latencies.get("p99") for p in points],
            "held": [p.held for p in points], "closed_loop": c.closed_loop, "ceiling": c.ceiling,
            "knee": knee.offered if (knee := c.knee()[0]) else None,
            "knee_flags": flag_marks(knee.flags & set(FLAGS) - {"saturated"}) if knee else "",
            "knee_stopped": c.knee()[1], "n": c.rests_on(("p99", *slo)),
            "within_stopped": {p: c.within(p, t)[1] for p, t in slo.items()},
            "within": {p: held.offered for p, t in slo.items() if (held := c.within(p, t)[0])},
            "within_flags": {p: flag_marks(held.flags & set(FLAGS)) for p, t in slo.items()
                             if (held := c.within(p, t)[0])}}


def _fault_chart(t: Through, slo: dict[str, float], name: Callable[[SystemKey], str]) -> dict[str, Any]:
    """The percentile every second, in seconds from the injection, a stall as a gap (None)."""
    moments = t.moments()
    zero = moments["injected"]
    points = sorted([(s, v) for s, v in t.series] + [(s, None) for s in t.stalled if s not in dict(t.series)])
    return {"figure": _title(t.figure), "system": name(t.system), "offered": t.offered,
            "percentile": t.percentile, "series": [(s + 0.5 - zero, v) for s, v in points],
            "stalled": [s + 0.5 - zero for s in t.stalled], "moments": {k: v - zero for k, v in moments.items()},
            "target": slo.get(t.percentile), "fault": from_injection(t.fault.params),
            "verdict": t.verdict(slo[t.percentile]) if t.percentile in slo else ""}


def summary_lines(table: Table, first: str | None = None) -> list[str]:
    """What the answer says of offered load: per figure, each system's knee, and the highest
    load it holds within each SLO (each with n per point and what stopped it), healthy and
    through the fault; a fault's figure without a curve, what the fault did. ``first``: the
    reference system's name, named first on every line (as every other line of the answer
    names it)."""
    chart = table.chart or {}
    out = []

    def rests(c: dict[str, Any], stopped: str) -> str:
        return f" (n={c.get('n', '—')} per point; {stopped})" if stopped else ""

    def knee(c: dict[str, Any]) -> str:
        held = _rate(c["knee"]) + c.get("knee_flags", "") if c["knee"] else "none held"
        return f"{c['system']} {held}{rests(c, c.get('knee_stopped', ''))}"

    def within(c: dict[str, Any], percentile: str) -> str:
        most = c["within"].get(percentile)
        held = _rate(most) + c.get("within_flags", {}).get(percentile, "") if most else "none"
        return f"{c['system']} {held}{rests(c, c.get('within_stopped', {}).get(percentile, ''))}"

    for figure in dict.fromkeys([c["figure"] for c in chart.get("curves", ())]
                                + [f["figure"] for f in chart.get("faults", ())]):
        mine = sorted((c for c in chart.get("curves", ()) if c["figure"] == figure),
                      key=lambda c: c["system"] != first)  # (stable: the rest as recorded)
        if mine:
            out.append(f"{figure}: the most load each holds at a steady p99 (its knee) — "
                       + ", ".join(knee(c) for c in mine))
        for percentile, target in (chart.get("slo") or {}).items() if mine else ():
            out.append(f"{figure}: the most load each holds within {percentile} ≤ {latency(target)} — "
                       + ", ".join(within(c, percentile) for c in mine))
        for f in sorted(chart.get("faults", ()), key=lambda f: f["system"] != first):
            if f["figure"] == figure and f.get("verdict"):
                out.append(f"{figure}, {f['system']} at {_rate(f['offered'])} through {f['fault']}: {f['verdict']}")
    return out
