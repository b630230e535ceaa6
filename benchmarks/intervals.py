"""Confidence intervals, multiplicity, equivalence and verdicts for per-seed scores.

Every comparison in the protocols is read through these functions, so one vocabulary and one
set of formulas serve them all:

* :func:`mean_interval` and :func:`difference_interval`: Student t-intervals of a mean and of a
  difference (paired: on the per-pair differences; unpaired: Welch, with Welch-Satterthwaite
  degrees of freedom), each with its two-sided p-value for "the difference is 0".
* :func:`combination_interval`: the t-interval of a weighted sum of the means of independent
  groups (e.g. a sum over rows of differences of arms), Welch-Satterthwaite degrees of freedom;
  for one group it is the one-sample (or, on per-pair differences, the paired) t-interval, for
  two groups weighted +1 and -1 Welch's.
* :func:`read_claims`: a family of claims (directional, or "no difference beyond a margin"),
  each read in the four words below after Holm's correction of the family.
* :func:`holm` and :func:`read_family`: Holm-Bonferroni adjusted p-values for a family of
  comparisons, and each comparison's reading after that correction.
* :func:`equivalence`: two one-sided tests (TOST) against a margin.
* :func:`verdict`: "supports", "contradicts", "equivalent" or "inconclusive", the only words a
  protocol uses for a result.
* :func:`power_to_detect` and :func:`power_to_show_equivalence`: approximate power, from the
  noncentral t, for stating in advance what a given number of seeds can resolve;
  :func:`equivalence_power` the same from a standard error and degrees of freedom (any design).

A t-interval rather than a bootstrap: with 3 to 10 seeds the percentile bootstrap's 95% interval
covers far less than 95% (about 0.83 at n = 5 on normal data), while the t-interval keeps its
coverage on normal and moderately skewed scores (``tests/test_intervals.py`` measures both).

Holm is written out here rather than taken from statsmodels, which this project gets only
through rliable's dependencies and whose ``multipletests`` runs a full garbage collection on
every call (tens of milliseconds), too slow for simulating thousands of families; the tests
check it against statsmodels when that is installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Verdict = Literal["supports", "contradicts", "equivalent", "inconclusive"]


@dataclass(frozen=True)
class Interval:
    """A two-sided t-interval for a mean or a difference of means.

    ``n_a`` counts the values of the sample (one-sample), of the pairs (paired) or of ``a``
    (Welch); ``n_b`` is None for one sample, equals ``n_a`` when paired, and counts ``b`` for
    Welch. ``p_value`` is two-sided, for H0: the mean (difference) is 0. ``se`` and ``df`` are
    the standard error and degrees of freedom the interval was built from, so that the same
    estimate can be read at another confidence (see :func:`at_confidence`).
    """

    estimate: float
    low: float
    high: float
    n_a: int
    n_b: int | None
    confidence: float
    method: str
    p_value: float
    se: float
    df: float


@dataclass(frozen=True)
class Comparison:
    """One member of a family read with Holm's correction (see :func:`read_family`)."""

    interval: Interval  # uncorrected, at the confidence it was built with
    p_holm: float  # Holm-adjusted two-sided p-value
    significant: bool  # p_holm <= alpha


@dataclass(frozen=True)
class Equivalence:
    """The result of two one-sided tests (TOST) of ``|difference| < margin`` at level alpha.

    ``interval`` is the (1 - 2 alpha) interval (90% at alpha = 0.05); ``p_lower`` tests
    H0: difference <= -margin and ``p_upper`` H0: difference >= +margin. ``equivalent`` is True
    iff the interval lies strictly inside (-margin, +margin), which is the same as both one-sided
    p-values being below alpha.
    """

    interval: Interval
    margin: float
    alpha: float
    p_lower: float
    p_upper: float
    equivalent: bool

    @property
    def p_value(self) -> float:
        """The TOST p-value: the larger of the two one-sided ones."""
        return max(self.p_lower, self.p_upper)


def _sample(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """``x`` as a 1-D float array of at least 2 finite values, or a ValueError naming the fault."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} needs at least 2 values for a t-interval, got {arr.size}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{name} has NaN or infinite values at positions {bad.tolist()}")
    return arr


def _check_level(value: float, name: str) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")


def _upper_tail(distance: float, se: float, df: float) -> float:
    """P(T >= distance / se) for T ~ t(df); a zero ``se`` gives 0 or 1 by the sign of distance."""
    if se == 0.0:
        return 0.0 if distance > 0 else 1.0
    return float(stats.t.sf(distance / se, df))


def _interval(estimate: float, se: float, df: float, n_a: int, n_b: int | None,
              confidence: float, method: str) -> Interval:
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    p_value = min(1.0, 2 * _upper_tail(abs(estimate), se, df))
    return Interval(float(estimate), float(estimate - half), float(estimate + half), n_a, n_b,
                    confidence, method, p_value, float(se), float(df))


def at_confidence(interval: Interval, confidence: float) -> Interval:
    """The same estimate, standard error and df read at another confidence level."""
    _check_level(confidence, "confidence")
    return _interval(interval.estimate, interval.se, interval.df, interval.n_a, interval.n_b,
                     confidence, interval.method)


def mean_interval(x: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Student t-interval of the mean of ``x`` (df = n - 1), with the p-value for mean = 0.

    Values that are all equal give a zero-width interval at their mean (p = 1 if that is 0,
    else 0).
    """
    _check_level(confidence, "confidence")
    arr = _sample(x, "x")
    n = arr.size
    se = float(arr.std(ddof=1)) / math.sqrt(n)
    return _interval(float(arr.mean()), se, n - 1, n, None, confidence, "one-sample t")


def _welch(a: np.ndarray, b: np.ndarray, confidence: float) -> Interval:
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    denominator = va**2 / (a.size - 1) + vb**2 / (b.size - 1)
    # Both samples constant: df is 0/0; any df gives the same zero-width interval.
    df = (va + vb) ** 2 / denominator if denominator > 0 else a.size + b.size - 2
    return _interval(float(a.mean() - b.mean()), se, df, a.size, b.size, confidence, "Welch t")


def difference_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                        paired: bool, confidence: float = 0.95) -> Interval:
    """t-interval of mean(a) - mean(b), with the two-sided p-value for a difference of 0.

    ``paired``: ``a[i]`` and ``b[i]`` belong together (e.g. the same seed); the interval is the
    one-sample t-interval of ``a - b`` (df = pairs - 1), so a and b must have the same length.
    Unpaired: Welch's interval, unequal variances allowed, Welch-Satterthwaite df.
    """
    _check_level(confidence, "confidence")
    a_arr, b_arr = _sample(a, "a"), _sample(b, "b")
    if not paired:
        return _welch(a_arr, b_arr, confidence)
    if a_arr.size != b_arr.size:
        raise ValueError(f"paired samples need equal lengths, got len(a)={a_arr.size} "
                         f"and len(b)={b_arr.size}")
    one = mean_interval(a_arr - b_arr, confidence)
    return Interval(one.estimate, one.low, one.high, one.n_a, one.n_a, confidence, "paired t",
                    one.p_value, one.se, one.df)


def holm(p_values: Sequence[float] | np.ndarray) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    The i-th smallest of m p-values is multiplied by (m - i + 1), the products are made
    non-decreasing in that order (a running maximum) and capped at 1. Rejecting every
    hypothesis whose adjusted p-value is <= alpha controls the family-wise error rate at alpha.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p_values must be 1-D, got shape {p.shape}")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p, kind="stable")
    scaled = (p.size - np.arange(p.size)) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted.tolist()


def read_family(intervals: Mapping[str, Interval], alpha: float = 0.05) -> dict[str, Comparison]:
    """Each comparison of a family with its Holm-adjusted p-value and significance at ``alpha``.

    The intervals stay uncorrected (Holm adjusts p-values, not intervals); build them at
    confidence 1 - alpha so that their reading and the p-value agree before correction.
    """
    _check_level(alpha, "alpha")
    names = list(intervals)
    adjusted = holm([intervals[name].p_value for name in names])
    return {name: Comparison(intervals[name], p, p <= alpha) for name, p in zip(names, adjusted)}


def equivalence(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, margin: float,
                paired: bool, alpha: float = 0.05) -> Equivalence:
    """Two one-sided tests of -margin < mean(a) - mean(b) < +margin at level ``alpha``.

    Uses the same t-interval as :func:`difference_interval` (paired or Welch) at confidence
    1 - 2 alpha; ``equivalent`` iff that interval lies strictly inside (-margin, +margin).
    """
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    _check_level(alpha, "alpha")
    if alpha >= 0.5:
        raise ValueError(f"alpha must be below 0.5 for a (1 - 2 alpha) interval, got {alpha}")
    interval = difference_interval(a, b, paired, confidence=1 - 2 * alpha)
    return _tost(interval, margin, alpha)


def _tost(interval: Interval, margin: float, alpha: float) -> Equivalence:
    p_lower = _upper_tail(interval.estimate + margin, interval.se, interval.df)
    p_upper = _upper_tail(margin - interval.estimate, interval.se, interval.df)
    inside = -margin < interval.low and interval.high < margin
    return Equivalence(interval, margin, alpha, p_lower, p_upper, inside)


def verdict(interval: Interval, expected_sign: int, margin: float | None = None) -> Verdict:
    """The reading of a (1 - alpha) interval for a difference against a predicted direction.

    In this order of precedence:

    1. "supports": the interval excludes 0 on the side of ``expected_sign`` (+1 or -1);
    2. "contradicts": it excludes 0 on the other side. A difference detected against the
       prediction is never read as agreement, not even as "equivalent" when it is small;
    3. "equivalent": a ``margin`` is given and the TOST at the same alpha holds, i.e. the
       (1 - 2 alpha) interval (90% for a 95% one), rebuilt from the interval's estimate,
       standard error and df, lies strictly inside (-margin, +margin);
    4. "inconclusive": otherwise.

    Pass the (1 - alpha) interval from :func:`difference_interval`, not the 90% interval of
    :func:`equivalence`: the sign is read at 1 - alpha and the equivalence derived from it.
    """
    if expected_sign not in (1, -1):
        raise ValueError(f"expected_sign must be +1 or -1, got {expected_sign}")
    if interval.low > 0 or interval.high < 0:
        side = 1 if interval.low > 0 else -1
        return "supports" if side == expected_sign else "contradicts"
    if margin is None:
        return "inconclusive"
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    narrow = at_confidence(interval, 2 * interval.confidence - 1)
    return "equivalent" if -margin < narrow.low and narrow.high < margin else "inconclusive"


def _design(n: int, sd: float, paired: bool) -> tuple[float, float]:
    """(standard error, df) of the difference for n pairs or n seeds per arm."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    if not sd > 0:
        raise ValueError(f"sd must be > 0, got {sd}")
    if paired:
        return sd / math.sqrt(n), n - 1
    return sd * math.sqrt(2 / n), 2 * n - 2


def power_to_detect(n: int, sd: float, effect: float, paired: bool, alpha: float = 0.05) -> float:
    """Probability that the two-sided t-test at ``alpha`` finds a true difference ``effect``.

    ``paired``: n pairs and ``sd`` the standard deviation of the per-pair differences (exact for
    normal differences). Unpaired: n seeds per arm, both with standard deviation ``sd``, read
    with Student's df = 2n - 2 (Welch's df is at most that, so this is slightly optimistic).
    From the noncentral t with noncentrality effect / se.
    """
    _check_level(alpha, "alpha")
    se, df = _design(n, sd, paired)
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = effect / se
    return float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


def power_to_show_equivalence(n: int, sd: float, margin: float, paired: bool,
                              effect: float = 0.0, alpha: float = 0.05) -> float:
    """Approximate probability that the TOST at ``alpha`` declares equivalence within ``margin``.

    ``effect`` is the true difference (0 by default); ``n``, ``sd`` and ``paired`` as in
    :func:`power_to_detect`. Each one-sided test's power comes from the noncentral t; both must
    pass, and P(both) >= P(lower) + P(upper) - 1 is returned (clipped at 0): a lower bound, close
    when the power is high, crude (possibly 0) when the sample is too small for the margin.
    """
    se, df = _design(n, sd, paired)
    return equivalence_power(se, df, margin, effect, alpha)


def equivalence_power(se: float, df: float, margin: float, effect: float = 0.0,
                      alpha: float = 0.05) -> float:
    """:func:`power_to_show_equivalence` for any estimate with standard error ``se`` and ``df``
    degrees of freedom (e.g. a :func:`combination_interval`'s), the same lower bound."""
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    if not se > 0 or not df > 0:
        raise ValueError(f"se and df must be > 0, got se={se}, df={df}")
    _check_level(alpha, "alpha")
    critical = stats.t.ppf(1 - alpha, df)
    lower = stats.nct.sf(critical, df, (effect + margin) / se)
    upper = stats.nct.cdf(-critical, df, (effect - margin) / se)
    return float(max(0.0, lower + upper - 1.0))


# --- combinations of independent groups ----------------------------------------------------------

Groups = Sequence[tuple[Sequence[float] | np.ndarray, float]]  # (values, weight) per group


def combination_interval(groups: Groups, confidence: float = 0.95) -> Interval:
    """t-interval of sum_j w_j mean(x_j) over independent groups (x_j, w_j), with its p-value for 0.

    The standard error is sqrt(sum_j w_j^2 s_j^2 / n_j) and the degrees of freedom
    Welch-Satterthwaite's, (sum_j v_j)^2 / sum_j v_j^2 / (n_j - 1) with v_j = w_j^2 s_j^2 / n_j.
    One group of weight 1 gives :func:`mean_interval` (pass per-pair differences for the paired
    interval); two groups weighted +1 and -1 give Welch's :func:`difference_interval`. Every group
    needs at least 2 finite values. ``n_a`` is the smallest group's size; ``n_b`` is None for one
    group and the largest group's size otherwise. Groups that are all constant give a zero-width
    interval.
    """
    _check_level(confidence, "confidence")
    if not groups:
        raise ValueError("a combination needs at least one group")
    arrays = [(_sample(values, f"group {i}"), float(weight)) for i, (values, weight) in enumerate(groups)]
    for i, (_, weight) in enumerate(arrays):
        if not math.isfinite(weight) or weight == 0.0:
            raise ValueError(f"group {i} has weight {weight}: weights must be finite and non-zero")
    if len(arrays) == 1 and arrays[0][1] == 1.0:
        return mean_interval(arrays[0][0], confidence)
    parts = np.array([w * w * x.var(ddof=1) / x.size for x, w in arrays])
    dof = np.array([x.size - 1 for x, _ in arrays], dtype=float)
    denominator = float(np.sum(parts**2 / dof))
    df = float(parts.sum() ** 2 / denominator) if denominator > 0 else float(dof.sum())
    sizes = [x.size for x, _ in arrays]
    estimate = float(sum(w * x.mean() for x, w in arrays))
    method = "one-sample t" if len(arrays) == 1 else "Welch-Satterthwaite t"
    return _interval(estimate, math.sqrt(float(parts.sum())), df, min(sizes),
                     None if len(arrays) == 1 else max(sizes), confidence, method)


# --- claims read in one vocabulary, with Holm over a family ----------------------------------------

@dataclass(frozen=True)
class Claim:
    """What a comparison predicts, and the (1 - alpha) interval it is read from.

    ``expected_sign`` +1 or -1: the prediction is a difference of that sign ("directional").
    None: the prediction is no difference larger than ``margin`` ("equivalence"), which then
    must be given. A directional claim may carry a margin too, so that a difference shown to be
    smaller than it reads "equivalent" rather than "inconclusive".
    """

    interval: Interval
    expected_sign: int | None
    margin: float | None = None

    def __post_init__(self) -> None:
        if self.expected_sign not in (1, -1, None):
            raise ValueError(f"expected_sign must be +1, -1 or None, got {self.expected_sign}")
        if self.margin is not None and not self.margin > 0:
            raise ValueError(f"the equivalence margin must be > 0, got {self.margin}")
        if self.expected_sign is None and self.margin is None:
            raise ValueError("an equivalence claim (expected_sign None) needs a margin")


@dataclass(frozen=True)
class Reading:
    """A claim's verdict with the p-values behind it, raw and Holm-adjusted within its family.

    ``p_difference``: directional claims, two-sided for "the difference is 0"; equivalence
    claims, two-sided for "the difference lies within +-margin" (it is below alpha iff the
    (1 - alpha) interval lies entirely outside the margin). ``p_equivalence``: the TOST p-value
    against the margin (None without one).
    """

    claim: Claim
    verdict: Verdict
    p_difference: float
    p_difference_holm: float
    p_equivalence: float | None
    p_equivalence_holm: float | None


def tost(interval: Interval, margin: float, alpha: float = 0.05) -> Equivalence:
    """The TOST of an interval's estimate against ``margin``: its (1 - 2 alpha) interval, rebuilt
    from its estimate, standard error and df, and the two one-sided p-values."""
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    _check_level(alpha, "alpha")
    if alpha >= 0.5:
        raise ValueError(f"alpha must be below 0.5 for a (1 - 2 alpha) interval, got {alpha}")
    return _tost(at_confidence(interval, 1 - 2 * alpha), margin, alpha)


def beyond_margin_p(interval: Interval, margin: float) -> float:
    """Two-sided p-value for H0: |difference| <= margin: 2 P(T >= (|estimate| - margin) / se),
    capped at 1; below alpha iff the (1 - alpha) interval lies entirely outside +-margin."""
    if not margin > 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    return min(1.0, 2 * _upper_tail(abs(interval.estimate) - margin, interval.se, interval.df))


def read_claims(claims: Mapping[str, Claim], alpha: float = 0.05) -> dict[str, Reading]:
    """Each claim of a family read after Holm's correction, in the order given.

    Two Holm passes at ``alpha``: one over every claim's ``p_difference``, one over the TOST
    p-values of the claims with a margin. Then, for a directional claim: "supports" if its
    adjusted difference p-value is <= alpha and the estimate has the expected sign,
    "contradicts" if it is <= alpha with the other sign (never "equivalent", however small);
    else "equivalent" if its adjusted TOST p-value is <= alpha; else "inconclusive". For an
    equivalence claim: "equivalent" if its adjusted TOST p-value is <= alpha, else "contradicts"
    if its adjusted p-value for "within the margin" is <= alpha, else "inconclusive".

    A family of one is read without correction; for a directional claim that is
    :func:`verdict` on its interval (up to ties at alpha exactly).
    """
    _check_level(alpha, "alpha")
    names = list(claims)
    p_diff, p_equiv = {}, {}
    for name in names:
        claim = claims[name]
        if claim.expected_sign is None:
            p_diff[name] = beyond_margin_p(claim.interval, claim.margin)
        else:
            p_diff[name] = claim.interval.p_value
        if claim.margin is not None:
            p_equiv[name] = tost(claim.interval, claim.margin, alpha).p_value
    diff_holm = dict(zip(names, holm([p_diff[n] for n in names])))
    equiv_holm = dict(zip(p_equiv, holm(list(p_equiv.values()))))
    out = {}
    for name in names:
        claim, interval = claims[name], claims[name].interval
        shown, equivalent = diff_holm[name] <= alpha, name in equiv_holm and equiv_holm[name] <= alpha
        if claim.expected_sign is None:
            word: Verdict = "equivalent" if equivalent else "contradicts" if shown else "inconclusive"
        elif shown and interval.estimate != 0:
            side = 1 if interval.estimate > 0 else -1
            word = "supports" if side == claim.expected_sign else "contradicts"
        else:
            word = "equivalent" if equivalent else "inconclusive"
        out[name] = Reading(claim, word, p_diff[name], diff_holm[name], p_equiv.get(name),
                            equiv_holm.get(name))
    return out
