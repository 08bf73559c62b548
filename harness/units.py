"""Sizes, rates and durations as a person reads them; byte sizes as config accepts them."""

from __future__ import annotations

import math
import statistics
import re
import time
from collections.abc import Callable, Iterable

# (ASCII digits and blanks only: Python's \d, int() and float() also take '１' and '٣', and
# \s and $ a line break; a number in a config is written in ASCII, on one line)
_SIZE = re.compile(r" *([0-9]+(?:\.[0-9]+)?) *([kmgtp]?)(i?)b? *", re.IGNORECASE | re.ASCII)
# the same texts for a JSON Schema, whose patterns have no flags (tests/unit/test_reference.py
# holds each to its compiled twin)
# ('$(?!\n)': the end of the text, where a pattern is read by Python's rules too, whose '$' also
# matches before a last line break)
SIZE_PATTERN = r"^ *[0-9]+(\.[0-9]+)? *[KkMmGgTtPp]?[Ii]?[Bb]? *$(?!\n)"


def _shown(text: str) -> str:
    """A user's text in an error: control characters escaped, cut at 40 characters."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def parse_size(text: str | int) -> int:
    """'40KiB' -> 40960, '1G' -> 2**30, '210MB' -> 210*10**6, 4096 -> 4096."""
    if isinstance(text, int):
        return text
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"'{_shown(text)}' is not a size (examples: 40KiB, 256MiB, 1GiB, 4096)")
    number, prefix, binary = float(m.group(1)), m.group(2).lower(), m.group(3)
    power = " kmgtp".index(prefix) if prefix else 0
    base = 1024 if (binary or not text.strip().upper().endswith("B") or not prefix) else 1000
    value = number * base**power
    if not math.isfinite(value) or value >= 2.0**63:  # (a number of 400 digits is no size)
        raise ValueError(f"'{_shown(text)}' is not a size any disk has (examples: 40KiB, 256MiB, 1GiB)")
    return int(value)


_RATE = re.compile(r"([0-9]+(?:\.[0-9]+)?) *([kmgt]?)(bit|bps|b/s|ib/s)?", re.ASCII)


def parse_rate(text: str | float) -> float:
    """A link or transfer rate in bytes per second: '1Gbit' and '1GbE' -> 125e6,
    '10Gbit' -> 1.25e9, '125MB/s' -> 125e6, '100MiB/s' -> 104857600; a number is B/s."""
    if isinstance(text, (int, float)):
        return float(text)
    m = _RATE.fullmatch(text.strip(" ").lower().replace("gbe", "gbit")) if text.isascii() else None
    if not m:  # (lower() makes the Kelvin sign a 'k': the text is looked at in ASCII only)
        raise ValueError(f"'{_shown(text)}' is not a rate (examples: 1Gbit, 10GbE, 125MB/s, 100MiB/s)")
    number, prefix, unit = float(m.group(1)), m.group(2), m.group(3) or "b/s"
    if not math.isfinite(number):
        raise ValueError(f"'{_shown(text)}' is not a rate any link has")
    power = " kmgt".index(prefix) if prefix else 0
    if unit in ("bit", "bps"):
        return number * 1000 ** power / 8
    return number * (1024 if unit == "ib/s" else 1000) ** power


_LATENCY = re.compile(r" *([0-9]+(?:\.[0-9]+)?) *(us|µs|ms|s) *", re.ASCII | re.IGNORECASE)
_LATENCY_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
LATENCY_PATTERN = r"^ *[0-9]+(\.[0-9]+)? *([Uu][Ss]|µ[Ss]|[Mm][Ss]|[Ss]) *$(?!\n)"


def parse_latency(text: str | float) -> float:
    """A latency as a person writes it (``20ms``, ``500us``, ``1.5 s``; a bare number is
    seconds), in seconds: above zero and at most an hour (ValueError otherwise)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"{_shown(repr(text))} is not a latency (e.g. 20ms, 500us, 1.5s)")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        found = _LATENCY.fullmatch(text.replace("µs", "us"))
        if found is None:
            raise ValueError(f"'{_shown(text)}' is not a latency (e.g. 20ms, 500us, 1.5s)")
        value = float(found.group(1)) * _LATENCY_S[found.group(2).lower()]
    if not (0 < value <= 3600) or math.isnan(value):
        raise ValueError(f"{text!r} is no latency to hold: above 0 and at most an hour")
    return value


def size(n: float) -> str:
    """Bytes in binary units: 40 KiB, 256 MiB, 2.5 GiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def rate(v: float) -> str:
    """Bytes per second: 105.3 MiB/s."""
    for unit, scale in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B/s"


def duration(s: float) -> str:
    """The report's style: 5'31" (whole seconds, truncated as the report did), 0'5.5" below
    ten seconds, 12.4 ms below 0.1 s."""
    if s < 0.1:
        return f"{s * 1000:.1f} ms" if s >= 0.001 else f"{s * 1e6:.0f} µs"
    minutes, seconds = divmod(s, 60)
    if minutes == 0 and seconds < 10:
        return f"0'{math.floor(seconds * 10) / 10:.1f}\""
    return f"{int(minutes)}'{int(seconds)}\""


def moment(t: object, seconds: bool = True) -> str:
    """A time on this machine's clock (seconds since the epoch) as UTC; one that is not a
    plausible time (a stored or a stranger's value) as 'an unknown time'."""
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 < t < 1e11:
        return "an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC", time.gmtime(t))


def count_rate(v: float, unit: str) -> str:
    digits = 0 if v >= 100 else 1
    return f"{v:,.{digits}f} {unit}"


def latency(s: float) -> str:
    """Request latencies: 211 µs, 55.7 ms, 1.20 s."""
    if s < 0.001:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1000:.1f} ms"
    return f"{s:.2f} s"


def format_value(v: float | None, unit: str, metric: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if unit == "s" and metric.startswith(("lat", "clat")):
        return latency(v)
    if unit == "B/s":
        return rate(v)
    if unit == "s":
        return duration(v)
    if unit == "B":
        return size(v)
    if unit == "%":
        return f"{v:.0f} %"
    if unit == "s/GiB":
        return f"{v:.2f} CPU-s/GiB"
    return count_rate(v, unit)


# a time's units, each from where it is the largest that keeps a value at least one of it
_TIME_UNITS = (("s", 1.0, 2), ("ms", 1e-3, 1), ("µs", 1e-6, 0))  # (unit, its seconds, its usual decimals)


# a rate's units (B/s), as a time's
_RATE_UNITS = (("GiB/s", float(1 << 30), 2), ("MiB/s", float(1 << 20), 1), ("KiB/s", float(1 << 10), 0),
               ("B/s", 1.0, 0))


# a column of rates whose values span more than this many times is said value by value (each
# in its own unit): one unit for a stalled pass's 1 KiB/s and a read's 1.1 GiB/s reads as neither
RATE_SPAN = 1000.0


def _times(values: list[float], table: tuple[tuple[str, float, int], ...] = _TIME_UNITS,
           by: float | None = None) -> Callable[[float], str]:
    """One unit for every time (or rate: ``table``) of a column: the largest the column's
    largest value (or ``by``: a rate column's median) holds at least one of, with enough
    decimals that its smallest shows two significant digits (a smaller unit where that takes
    more than three): '36.8 ms' beside '172.0 ms', never beside '0'0.1"'; '0.90 MiB/s'
    beside '118.20 MiB/s', not '912 KiB/s'."""
    top, low = max(values) if by is None else by, min((v for v in values if v > 0), default=0.0)
    units = [u for u in table if top >= u[1]] or [table[-1]]
    for unit, scale, decimals in units:  # (a smaller unit where the smallest needs more digits)
        decimals = max(decimals, 1 - math.floor(math.log10(low / scale))) if low else decimals
        if decimals <= 3:
            break
    decimals = min(3, decimals)
    return lambda v: f"{v / scale:,.{decimals}f} {unit}"


def column(values: Iterable[float | None], unit: str, metric: str = "") -> Callable[[float | None], str]:
    """How a column's values are said, in one unit for all of them: a time in the report's
    style (5'31", 0'0.8") where every one is at least 0.1 s, else every one in the unit
    of :func:`_times`; a rate (B/s) in the unit of its median, where its values span at most
    ``RATE_SPAN`` times; any other value as :func:`format_value` says it."""
    found = [v for v in values if v is not None and math.isfinite(v)]
    positive = [v for v in found if v > 0]
    if unit == "B/s" and positive and max(positive) <= RATE_SPAN * min(positive):
        said = _times(found, _RATE_UNITS, statistics.median(positive))
        return lambda v: "—" if v is None or math.isnan(v) else said(v)
    if unit != "s" or not found or (not metric.startswith(("lat", "clat")) and min(found) >= 0.1):
        return lambda v: format_value(v, unit, metric)
    said = _times(found)
    return lambda v: "—" if v is None or math.isnan(v) else said(v)
