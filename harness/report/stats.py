"""Statistics on measurements: percentiles, per-cell summaries over repeats, and the
significance of a difference between two systems (SciPy's t distribution and Welch's
t-test)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile (SciPy's ufunc, imported only when statistics are needed)."""
    from scipy.special import stdtrit
    return float(stdtrit(df, q))


def _t_two_sided_p(t: float, df: float) -> float:
    from scipy.special import stdtr
    return float(2 * stdtr(df, -abs(t)))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def _mean_variance(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample variance in floats, two passes. (The ``statistics`` module is exact
    and works in Fractions: thousands of cells took a second.)"""
    n = len(values)
    if min(values) == max(values):  # exactly: a constant has no spread, whatever the rounding
        return float(values[0]), 0.0 if n > 1 else math.nan
    mean = math.fsum(values) / n
    return mean, math.fsum((x - mean) ** 2 for x in values) / (n - 1) if n > 1 else math.nan


@dataclass(frozen=True)
class Summary:
    """One cell over its repeats: median (what tables show), mean with a 95% confidence
    interval (Student's t), and the coefficient of variation."""

    n: int
    median: float
    mean: float
    ci_low: float
    ci_high: float
    cv: float  # stdev / mean; nan with one value

    @property
    def ci_half_width(self) -> float:
        """Half the interval, relative to the mean (0.04 is ±4%)."""
        return (self.ci_high - self.ci_low) / 2 / self.mean if self.mean else math.nan


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary:
    n = len(values)
    mean, var = _mean_variance(values)
    if n < 2:
        return Summary(n, mean, mean, math.nan, math.nan, math.nan)
    sd = math.sqrt(var)
    half = _t_quantile((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
    return Summary(n, median(values), mean, mean - half, mean + half, sd / mean if mean else math.nan)


@dataclass(frozen=True)
class Comparison:
    """A against B: the ratio of their geometric means with its 95% interval (Welch's
    interval on the logs), and Welch's t-test on the values themselves (as pyperf does),
    which can reach significance with three repeats a side."""

    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


def compare(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Comparison | None:
    """None when either side has fewer than two values (nothing to test) or a value is not
    positive."""
    if len(a) < 2 or len(b) < 2 or min(a) <= 0 or min(b) <= 0:
        return None
    (mla, vla), (mlb, vlb) = _mean_variance([math.log(x) for x in a]), _mean_variance([math.log(x) for x in b])
    va, vb = vla / len(a), vlb / len(b)
    diff = mla - mlb
    if va + vb == 0:
        low = high = diff
    else:
        df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
        half = _t_quantile((1 + confidence) / 2, round(df, 3)) * math.sqrt(va + vb)
        low, high = diff - half, diff + half
    (ma, vara), (mb, varb) = _mean_variance(a), _mean_variance(b)
    if vara == 0 and varb == 0:
        p = 0.0 if ma != mb else 1.0
    else:  # Welch's t-test on the values themselves
        sa, sb = vara / len(a), varb / len(b)
        t = (ma - mb) / math.sqrt(sa + sb)
        dfw = (sa + sb) ** 2 / (sa ** 2 / (len(a) - 1) + sb ** 2 / (len(b) - 1))
        p = _t_two_sided_p(t, dfw)
    return Comparison(math.exp(diff), math.exp(low), math.exp(high), p)
