"""benchmarks.intervals against definitions computed independently: scipy's t-tests, a Holm
example worked by hand (and statsmodels where installed), simulated coverage, family-wise error
and power. Every simulation is seeded and vectorised; the file runs in a few seconds.

``pytest -k coverage`` selects the coverage simulations, ``-k "holm or multiplicity"`` the
multiplicity ones.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.intervals import (
    Claim,
    Interval,
    beyond_margin_p,
    combination_interval,
    difference_interval,
    equivalence,
    equivalence_power,
    holm,
    mean_interval,
    power_to_detect,
    power_to_show_equivalence,
    read_claims,
    read_family,
    verdict,
)

REPS = 40_000  # coverage draws per case: standard error sqrt(.95 * .05 / REPS) ~ 0.0011
CHECKED = 200  # draws per case also built by benchmarks.intervals, which must match scipy's
SHAPE = 6.0  # gamma shape of the skewed case: skewness 2 / sqrt(6) ~ 0.82


def draw(kind: str, rng: np.random.Generator, size: tuple[int, ...]) -> tuple[np.ndarray, float]:
    """Scores and their true mean.

    "skewed" is a gamma with shape 6 (skewness 0.82), standing for per-seed final scores: bounded
    on one side with a longer tail on the other. Its skewness is that of a typical set of
    per-seed finals here: when this was written, over the 76 (experiment, method, dataset,
    variant) groups with at least 4 complete seeds in results/cpu, the median |sample skewness|
    was 0.66 (quartiles 0.37 and 1.11; 90th percentile 1.52). A stronger skew is measured in
    test_coverage_falls_short_under_strong_skew.
    """
    if kind == "normal":
        return rng.normal(50.0, 10.0, size), 50.0
    return rng.gamma(SHAPE, 10.0, size), SHAPE * 10.0


def covered(low: np.ndarray, high: np.ndarray, truth: float) -> float:
    return float(np.mean((low <= truth) & (truth <= high)))


# --- intervals equal scipy's --------------------------------------------------------------------

@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_mean_interval_is_scipys_one_sample_t(confidence):
    x = np.random.default_rng(1).normal(3.0, 2.0, 7)
    ours = mean_interval(x, confidence)
    ref = stats.ttest_1samp(x, 0.0)
    ci = ref.confidence_interval(confidence)
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.estimate == pytest.approx(x.mean()) and (ours.n_a, ours.n_b) == (7, None)
    assert ours.df == 6 and ours.confidence == confidence and ours.method == "one-sample t"


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_paired_interval_is_scipys_ttest_rel(confidence):
    rng = np.random.default_rng(2)
    b = rng.normal(40.0, 10.0, 6)
    a = b + rng.normal(2.0, 3.0, 6)
    ours = difference_interval(a, b, paired=True, confidence=confidence)
    ref = stats.ttest_rel(a, b)
    ci = ref.confidence_interval(confidence)
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert (ours.n_a, ours.n_b, ours.method) == (6, 6, "paired t")


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_unpaired_interval_is_scipys_welch(confidence):
    rng = np.random.default_rng(3)
    a, b = rng.normal(50.0, 4.0, 5), rng.normal(45.0, 15.0, 8)
    ours = difference_interval(a, b, paired=False, confidence=confidence)
    ref = stats.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(confidence)
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.df == pytest.approx(ref.df, rel=1e-12)
    assert (ours.n_a, ours.n_b, ours.method) == (5, 8, "Welch t")


def test_constant_samples_give_a_zero_width_interval():
    zero = difference_interval([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], paired=False)
    assert (zero.low, zero.high, zero.p_value) == (0.0, 0.0, 1.0)
    shifted = difference_interval([1.0, 1.0], [0.0, 0.0], paired=True)
    assert (shifted.low, shifted.high, shifted.p_value) == (1.0, 1.0, 0.0)


@pytest.mark.parametrize(("a", "b", "paired", "words"), [
    ([1.0], [1.0, 2.0], False, ["a", "at least 2", "got 1"]),
    ([1.0, 2.0], [], True, ["b", "at least 2", "got 0"]),
    ([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0], True, ["a", "NaN", "[1]"]),
    ([1.0, 2.0], [1.0, float("inf")], False, ["b", "infinite", "[1]"]),
    ([1.0, 2.0, 3.0], [1.0, 2.0], True, ["paired", "len(a)=3", "len(b)=2"]),
    ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0], False, ["a", "1-D", "(2, 2)"]),
])
def test_bad_samples_raise_naming_the_fault(a, b, paired, words):
    with pytest.raises(ValueError) as err:
        difference_interval(a, b, paired=paired)
    for word in words:
        assert word in str(err.value)


def test_bad_confidence_and_short_mean_raise():
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([1.0, 2.0, 3.0], confidence=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        mean_interval([1.0])
    assert difference_interval([1.0, 2.0, 4.0], [1.0, 2.0], paired=False).n_b == 2


# --- coverage -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["normal", "skewed"])
@pytest.mark.parametrize("n", [3, 5, 10])
def test_coverage_of_mean_interval(kind, n):
    """The 95% t-interval of a mean covers the true mean 93-97% of the time, for normal and
    gamma(6) scores (skewness 0.82) at n = 3, 5, 10. This is also the paired interval: it is the
    same interval on the per-pair differences.

    Coverage is measured on REPS draws with scipy's vectorised interval; on the first CHECKED
    draws benchmarks.intervals must give the same bounds, so the coverage is the module's.
    """
    rng = np.random.default_rng([n, 1 if kind == "normal" else 2])
    x, truth = draw(kind, rng, (REPS, n))
    ci = stats.ttest_1samp(x, 0.0, axis=1).confidence_interval(0.95)
    for i in range(CHECKED):
        ours = mean_interval(x[i])
        assert (ours.low, ours.high) == pytest.approx((ci.low[i], ci.high[i]), rel=1e-9)
    coverage = covered(ci.low, ci.high, truth)
    assert 0.93 <= coverage <= 0.97, f"{kind} n={n}: coverage {coverage:.4f}"


@pytest.mark.parametrize("kind", ["normal", "skewed"])
@pytest.mark.parametrize("n", [3, 5, 10])
def test_coverage_of_welch_difference(kind, n):
    """The 95% Welch interval for the difference of two independent samples of n from the same
    family (normal, or gamma(6)) covers the true difference 0 93-97% of the time at n = 3, 5, 10
    per arm. At n = 3 it is conservative (about 0.966: the estimated df is often below 2n - 2).
    Module and scipy agree on the first CHECKED draws, as in the one-sample test.
    """
    rng = np.random.default_rng([n, 3 if kind == "normal" else 4])
    a, _ = draw(kind, rng, (REPS, n))
    b, _ = draw(kind, rng, (REPS, n))
    ci = stats.ttest_ind(a, b, axis=1, equal_var=False).confidence_interval(0.95)
    for i in range(CHECKED):
        ours = difference_interval(a[i], b[i], paired=False)
        assert (ours.low, ours.high) == pytest.approx((ci.low[i], ci.high[i]), rel=1e-9)
    coverage = covered(ci.low, ci.high, 0.0)
    assert 0.93 <= coverage <= 0.97, f"{kind} n={n}: coverage {coverage:.4f}"


def test_coverage_falls_short_under_strong_skew():
    """Not hidden: with gamma(2) scores (skewness 1.41, between the 75th and 90th percentiles of
    the per-seed groups' |sample skewness| here) the one-sample 95% t-interval at n = 5 covers
    only about 0.917, below 0.93. (Gamma(4), skewness 1.0, sits at the edge: about 0.932 at
    n = 5.) The mean interval, and the paired one whose differences may be skewed too, is read
    with that in mind; the Welch difference of two samples of one family is not affected (the
    skews cancel). This test pins the shortfall so that a change to it is seen.
    """
    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, 10.0, (REPS, 5))
    ci = stats.ttest_1samp(x, 0.0, axis=1).confidence_interval(0.95)
    assert 0.90 <= covered(ci.low, ci.high, 20.0) < 0.93


def percentile_bootstrap(x: np.ndarray, rng: np.random.Generator, resamples: int = 1000,
                         chunk: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile-bootstrap interval of the mean of each row of ``x``."""
    lows, highs = [], []
    for start in range(0, len(x), chunk):
        rows = x[start:start + chunk]
        picks = rng.integers(0, rows.shape[1], (len(rows), resamples, rows.shape[1]))
        means = np.take_along_axis(rows[:, None, :], picks, axis=2).mean(axis=2)
        low, high = np.quantile(means, [0.025, 0.975], axis=1)
        lows.append(low)
        highs.append(high)
    return np.concatenate(lows), np.concatenate(highs)


def test_coverage_of_percentile_bootstrap_is_too_low_at_n5():
    """Why t-intervals: on the same normal draws at n = 5, the 95% percentile bootstrap (1000
    resamples) covers about 0.83, so the coverage tests above would fail for it, while the
    t-interval covers 0.95."""
    rng = np.random.default_rng(6)
    x, truth = draw("normal", rng, (2000, 5))
    boot = covered(*percentile_bootstrap(x, rng), truth)
    ci = stats.ttest_1samp(x, 0.0, axis=1).confidence_interval(0.95)
    assert boot < 0.90, f"percentile bootstrap coverage {boot:.4f}"
    assert covered(ci.low, ci.high, truth) >= 0.93


# --- multiplicity -------------------------------------------------------------------------------

def test_holm_on_a_hand_worked_example():
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> running max .02 .03 .06 .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # 1.2 capped at 1, and monotone after it
    assert holm([0.02, 0.02]) == pytest.approx([0.04, 0.04])  # ties
    assert holm([0.3]) == [0.3] and holm([]) == []


def test_holm_matches_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(7)
    for p in (rng.uniform(0, 0.1, 6), rng.uniform(0, 1, 9), np.array([0.5, 0.001, 0.5, 0.02])):
        assert holm(p) == pytest.approx(multitest.multipletests(p, method="holm")[1].tolist())


def test_holm_rejects_bad_p_values():
    for bad in ([0.1, 1.2], [-0.1], [float("nan")]):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            holm(bad)


def fixed(p_value: float, low: float = -1.0, high: float = 1.0) -> Interval:
    return Interval((low + high) / 2, low, high, 5, 5, 0.95, "Welch t", p_value, 1.0, 8.0)


def test_read_family_reads_each_comparison_after_holm():
    family = {"D1": fixed(0.004), "D2": fixed(0.03), "D3": fixed(0.012), "D4": fixed(0.5)}
    read = read_family(family, alpha=0.05)
    assert list(read) == ["D1", "D2", "D3", "D4"]
    # sorted .004*4 = .016, .012*3 = .036, .03*2 = .06, .5 -> D1, D3 significant; D2 not
    assert [read[k].p_holm for k in read] == pytest.approx([0.016, 0.06, 0.036, 0.5])
    assert [read[k].significant for k in read] == [True, False, True, False]
    assert read["D2"].interval is family["D2"]  # the interval itself stays uncorrected


def test_multiplicity_family_wise_error_with_holm():
    """Under the global null, 8 independent Welch comparisons (5 vs 5 normal seeds) per family:
    at least one uncorrected p < 0.05 in about a third of the families, while Holm keeps the
    family-wise error near 0.05. The p-values are scipy's; read_family is checked against them
    on the first 200 families."""
    rng = np.random.default_rng(8)
    families, m = 4000, 8
    a, b = rng.normal(size=(2, families, m, 5))
    p = stats.ttest_ind(a, b, axis=2, equal_var=False).pvalue
    uncorrected = float(np.mean((p <= 0.05).any(axis=1)))
    adjusted = np.array([holm(row) for row in p])
    with_holm = float(np.mean((adjusted <= 0.05).any(axis=1)))
    assert uncorrected > 0.2, uncorrected
    assert with_holm <= 0.06, with_holm
    for f in range(200):
        read = read_family({str(j): difference_interval(a[f, j], b[f, j], False) for j in range(m)})
        assert [c.p_holm for c in read.values()] == pytest.approx(adjusted[f].tolist(), rel=1e-9)


# --- equivalence --------------------------------------------------------------------------------

@pytest.mark.parametrize("paired", [True, False])
def test_equivalence_of_equal_distributions_with_large_n(paired):
    rng = np.random.default_rng(9)
    a, b = rng.normal(50.0, 5.0, (2, 200))
    result = equivalence(a, b, margin=2.5, paired=paired)
    assert result.equivalent and result.p_value < 0.05
    assert result.interval.confidence == pytest.approx(0.90)
    assert -2.5 < result.interval.low < result.interval.high < 2.5


@pytest.mark.parametrize("paired", [True, False])
def test_shifted_distribution_is_not_equivalent(paired):
    rng = np.random.default_rng(10)
    a, b = rng.normal(50.0, 5.0, (2, 200))
    result = equivalence(a + 4.0, b, margin=2.5, paired=paired)
    assert not result.equivalent and result.p_upper > 0.05


def test_tost_p_values_are_scipys_one_sided_welch_tests():
    rng = np.random.default_rng(11)
    a, b, margin = rng.normal(10.0, 2.0, 8), rng.normal(10.5, 3.0, 6), 2.0
    result = equivalence(a, b, margin=margin, paired=False, alpha=0.05)
    lower = stats.ttest_ind(a + margin, b, equal_var=False, alternative="greater").pvalue
    upper = stats.ttest_ind(a - margin, b, equal_var=False, alternative="less").pvalue
    assert (result.p_lower, result.p_upper) == pytest.approx((lower, upper), rel=1e-10)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.90)
    assert (result.interval.low, result.interval.high) == pytest.approx((ci.low, ci.high))
    assert result.equivalent == (result.p_value < 0.05)


@pytest.mark.parametrize("margin", [0.0, -1.0])
def test_equivalence_margin_must_be_positive(margin):
    with pytest.raises(ValueError, match="margin must be > 0"):
        equivalence([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], margin=margin, paired=True)


# --- verdict ------------------------------------------------------------------------------------

def around(low: float, high: float, confidence: float = 0.95, df: float = 9.0) -> Interval:
    """A t-interval with these bounds (the se that gives them at ``df``)."""
    se = (high - low) / 2 / stats.t.ppf(0.5 + confidence / 2, df)
    estimate = (low + high) / 2
    p = 2 * stats.t.sf(abs(estimate) / se, df)
    return Interval(estimate, low, high, 10, 10, confidence, "paired t", p, se, df)


def test_verdict_supports_and_contradicts_by_side():
    assert verdict(around(1.0, 3.0), +1) == "supports"
    assert verdict(around(1.0, 3.0), -1) == "contradicts"
    assert verdict(around(-3.0, -1.0), -1) == "supports"
    assert verdict(around(-3.0, -1.0), +1) == "contradicts"


def test_verdict_opposite_sign_is_never_equivalent():
    # A detected difference against the prediction, even one well inside the margin.
    assert verdict(around(-0.3, -0.1), +1, margin=10.0) == "contradicts"
    assert verdict(around(-3.0, -1.0), +1, margin=0.5) == "contradicts"


def test_verdict_equivalent_only_within_the_margin():
    assert verdict(around(-0.2, 0.3), +1, margin=1.0) == "equivalent"
    assert verdict(around(-0.2, 0.3), -1, margin=1.0) == "equivalent"
    assert verdict(around(-0.2, 0.3), +1) == "inconclusive"  # no margin, no equivalence
    assert verdict(around(-0.2, 0.3), +1, margin=0.25) == "inconclusive"
    assert verdict(around(-5.0, 8.0), +1, margin=1.0) == "inconclusive"


def test_verdict_reads_equivalence_on_the_90_percent_interval():
    # 95% bounds +-1.05 at df 9 -> 90% bounds +-1.05 * t(.95, 9) / t(.975, 9) ~ +-0.851
    assert verdict(around(-1.05, 1.05), +1, margin=1.0) == "equivalent"
    assert verdict(around(-1.05, 1.05), +1, margin=0.84) == "inconclusive"


def test_verdict_agrees_with_equivalence():
    rng = np.random.default_rng(12)
    for _ in range(50):
        a, b = rng.normal(0.0, 1.0, (2, 8))
        interval = difference_interval(a, b, paired=True)
        if interval.low <= 0.0 <= interval.high:
            tost = equivalence(a, b, margin=0.8, paired=True)
            assert (verdict(interval, +1, margin=0.8) == "equivalent") == tost.equivalent


def test_verdict_rejects_bad_sign_and_margin():
    with pytest.raises(ValueError, match="expected_sign"):
        verdict(around(1.0, 2.0), 0)
    with pytest.raises(ValueError, match="margin"):
        verdict(around(-1.0, 2.0), +1, margin=0.0)


# --- power --------------------------------------------------------------------------------------

def test_power_to_detect_matches_simulation():
    rng = np.random.default_rng(13)
    reps = 20_000
    d = rng.normal(1.0, 2.0, (reps, 8))  # paired: 8 per-pair differences, sd 2, effect 1
    simulated = float(np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05))
    assert power_to_detect(8, 2.0, 1.0, paired=True) == pytest.approx(simulated, abs=0.015)
    a, b = rng.normal(0.0, 1.0, (2, reps, 6))
    simulated = float(np.mean(stats.ttest_ind(a + 1.5, b, axis=1, equal_var=False).pvalue < 0.05))
    assert power_to_detect(6, 1.0, 1.5, paired=False) == pytest.approx(simulated, abs=0.03)
    assert power_to_detect(5, 1.0, 0.0, paired=True) == pytest.approx(0.05)


def test_power_to_show_equivalence_is_a_close_lower_bound():
    rng = np.random.default_rng(14)
    d = rng.normal(0.0, 1.0, (20_000, 20))  # paired, 20 differences, true difference 0
    ci = stats.ttest_1samp(d, 0.0, axis=1).confidence_interval(0.90)
    simulated = float(np.mean((ci.low > -0.6) & (ci.high < 0.6)))
    approx = power_to_show_equivalence(20, 1.0, 0.6, paired=True)
    assert approx <= simulated + 0.01 and simulated - approx < 0.05, (approx, simulated)
    assert power_to_show_equivalence(3, 1.0, 0.1, paired=False) == 0.0  # hopeless: clipped at 0


def test_power_rejects_bad_design():
    with pytest.raises(ValueError, match="n must be"):
        power_to_detect(1, 1.0, 1.0, paired=True)
    with pytest.raises(ValueError, match="sd must be"):
        power_to_detect(5, 0.0, 1.0, paired=False)
    with pytest.raises(ValueError, match="margin"):
        power_to_show_equivalence(5, 1.0, -1.0, paired=True)
    assert math.isclose(power_to_detect(50, 1.0, 3.0, paired=False), 1.0)


# --- combinations of independent groups --------------------------------------------------------

def test_combination_of_two_groups_weighted_plus_minus_one_is_scipys_welch():
    rng = np.random.default_rng(15)
    a, b = rng.normal(10.0, 2.0, 6), rng.normal(8.0, 5.0, 9)
    ours = combination_interval([(a, 1.0), (b, -1.0)])
    ref = stats.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10) and ours.df == pytest.approx(ref.df, rel=1e-12)
    assert (ours.n_a, ours.n_b, ours.method) == (6, 9, "Welch-Satterthwaite t")


def test_combination_of_one_group_is_the_one_sample_t_and_paired_on_differences():
    rng = np.random.default_rng(16)
    a, b = rng.normal(3.0, 1.0, (2, 7))
    one = combination_interval([(a - b, 1.0)])
    ref = stats.ttest_rel(a, b)
    assert (one.low, one.high) == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-12)
    assert one.p_value == pytest.approx(ref.pvalue, rel=1e-10) and one.n_b is None
    halved = combination_interval([(a - b, 0.5)])  # a weight scales the estimate and its interval
    assert (halved.low, halved.high) == pytest.approx((one.low / 2, one.high / 2), rel=1e-12)
    assert halved.p_value == pytest.approx(one.p_value, rel=1e-10)


def test_combination_of_four_groups_by_hand():
    """A domain's sum of two rows' differences: (x1 - x2) + (x3 - x4), worked from the definitions
    with plain Python (sample variances, Welch-Satterthwaite df, scipy's t quantile)."""
    groups = [([40.0, 44.0, 41.0, 47.0, 43.0], 1.0), ([30.0, 31.0, 29.0, 33.0], -1.0),
              ([20.0, 26.0, 23.0], 1.0), ([25.0, 24.0, 27.0, 22.0, 21.0, 26.0], -1.0)]
    means = [sum(x) / len(x) for x, _ in groups]
    variances = [sum((v - m) ** 2 for v in x) / (len(x) - 1) for (x, _), m in zip(groups, means)]
    parts = [s2 / len(x) for (x, _), s2 in zip(groups, variances)]
    se = math.sqrt(sum(parts))
    df = sum(parts) ** 2 / sum(p * p / (len(x) - 1) for p, (x, _) in zip(parts, groups))
    estimate = means[0] - means[1] + means[2] - means[3]
    half = stats.t.ppf(0.975, df) * se
    ours = combination_interval(groups)
    assert (ours.estimate, ours.se, ours.df) == pytest.approx((estimate, se, df), rel=1e-12)
    assert (ours.low, ours.high) == pytest.approx((estimate - half, estimate + half), rel=1e-12)
    assert ours.p_value == pytest.approx(2 * stats.t.sf(abs(estimate) / se, df), rel=1e-10)
    assert (ours.n_a, ours.n_b) == (3, 6)


def test_combination_rejects_bad_groups():
    with pytest.raises(ValueError, match="at least one group"):
        combination_interval([])
    with pytest.raises(ValueError, match="group 1 needs at least 2"):
        combination_interval([([1.0, 2.0], 1.0), ([3.0], -1.0)])
    with pytest.raises(ValueError, match="group 0 has weight 0"):
        combination_interval([([1.0, 2.0], 0.0)])
    flat = combination_interval([([2.0, 2.0], 1.0), ([1.0, 1.0, 1.0], -1.0)])
    assert (flat.low, flat.estimate, flat.high, flat.p_value) == (1.0, 1.0, 1.0, 0.0)


def welch_satterthwaite(groups: list[tuple[np.ndarray, float]], confidence: float = 0.95):
    """Vectorised over rows: the bounds of the combination t-interval (an independent implementation)."""
    estimate = sum(w * x.mean(axis=1) for x, w in groups)
    parts = [w * w * x.var(axis=1, ddof=1) / x.shape[1] for x, w in groups]
    total = sum(parts)
    df = total**2 / sum(p**2 / (x.shape[1] - 1) for p, (x, _) in zip(parts, groups))
    half = stats.t.ppf(0.5 + confidence / 2, df) * np.sqrt(total)
    return estimate - half, estimate + half


@pytest.mark.parametrize("kind", ["normal", "skewed"])
def test_coverage_of_combination_interval_over_four_groups(kind):
    """A sum over two rows of differences of arms, as C1 and C4 read: 5, 5, 5 and 10 seeds with
    spreads 1x, 3x, 1x and 2x (normal, or gamma(6) scaled). The 95% Welch-Satterthwaite interval
    covers the true sum (0) 93-97% of the time (0.949 normal, 0.945 skewed when written); on the
    first CHECKED draws the module's bounds equal the independent vectorised ones."""
    rng = np.random.default_rng(17 if kind == "normal" else 18)
    sizes, scales, weights = (5, 5, 5, 10), (1.0, 3.0, 1.0, 2.0), (1.0, -1.0, 1.0, -1.0)
    groups = []
    for size, scale, weight in zip(sizes, scales, weights):
        x, truth = draw(kind, rng, (REPS, size))
        groups.append(((x - truth) * scale, weight))
    low, high = welch_satterthwaite(groups)
    for i in range(CHECKED):
        ours = combination_interval([(x[i], w) for x, w in groups])
        assert (ours.low, ours.high) == pytest.approx((low[i], high[i]), rel=1e-9, abs=1e-9)
    coverage = covered(low, high, 0.0)
    assert 0.93 <= coverage <= 0.97, f"{kind}: coverage {coverage:.4f}"


def test_coverage_of_percentile_bootstrap_of_a_difference_is_too_low_at_n5():
    """The same shortfall for the old reading of a difference of two arms (5 seeds each, each arm
    resampled on its own, 1000 resamples): 0.878 against the Welch interval's 0.960 on these draws."""
    rng = np.random.default_rng(19)
    a, b = rng.normal(0.0, 1.0, (2, 2000, 5))
    picks = rng.integers(0, 5, (2, 2000, 1000, 5))
    boot = (np.take_along_axis(a[:, None, :], picks[0], axis=2).mean(axis=2)
            - np.take_along_axis(b[:, None, :], picks[1], axis=2).mean(axis=2))
    low, high = np.quantile(boot, [0.025, 0.975], axis=1)
    welch = stats.ttest_ind(a, b, axis=1, equal_var=False).confidence_interval(0.95)
    assert covered(low, high, 0.0) < 0.91
    assert covered(welch.low, welch.high, 0.0) >= 0.93


# --- claims read after Holm -------------------------------------------------------------------

def test_a_family_of_one_directional_claim_reads_as_verdict():
    rng = np.random.default_rng(20)
    for _ in range(40):
        a, b = rng.normal(rng.uniform(-2, 2), 1.0, 6), rng.normal(0.0, 1.0, 6)
        interval = difference_interval(a, b, paired=False)
        for sign in (1, -1):
            for margin in (None, 1.5):
                (reading,) = read_claims({"x": Claim(interval, sign, margin)}).values()
                assert reading.verdict == verdict(interval, sign, margin)
                assert reading.p_difference_holm == reading.p_difference


def test_an_equivalence_claim_reads_equivalent_contradicts_or_inconclusive():
    assert read_claims({"x": Claim(around(-0.5, 0.8), None, 1.0)})["x"].verdict == "equivalent"
    # a difference shown, but small: still equivalent to the claim "within +-margin"
    assert read_claims({"x": Claim(around(0.2, 0.6), None, 1.0)})["x"].verdict == "equivalent"
    assert read_claims({"x": Claim(around(1.2, 3.0), None, 1.0)})["x"].verdict == "contradicts"
    assert read_claims({"x": Claim(around(0.5, 3.0), None, 1.0)})["x"].verdict == "inconclusive"
    # beyond_margin_p is below 0.05 exactly when the 95% interval lies outside the margin
    assert beyond_margin_p(around(1.2, 3.0), 1.0) < 0.05 < beyond_margin_p(around(0.8, 3.0), 1.0)
    with pytest.raises(ValueError, match="needs a margin"):
        Claim(around(0.0, 1.0), None)


def test_read_claims_corrects_both_passes_with_holm():
    """Four directional claims with p-values 0.004, 0.03, 0.012, 0.5 (the read_family example):
    after Holm only the first and third are shown; the second, uncorrected 'supports', becomes
    'inconclusive' (its TOST is hopeless at margin 0.1)."""
    family = {}
    for name, p in (("a", 0.004), ("b", 0.03), ("c", 0.012), ("d", 0.5)):
        se = 1.0
        estimate = stats.t.isf(p / 2, 8.0) * se
        half = stats.t.ppf(0.975, 8.0) * se
        interval = Interval(estimate, estimate - half, estimate + half, 5, 5, 0.95, "t", p, se, 8.0)
        family[name] = Claim(interval, +1, 0.1)
    read = read_claims(family)
    assert [read[k].p_difference_holm for k in "abcd"] == pytest.approx([0.016, 0.06, 0.036, 0.5])
    assert [read[k].verdict for k in "abcd"] == ["supports", "inconclusive", "supports", "inconclusive"]
    assert all(read[k].p_equivalence_holm >= read[k].p_equivalence for k in "abcd")


def test_multiplicity_read_claims_keeps_the_family_wise_error():
    """Under the global null, 8 directional Welch comparisons (5 vs 5) per family: some claim is
    read 'supports' or 'contradicts' in about 5% of families with Holm (about a third without);
    and with every true difference on the margin (1 sd), some claim is read 'equivalent' in at
    most about 5%."""
    rng = np.random.default_rng(21)
    families, m = 500, 8
    shown = equivalent = 0
    for _ in range(families):
        a, b = rng.normal(size=(2, m, 5))
        claims = {str(j): Claim(difference_interval(a[j], b[j], paired=False), +1, None) for j in range(m)}
        shown += any(r.verdict != "inconclusive" for r in read_claims(claims).values())
        on_margin = {str(j): Claim(difference_interval(a[j] + 1.0, b[j], paired=False), None, 1.0) for j in range(m)}
        equivalent += any(r.verdict == "equivalent" for r in read_claims(on_margin).values())
    assert shown / families <= 0.08 and equivalent / families <= 0.08, (shown, equivalent)


def test_equivalence_power_is_power_to_show_equivalence_for_a_paired_design():
    assert equivalence_power(2.0 / math.sqrt(8), 7, 1.5) == pytest.approx(
        power_to_show_equivalence(8, 2.0, 1.5, paired=True))
    assert equivalence_power(3.0 * math.sqrt(2 / 6), 10, 2.0, effect=0.5) == pytest.approx(
        power_to_show_equivalence(6, 3.0, 2.0, paired=False, effect=0.5))
    with pytest.raises(ValueError, match="se and df"):
        equivalence_power(0.0, 4, 1.0)
