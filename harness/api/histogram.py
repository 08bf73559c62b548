"""Latency histograms: what a percentile over several clients is made of.

A percentile cannot be added or averaged: the 99th percentile of two clients is not the
mean of their 99th percentiles (one client at 1 ms and one at 100 ms have a mean p99 of
50 ms, while the p99 of all their I/Os is 100 ms). It is the percentile of their merged
histograms. A :class:`Histogram` is how many operations took each latency, in the
bins of the tool that counted them (fio's ``json+`` bins: one binning for every fio, so two
clients' histograms add up bin by bin), for the whole record and for each interval between
two of the tool's reports.

A record carries its histogram beside it, not in it: the store keeps the percentile
(and the raw output the bins); what uses the histogram is the aggregate over clients, made
in the same run (``harness.execution.together``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.api.series import Series, percentile_of_bins

Bins = Mapping[float, float]  # latency (s) -> how many operations took it
# the percentiles of a latency records carry (lat_p50 … lat_p99.9), which an SLO can name
SLO_PERCENTILES = ("p50", "p90", "p99", "p99.9")

# a metric that is a percentile of a latency: ``lat_p99``, ``clat_p99.9``
_PERCENTILE = re.compile(r"_p(\d{1,2}(?:\.\d{1,6})?)$")


@dataclass(frozen=True)
class Histogram:
    """``bins``: the whole record's operations; ``intervals``: those that completed in each
    interval between two consecutive reports of the tool, as (start, end, bins) on this
    machine's clock (the records' clock)."""

    bins: Bins
    intervals: tuple[tuple[float, float, Bins], ...] = ()


def percentile_of(metric: str) -> float | None:
    """Which percentile a metric is (``lat_p99.9``: 99.9), or None."""
    found = _PERCENTILE.search(metric)
    if found is None:
        return None
    p = float(found.group(1))
    return p if 0 < p < 100 else None


def merged(each: Iterable[Bins]) -> dict[float, float]:
    """Several histograms of one binning as one: each bin's counts added."""
    out: dict[float, float] = {}
    for bins in each:
        for value, count in bins.items():
            out[value] = out.get(value, 0.0) + count
    return out


def per_second(histograms: Iterable[Histogram], p: float) -> tuple[Series | None, list[float]]:
    """The ``p``-th percentile of the operations every histogram's intervals hold, second
    by second of the records' clock: an interval's counts are shared among the whole seconds
    it overlaps, each its part of the interval (the tool's reports are about a second apart,
    never on the second), and the parts of one second (of every client) merged before the
    percentile is taken. Also the whole seconds in which no operation completed at all: an
    interval overlaps them and none that does holds an operation (a stall: there is no
    latency to show for them, and yet every operation waiting then took longer than the
    second).

    (None, []) where no histogram has an interval with an operation."""
    seconds: dict[float, dict[float, float]] = {}
    covered: set[float] = set()
    end = -math.inf
    for h in histograms:
        for start, stop, bins in h.intervals:
            if not stop > start or stop - start > 3600:  # (no interval of a tool's reports is an hour)
                continue
            end = max(end, stop)
            full = any(c > 0 for c in bins.values())
            for second in range(math.floor(start), math.ceil(stop)):
                share = (min(stop, second + 1) - max(start, second)) / (stop - start)
                if share <= 0:
                    continue
                covered.add(float(second))
                if full:
                    into = seconds.setdefault(float(second), {})
                    for latency, count in bins.items():
                        into[latency] = into.get(latency, 0.0) + count * share
    points = []
    for t in sorted(seconds):
        value = percentile_of_bins(seconds[t], p)
        if value is not None:
            points.append((t, value))
    if not points:
        return None, []
    stalled = sorted(s for s in covered if s not in seconds)
    return Series(tuple(points), max(end, points[-1][0] + 1), "interval", min(covered)), stalled
