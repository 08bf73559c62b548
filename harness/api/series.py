"""Figures over time: a record's rate every second, a tool's own per-interval figures, a
node's resources between samples — and what a fault did to the clients' rate.

A :class:`Series` is points ``(t, value)``: ``t`` in seconds since the epoch on this
machine's clock (the clock of every record's ``started`` and ``ended``), the value in the
record's unit, holding from ``t`` until the next point's ``t`` (the last one's: until
``end``). Where it comes from is its ``source``:

- ``progress``: binned from a client's progress (:func:`per_second`);
- ``tool``: the tool's own per-second figures (rados bench's ``cur MB/s``, rbd bench's
  ``OPS/SEC``), put on this machine's clock;
- ``interval``: a figure of each of fio's ``--status-interval`` documents (a latency
  percentile of the completions in that interval);
- ``samples``: a node's use of a resource between two consecutive samples.
"""

from __future__ import annotations

import bisect
import math
import operator
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.api.parsing import CEILING, EARLIEST, LATEST

Points = tuple[tuple[float, float], ...]
SOURCES = ("progress", "tool", "interval", "samples")
# how far a kept series may reach past its record's interval (besides a per-second series'
# first point, at the start of the whole second that holds the record's start): the store
# rounds each point's time to the millisecond
SLACK_S = 1e-3
# within this share below the level before the fault (or above it), the rate is back to its level
BACK_WITHIN = 0.10


@dataclass(frozen=True)
class Series:
    points: Points
    end: float
    source: str
    begin: float | None = None  # where it starts covering, if after its first point's t

    @property
    def start(self) -> float:
        return self.points[0][0] if self.begin is None else max(self.begin, self.points[0][0])

    def spans(self) -> list[tuple[float, float, float]]:
        """Each point as (from, to, value): what of the clock it covers."""
        ends = [t for t, _ in self.points[1:]] + [self.end]
        return [(max(t, self.start), e, v) for (t, v), e in zip(self.points, ends)]

    def whole(self) -> list[tuple[float, float, float]]:
        """The spans that cover a whole second (or more)."""
        return [s for s in self.spans() if s[1] - s[0] >= 1.0 - 1e-6]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "begin": self.start, "end": self.end, "points": [list(p) for p in self.points]}


def per_second(progress: Iterable[tuple[float, float]]) -> Series | None:
    """The rate in each whole second ``[t, t+1)`` of the records' clock (``t`` a whole
    number of seconds since the epoch) that a client's progress covers: what it moved
    within that second — its cumulative amount taken as linear between two consecutive
    notes, so a gap between notes that spans several seconds is shared among them by the
    time each holds of it — per second of the clock. The first and the last second count
    what moved within them, over the whole second, so several clients' seconds add up to
    their aggregate. None where the progress has fewer than two notes or spans no time.

    The notes are taken as the client took them: one at a time not after the note before it
    (the clock stepped backwards), or saying less moved than it, is left out (what it
    counted is in the next note kept), as is one that is not a finite number."""
    notes = _in_order(progress)
    if len(notes) < 2:
        return None
    first, last = math.floor(notes[0][0]), notes[-1][0]
    points = []
    second = first
    while second < last:
        points.append((float(second), _amount_at(notes, second + 1) - _amount_at(notes, second)))
        second += 1
    return Series(tuple(points), last, "progress", notes[0][0])


def _in_order(progress: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The notes of a progress that move forward in time and amount (see :func:`per_second`)."""
    notes: list[tuple[float, float]] = []
    for t, a in progress:
        t, a = float(t), float(a)
        if math.isfinite(t) and math.isfinite(a) and (not notes or (t > notes[-1][0] and a >= notes[-1][1])):
            notes.append((t, a))
    return notes


def _amount_at(notes: list[tuple[float, float]], t: float) -> float:
    """The cumulative amount at ``t``: linear between notes; before the first note, its
    amount; after the last, the last's. (The note after ``t`` is found by bisection: an
    hour of notes a second is an hour of seconds, each looked up in it.)"""
    if t <= notes[0][0]:
        return notes[0][1]
    i = bisect.bisect_left(notes, t, key=lambda note: note[0])  # (the first note at or after t)
    if i == len(notes):
        return notes[-1][1]
    (t0, a0), (t1, a1) = notes[i - 1], notes[i]
    return a0 + (a1 - a0) * (t - t0) / (t1 - t0) if t1 > t0 else a1


def summed(series: Iterable[Series]) -> Series | None:
    """Per-second series of several clients added second by second (the aggregate's rate in
    each second: what they all moved in it); a second a client's series does not cover
    counts zero for it. None for no series, or series that are not per second.

    Seconds that no client's series covers (a gap between one client's end and another's
    start, however long) are two points of zero, at the gap's first and last second: what
    this holds grows with the clients' points, never with the time between them."""
    found = [s for s in series if s.source == "progress"]
    if not found:
        return None
    total: dict[float, float] = {}
    for s in found:
        for t, v in s.points:
            total[t] = total.get(t, 0.0) + v
    end = max(s.end for s in found)
    times = sorted(total)
    points = []
    for t, after in zip(times, [*times[1:], math.ceil(end)]):
        points.append((t, total[t]))
        if after > t + 1:  # (seconds no client covered)
            points += [(t + 1, 0.0)] + ([(float(after - 1), 0.0)] if after - 1 > t + 1 else [])
    return Series(tuple(points), end, "progress", min(s.start for s in found))


def flaw(s: Series, unit: str, started: Any = None, ended: Any = None) -> str:
    """'' for a series dfsbench keeps with a record of ``unit`` that ran from ``started`` to
    ``ended`` (its params; either not a number: no interval to hold it to), else what is
    wrong with it: its times and values are finite numbers, its points in time order, its
    begin not after its end nor any point after it, each value plausible in the record's
    unit (harness.api.parsing: as the record's own value), and its times on the records'
    clock within the record's interval — from the start of the whole second that holds
    ``started`` (a per-second series' first point) to ``ended``, within :data:`SLACK_S`."""
    if not s.points:
        return "it has no points"
    times = [t for t, _ in s.points]
    values = [v for _, v in s.points]
    why = _points_flaw(times, values, unit)
    if why:
        return why
    edges = [s.end, *(() if s.begin is None else (s.begin,))]
    if not all(map(math.isfinite, edges)):
        return "its begin or end is not a finite number"
    if any(map(operator.gt, times, times[1:])):
        at = next(i for i, (a, b) in enumerate(zip(times, times[1:])) if a > b)
        return f"its points are not in time order (t = {times[at + 1]:.3f} after {times[at]:.3f})"
    if s.start > s.end + SLACK_S or times[-1] > s.end + SLACK_S:
        return f"it ends ({s.end:.3f}) before it begins or before its last point"
    if s.end > LATEST:
        return f"its times ({times[0]:g} to {s.end:g}) are not seconds since the epoch on any clock"
    if _time(started) and _time(ended):
        if times[0] < started - 1 - SLACK_S or s.start < started - SLACK_S or s.end > ended + SLACK_S:
            return (f"it covers {s.start:.3f} to {s.end:.3f}, outside its record's interval "
                    f"({started:.3f} to {ended:.3f})")
    return ""


def kept(s: Series | None, unit: str, started: Any = None, ended: Any = None) -> Series | None:
    """What of a series a record keeps (what :func:`flaw` finds nothing wrong with): its
    points in time order, each finite and plausible — one at a time not after the point kept
    before it (the clock stepped backwards) is left out, and so is one that is not finite or
    not plausible in ``unit`` — and within the record's interval (see :func:`flaw`), its end
    at the record's end at the latest. None where no point is left."""
    if s is None:
        return None
    if _time(started) and _time(ended):
        if not EARLIEST <= started <= ended <= LATEST:  # (the clock stepped back between them: no time is within)
            return None
        first, low, high = started, max(started - 1 - SLACK_S / 2, EARLIEST), ended
    else:
        first, low, high = EARLIEST, EARLIEST, LATEST
    end = min(s.end, high) if math.isfinite(s.end) else high
    if end < first:  # (it ends before the record began)
        return None
    points: list[tuple[float, float]] = []
    for t, v in s.points:
        if not _points_flaw([t], [v], unit) and low <= t <= end and (not points or t > points[-1][0]):
            points.append((t, v))
    if not points:
        return None
    begin = s.start if math.isfinite(s.start) else points[0][0]
    return Series(tuple(points), end, s.source, min(max(begin, first, points[0][0]), end))


def _points_flaw(times: list[float], values: list[float], unit: str) -> str:
    """'' for points each of which a series of a record in ``unit`` may hold, else what is
    wrong with one: its time and value are finite, its time on the records' clock
    (:data:`~harness.api.parsing.EARLIEST` to :data:`~harness.api.parsing.LATEST`), its
    value plausible in ``unit`` (harness.api.parsing: as the record's own value) — the one
    rule of :func:`flaw` and :func:`kept` for a point."""
    if not all(map(math.isfinite, times)) or not all(map(math.isfinite, values)):
        return "a time or a value is not a finite number"
    if min(times) < EARLIEST or max(times) > LATEST:
        return f"its times ({min(times):g} to {max(times):g}) are not seconds since the epoch on any clock"
    lowest, highest, ceiling = min(values), max(values), CEILING.get(unit)
    if lowest < 0:
        return f"a value is negative ({lowest:g} {unit})"
    if ceiling is not None and highest > ceiling:
        return f"a value is beyond any storage ({highest:g} {unit}, over {ceiling:g})"
    return ""


def _time(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def percentile_of_bins(bins: dict[float, float], p: float) -> float | None:
    """The ``p``-th percentile of a histogram (value → count): the smallest value at or
    below which ``p`` % of the counts lie (fio's own rule for its percentiles of the same
    bins). None for an empty histogram."""
    total = sum(c for c in bins.values() if c > 0)
    if total <= 0:
        return None
    need = p / 100 * total
    seen = 0.0
    for value in sorted(bins):
        if bins[value] <= 0:
            continue
        seen += bins[value]
        if seen >= need - 1e-9:
            return value
    return max(v for v, c in bins.items() if c > 0)


def moving(series: list[Series]) -> tuple[float, float] | None:
    """While several clients moved: until the start of the last second in which the first
    of them to finish moved anything (every client moved in every whole second before), and
    until the end of the last such second of the last to finish. None for no series."""
    firsts, ends = [], []
    for s in series:
        last = [(t, e) for t, e, v in s.spans() if v > 0]
        firsts.append(last[-1][0] if last else s.start)
        ends.append(min(last[-1][1], s.end) if last else s.start)
    return (min(firsts), max(ends)) if ends else None


@dataclass(frozen=True)
class FaultFigures:
    """What the clients saw of a fault, from their aggregate rate every second: see
    :func:`fault_figures`. ``why`` says, per figure left out, why."""

    level: float | None
    lowest: float | None
    stall_s: float | None
    back_s: float | None
    closing_s: float | None
    why: dict[str, str]


def fault_figures(before: Series | None, during: Series | None, injected: float | None,
                  healthy: float | None, before_moving: tuple[float, float] | None = None,
                  during_moving: tuple[float, float] | None = None) -> FaultFigures:
    """Three figures of a fault from the clients' aggregate per-second rate (:func:`summed`),
    over the seconds the clients moved data (``*_moving``, from :func:`moving`: a rate of
    all of them only while all of them moved, as a stonewalled rate is; what comes after
    the last of them moved its last byte — the phase's closing fsync, or a stall that
    lasted to its end — is ``closing_s``, apart):

    - the level before the fault: the median of the ``before`` phase's per-second rates
      over the whole seconds in which every client moved (its first second, covered in
      part, and its tail, while some had finished, left out) — not of the ``during`` phase
      before the injection, which covers only ``after_s`` seconds, the first the start;
    - ``lowest``: the lowest rate in a whole second from the injection to healthy again
      (or to the end of the ``during`` phase, where healthy came later) in which every
      client moved or might have (up to the first client's last second of moving);
    - ``stall_s``: how long the clients moved nothing within that window, up to the last
      client's last second of moving: the time within seconds in which their aggregate
      moved nothing (a second holding the injection counts from the injection);
    - ``back_s``: from the injection to the start of the first whole second at or above
      the level less :data:`BACK_WITHIN` of it (within 10 % of the level, or above it: a
      GlusterFS client writes faster with a replica down, sending fewer copies) that
      follows the last whole second below that (of those that end after the injection,
      begin within the window, and end while every client moved) — so a dip that
      recovers before healthy is back at its recovery, not at healthy; 0 where no second
      fell below; None where no second at the level followed, or no whole second after
      the injection was measured;
    - ``closing_s``: from the last client's last second of moving to the end of the
      ``during`` phase, where that is within the fault's window.
    """
    why: dict[str, str] = {}
    level = None
    b_all = before_moving[0] if before_moving else math.inf
    steady = [v for _, e, v in before.whole() if e <= b_all + 1e-6] if before is not None else []
    if not steady:
        why["level"] = "the phase before the fault has no whole second in which every client moved"
    else:
        level = statistics.median(steady)
    if during is None or injected is None:
        reason = "no fault was injected" if injected is None else "the clients reported no rate over time"
        return FaultFigures(level, None, None, None, None,
                            {**why, "lowest": reason, "stall": reason, "back": reason})
    until_all, until_any = during_moving or (during.end, during.end)
    window = min(healthy, during.end) if healthy is not None else during.end
    end = min(window, until_any)
    closing = max(0.0, window - max(until_any, injected)) if until_any < during.end else 0.0
    inside = [(t, e, v) for t, e, v in during.spans() if e > injected and t < end]
    whole = [v for t, e, v in inside if t >= injected and e <= min(end, until_all) + 1e-6 and e - t >= 1.0 - 1e-6]
    lowest = min(whole) if whole else None
    if lowest is None:
        why["lowest"] = "the fault's window holds no whole second in which every client moved"
    stall = sum(min(e, end) - max(t, injected) for t, e, v in inside if v == 0) if inside else 0.0
    back = None
    if level is None:
        why["back"] = why["level"]
    else:
        floor = (1 - BACK_WITHIN) * level
        seconds = [(t, v) for t, e, v in during.whole() if e > injected and e <= until_all + 1e-6]
        out = [i for i, (t, v) in enumerate(seconds) if v < floor and t < end]
        if not any(injected <= t < end for t, _ in seconds):  # (nothing measured after the injection: not "back at once")
            why["back"] = "no whole second after the injection in which every client moved"
        elif not out:
            back = 0.0
        else:
            back = next((max(0.0, t - injected) for t, v in seconds[out[-1] + 1:] if v >= floor), None)
        if back is None and "back" not in why:
            why["back"] = (f"the rate was not back within {BACK_WITHIN:.0%} of its level before the fault while "
                           "the clients moved")
    return FaultFigures(level, lowest, stall, back, closing, why)
