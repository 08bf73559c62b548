"""Statistics on measurements: percentiles, per-cell summaries over repeats, and the
significance of a difference between two systems (Student's t distribution and Welch's
t-test)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# Student's t distribution, from the regularized incomplete beta function: the upper tail
# beyond t with df degrees of freedom is I_x(df/2, 1/2) / 2 with x = df / (df + t²). The
# function is its continued fraction, evaluated by Lentz's method; the quantile inverts the
# tail by Newton's method. (Within 1e-10 of SciPy's over the tests' grid, without SciPy's
# import, which took a fifth of a second of every command that judged a cell.)

_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), 1 / (1 + d1 / (1 + d2 / (1 + ...))), for x
    below (a + 1) / (a + b + 2), where it converges fast: its denominator by Lentz's method
    (``c`` and ``d`` the ratios of successive numerators and denominators)."""
    f, c, d = 1.0, 1.0, 0.0
    for j in range(1, 2000):
        m = j // 2
        if j % 2:  # d_{2m+1}
            term = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:  # d_{2m}
            term = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + term * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + term / c
        c = c if abs(c) > _TINY else _TINY
        step = c * d
        f *= step
        if abs(step - 1.0) < 1e-15:
            break
    return 1.0 / f


def _incomplete_beta(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1];
    ``y`` is 1 - x, given by the caller as computed without rounding x's nearness to 1.
    The fraction is evaluated on the side where it converges fast — once: x and y rounded
    apart may each look like the slow side."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    front = math.exp(a * math.log(x) + b * math.log(y) - log_beta)
    if x <= (a + 1) / (a + b + 2):
        return front / a * _beta_fraction(a, b, x)
    return 1.0 - front / b * _beta_fraction(b, a, y)


# Beyond this many degrees of freedom t is the normal distribution to within 1e-7 of its
# quantiles (the difference falls as 1/df), and lgamma's differences lose their digits.
_NORMAL_DF = 1e7


def _t_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (NaN for a df that is none)."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if df > _NORMAL_DF:
        return 1.0 - NormalDist().cdf(t)
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    half = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t))
    return half if t >= 0 else 1.0 - half


@lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile: the t below which ``q`` of the distribution lies (NaN for a
    q or df that is none)."""
    if math.isnan(q) or math.isnan(df) or df <= 0:
        return math.nan
    if not 0.0 < q < 1.0:
        return math.inf if q >= 1.0 else -math.inf
    if q < 0.5:
        return -_t_quantile(1.0 - q, df)
    if q == 0.5:
        return 0.0
    z = NormalDist().inv_cdf(q)
    if df > _NORMAL_DF:
        return z
    want = 1.0 - q  # (the upper tail: no rounding of q's nearness to 1)
    log_density_at_0 = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    # The tail is convex for t > 0, so Newton's steps from the normal quantile (which lies
    # below t's, t's tails being heavier) stay below the root and climb to it.
    t = z
    for _ in range(200):
        density = math.exp(log_density_at_0 - (df + 1) / 2 * math.log1p(t * t / df))
        if density <= 0.0:  # (so far out that no step can be taken: t is as close as floats go)
            break
        step = (_t_tail(t, df) - want) / density
        t += step
        if abs(step) <= 1e-12 * max(1.0, abs(t)):
            break
    return t


def _t_two_sided_p(t: float, df: float) -> float:
    return 2 * _t_tail(abs(t), df)


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
