"""Student's t distribution as the verdicts use it (intervals and Welch's p-values), held
to SciPy's (a test dependency only) over the degrees of freedom and t a comparison meets:
from Welch's smallest (1, two repeats a side) to thousands, and far into the tails."""

import math

import pytest

from harness.report import stats

special = pytest.importorskip("scipy.special")
stdtr, stdtrit = special.stdtr, special.stdtrit

DFS = [1, 1.0001, 1.5, 2, 2.5, 3, 4.7, 7, 10, 17.3, 30, 100, 1000, 1e5]


@pytest.mark.parametrize("df", DFS)
def test_two_sided_p_is_scipys(df):
    for t in (0, 1e-6, 0.1, 0.5, 1, 1.96, 2, 3, 5, 10, 20, 100, 1e4, -2.5):
        want = float(2 * stdtr(df, -abs(t)))
        assert stats._t_two_sided_p(t, df) == pytest.approx(want, rel=1e-9, abs=1e-300), (df, t)


@pytest.mark.parametrize("df", DFS)
def test_quantile_is_scipys(df):
    for q in (0.5, 0.6, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.05, 0.025):
        assert stats._t_quantile(q, df) == pytest.approx(float(stdtrit(df, q)), rel=1e-9, abs=1e-12), (df, q)


def test_where_both_sides_of_the_fraction_look_slow():
    """Near t = sqrt(3 df / (df + 2)), x and 1 - x rounded apart can each look like the side
    where the fraction converges slowly: it is evaluated on one side, once (Welch's p of two
    cells once recursed there until Python gave up)."""
    for df in (17.0, 26.0, 39.0, 51.0, 58.0, 93.0, 12.345):
        centre = math.sqrt(3 * df / (df + 2))
        t = centre
        for _ in range(8):
            t = math.nextafter(t, 0.0)
        for _ in range(16):
            assert stats._t_two_sided_p(t, df) == pytest.approx(float(2 * stdtr(df, -t)), rel=1e-9), (df, t)
            t = math.nextafter(t, math.inf)
    assert stats._t_two_sided_p(1.689277519114419, 39.0) == pytest.approx(0.0991468755214, rel=1e-9)


def test_no_degrees_of_freedom_or_no_number_is_nan_not_an_exception():
    for df in (0.0, -1.0, math.nan):
        assert math.isnan(stats._t_two_sided_p(2.0, df)) and math.isnan(stats._t_quantile(0.975, df))
    assert math.isnan(stats._t_quantile(math.nan, 3.0))
    # a df past any float's difference from the normal distribution: the normal's
    assert stats._t_quantile(0.975, math.inf) == pytest.approx(1.959964, rel=1e-6)
    assert stats._t_two_sided_p(2.0, 1e12) == pytest.approx(0.0455003, rel=1e-5)
    assert stats._t_quantile(0.975, 1e-300) > 1e100  # (its density underflows: no step is taken)


def test_printed_tables_values():
    """As the t tables print them (two-sided 95 %): 12.706 at 1, 2.228 at 10, 1.960 far out."""
    assert round(stats._t_quantile(0.975, 1), 3) == 12.706
    assert round(stats._t_quantile(0.975, 10), 3) == 2.228
    assert round(stats._t_quantile(0.975, 1e6), 3) == 1.960
    assert stats._t_quantile(1.0, 5) == math.inf and stats._t_quantile(0.0, 5) == -math.inf


def test_welch_on_known_samples():
    """A difference of three repeats a side: significant, its interval around the ratio."""
    c = stats.compare([100.0, 102.0, 98.0], [50.0, 51.0, 49.0])
    assert c is not None and c.significant() and c.ratio_low < c.ratio < c.ratio_high
    assert c.ratio == pytest.approx(2.0, rel=0.01)
    same = stats.compare([100.0, 102.0, 98.0], [101.0, 99.0, 100.0])
    assert same is not None and not same.significant()
