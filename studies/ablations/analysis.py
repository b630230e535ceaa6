"""``python -m studies.ablations.analysis``: the per-figure comparisons and verdicts of
``PROTOCOL-ablations-cpu.md`` (issue 21), read under ``PROTOCOL-reanalysis.md``.

For every figure of the paper's ablations, the protocol fixed (before its runs) a claim, a
difference D and a rule. This module computes each D from the committed records with a 95%
t-interval over seeds (paired t where the arms share each seed's pretraining, Welch otherwise)
and reads it in one vocabulary, **supports**, **contradicts**, **equivalent** or **inconclusive**:

* a difference the paper says is positive: supports if shown above 0, contradicts if shown below
  0, equivalent if shown inside the margin (two one-sided tests: the 90% interval inside
  [-5, +5] normalised points), otherwise inconclusive;
* a "comparable" claim: equivalent if shown inside [-5, +5], contradicts if shown outside it
  (the 95% interval entirely beyond the margin), otherwise inconclusive;
* the primary comparison, Fig. 2's final entropy - beta (the protocol's first), is read alone at
  0.05; every other comparison with an interval is one member of one family, read with Holm's
  correction (the Holm-adjusted p beside the uncorrected one);
* Fig. 2's lambda ratio is read against the protocol's 0.5; Fig. 12 and Appendix F keep their
  own rules (no sampling interval), their words mapped to the vocabulary; the exploratory
  ``sampling`` runs and D11x get no verdict;
* Figs. 9 and 10: a grid cell whose arms end pretraining below half the dataset's own mean
  normalised return (its card in ``paper_tables/datasets/``) is out of regime: no verdict, and
  the grid is read over the other cells.

Paired differences take the seeds where both arms completed (the arms share each seed's
pretraining). A comparison with fewer seeds than the protocol asks (5 for two-arm figures, 3 per
sweep point) gets no verdict: ``incomplete``. A figure without runs says which command makes them.
D13 and D14 (Fig. 11) are the within-run deltas of Table 1's hopper-medium runs, read as
``studies.rows.analysis`` reads C1 (the mean of each run's last k online evaluations).

Scores are D4RL-normalized (100 = expert) on data generated here by the project's forge.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from benchmarks.experiments import target_entropy
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    LOCOMOTION_MARGIN,
    Estimate,
    Registered,
    analysis_parser,
    combination_estimate,
    emit,
    gain_last_k,
    number_cell,
    read_protocol,
    row_k,
)

MARGIN = LOCOMOTION_MARGIN  # normalised points, every score difference here (PROTOCOL-reanalysis.md)
ENTROPY_MARGIN = 1.0  # Fig. 2: final entropy within 1 nat of beta (the protocol's [beta - 1, beta + 1])
ENTROPY_MEAN = 0.5  # Fig. 2: ... and its mean within 0.5 (the protocol's)
LAMBDA_RATIO = 0.5  # Fig. 2: final lambda / initial lambda below this
TWO_ARM_SEEDS, SWEEP_SEEDS = 5, 3
CORRELATION_HOLDS = 0.8  # Appendix F: sampling by length ~ by return if Pearson r > 0.8
PRIMARY = "Fig. 2 entropy"  # the protocol's first comparison
CARDS = Path(__file__).resolve().parents[2] / "paper_tables" / "datasets"


@dataclass(frozen=True)
class Comparison:
    figure: str
    label: str  # what D is, e.g. "D9 = relabel on − off (paired)"
    estimate: Estimate
    verdict: str = ""  # filled by read_all() where the comparison has a claim and no status
    per_seed: str = ""  # "s20 +1.2, s21 -0.4, ..." or the arms' per-seed scores
    digits: int = 1  # decimals of the estimate in the report
    key: str = ""  # its name in the family (unique), e.g. "D9"
    expected_sign: int | None = None  # the claim: +1 / -1, or None for "no difference beyond the margin"
    margin: float | None = None
    tested: Estimate | None = None  # what the claim is tested on, where not ``estimate`` (Fig. 2's ratio - 0.5)
    status: str | None = None  # incomplete / out of regime: no verdict, not in the family
    cells: tuple[str, ...] = ()  # a grid reading: the keys of its cells (read after them)
    min_cells: int = 0

    def text(self) -> str:
        e = self.estimate
        if np.isfinite(e.lo):  # an interval
            return e.text(digits=self.digits)
        return f"{e.mean:.3f} (n={e.n})" if np.isfinite(e.mean) else f"n={e.n}"

    @property
    def has_claim(self) -> bool:
        return bool(self.key) and not self.cells and (self.expected_sign is not None or self.margin is not None)


# ----- claims -------------------------------------------------------------------------------
def positive(figure: str, key: str, label: str, e: Estimate, min_seeds: int, per_seed: str = "",
             status: str | None = None) -> Comparison:
    """A difference the paper says is positive (margin: ``MARGIN``)."""
    return Comparison(figure, label, e, per_seed=per_seed, key=key, expected_sign=+1, margin=MARGIN,
                      status=_seed_status(e, min_seeds) or status)


def comparable(figure: str, key: str, label: str, e: Estimate, min_seeds: int, per_seed: str = "") -> Comparison:
    """A claim that two settings give comparable returns: no difference beyond ``MARGIN``."""
    return Comparison(figure, label, e, per_seed=per_seed, key=key, expected_sign=None, margin=MARGIN,
                      status=_seed_status(e, min_seeds))


def _seed_status(e: Estimate, min_seeds: int) -> str | None:
    return None if e.n >= min_seeds else f"incomplete (n={e.n} < {min_seeds})"


def read_all(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Every comparison with its verdict: the primary alone, every other one with a claim as one
    Holm family (``reproduction.read_protocol``), grid readings from their in-regime cells, Fig. 2's
    condition on the entropy gap's mean applied after its test."""
    registered = [Registered(c.key, c.tested or c.estimate, c.expected_sign, c.margin, c.key == PRIMARY, c.status)
                  for c in comparisons if c.has_claim]
    verdicts = read_protocol(registered)
    out = []
    for c in comparisons:
        if c.has_claim:
            v = verdicts[c.key]
            text = v.text()
            if c.key == PRIMARY and v.word == "equivalent" and abs(c.estimate.mean) > ENTROPY_MEAN:
                text = f"inconclusive (equivalent within ±{ENTROPY_MARGIN:g} but |mean| > {ENTROPY_MEAN:g}; {text})"
            c = dataclasses.replace(c, verdict=text)
        out.append(c)
    words = {c.key: c.verdict for c in out if c.key}
    return [dataclasses.replace(c, verdict=grid_verdict([words[k] for k in c.cells], c.min_cells)) if c.cells else c
            for c in out]


def verdict_word(text: str) -> str:
    """The verdict word at the start of a verdict's text (markdown bold removed)."""
    return text.replace("*", "").split(" (")[0].strip()


def grid_verdict(cell_texts: Sequence[str], cells: int) -> str:
    """Figs. 9-10 over the grid's in-regime cells (``PROTOCOL-reanalysis.md``): incomplete if one
    of them is (or a cell has no runs); contradicts if one contradicts; supports if at least 3/4 of
    them (rounded up) support and none is equivalent; equivalent if all are; else inconclusive."""
    words = [verdict_word(t) for t in cell_texts]
    in_regime = [w for w in words if not w.startswith("out of regime")]
    if any(w.startswith("incomplete") for w in in_regime) or len(words) < cells:
        return "incomplete"
    if not in_regime:
        return "out of regime (no cell in regime)"
    if "contradicts" in in_regime:
        return "contradicts"
    if in_regime.count("supports") >= math.ceil(0.75 * len(in_regime)) and "equivalent" not in in_regime:
        return "supports"
    if all(w == "equivalent" for w in in_regime):
        return "equivalent"
    return "inconclusive"


# ----- differences between arms ---------------------------------------------------------------
def arm(runs: pd.DataFrame, variant: str, dataset: str | None = None, method: str | None = None,
        value: str = "final_score") -> pd.Series:
    """``value`` of the complete runs of one arm, indexed by seed."""
    sel = runs[(runs.variant == variant) & (runs.status == "complete")]
    if dataset is not None:
        sel = sel[sel.dataset == dataset]
    if method is not None:
        sel = sel[sel.method == method]
    return sel.set_index("seed")[value].astype(float).dropna().sort_index()


def _seed_text(values: pd.Series) -> str:
    return ", ".join(f"s{s} {v:+.1f}" for s, v in values.items())


def paired(a: pd.Series, b: pd.Series) -> tuple[Estimate, str]:
    """mean(a - b) over the seeds both have, with its paired t-interval, and the per-seed differences."""
    diff = (a - b).dropna()
    return combination_estimate([(diff.to_numpy(), 1.0)]), _seed_text(diff)


def unpaired(a: pd.Series, b: pd.Series) -> tuple[Estimate, str]:
    """mean(a) - mean(b), two independent arms (Welch's t-interval); the per-seed scores of both arms."""
    text = f"A: {_seed_text(a) or '—'}; B: {_seed_text(b) or '—'}"
    return combination_estimate([(a.to_numpy(), 1.0), (b.to_numpy(), -1.0)]), text


# ----- curve-derived values -------------------------------------------------------------------
def online_rows(curves: pd.DataFrame) -> pd.DataFrame:
    return curves[(curves.status == "complete") & (curves.phase == "online")]


def best_minus_final(curves: pd.DataFrame, variant: str) -> pd.Series:
    """Per seed: the highest online evaluation minus the last one (how much a run lost from its peak)."""
    rows = online_rows(curves[curves.variant == variant]).sort_values(["seed", "step"])
    return rows.groupby("seed").score_mean.agg(lambda s: s.max() - s.iloc[-1]).astype(float)


def mean_abs_change(curves: pd.DataFrame, method: str, dataset: str) -> pd.Series:
    """Per seed: the mean absolute change between consecutive online evaluations (Fig. 11's instability)."""
    rows = online_rows(curves[(curves.method == method) & (curves.dataset == dataset)]).sort_values(["seed", "step"])
    return rows.groupby("seed").score_mean.agg(lambda s: float(np.abs(np.diff(s.to_numpy())).mean())
                                              if len(s) > 1 else np.nan).astype(float).dropna()


def sweep_score(curves: pd.DataFrame, phase: str, multiple: float) -> pd.Series:
    """Per seed: the normalized return of the g_eval sweep point ``multiple`` x g* after ``phase``."""
    rows = curves[(curves.status == "complete") & (curves.phase == phase)]
    rows = rows[np.isclose(rows.g_eval_multiple.astype(float), multiple)]
    return rows.groupby("seed").score_mean.mean().astype(float)


def complete_in_order(curves: pd.DataFrame) -> pd.DataFrame:
    """The complete runs' evaluation rows, each run's in the order they were logged."""
    return curves[curves.status == "complete"].sort_values(["run_id", "step"])


def last_row(curves: pd.DataFrame) -> pd.DataFrame:
    """Each complete run's last evaluation row."""
    return complete_in_order(curves).groupby("run_id").tail(1).set_index("run_id")


# ----- the figures ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Data:
    runs: dict[str, pd.DataFrame]  # experiment -> load_runs frame
    curves: dict[str, pd.DataFrame]  # experiment -> load_results frame


def _two_arm(data: Data, figure: str, experiment: str, key: str, label: str, a: str, b: str,
             dataset: str | None = None, rule=positive, min_seeds: int = TWO_ARM_SEEDS,
             pairing=paired) -> Comparison:
    runs = data.runs[experiment]
    e, text = pairing(arm(runs, a, dataset), arm(runs, b, dataset))
    return rule(figure, key, label, e, min_seeds, text)


def fig2_convergence(data: Data) -> list[Comparison]:
    """Table 1's ``odt`` on hopper-medium: final entropy - beta (beta = -|A|), and the final
    lambda over the initial one. The protocol: the entropy gap's mean within 0.5 and its interval
    inside [-1, +1] (read as two one-sided tests against a 1-nat margin, the mean condition on top),
    and the lambda ratio's interval below 0.5 (its t-interval of ratio - 0.5 below 0)."""
    curves = data.curves["table1"]
    odt = curves[(curves.method == "odt") & (curves.dataset == "hopper-medium")]
    last = last_row(odt).set_index("seed").sort_index()
    beta = target_entropy("hopper-medium")
    gap = last.entropy.astype(float) - beta
    ratio = last["lambda"].astype(float) / last["lambda_init"].astype(float)
    e_gap = combination_estimate([(gap.to_numpy(), 1.0)])
    e_ratio = combination_estimate([(ratio.to_numpy(), 1.0)])
    tested = combination_estimate([(ratio.to_numpy() - LAMBDA_RATIO, 1.0)])
    return [Comparison("Fig. 2", "final entropy − β (β = −3), 0 at convergence (≈ 0 within ±1 nat)", e_gap,
                       per_seed=_seed_text(gap), digits=2, key=PRIMARY, expected_sign=None,
                       margin=ENTROPY_MARGIN, status=_seed_status(e_gap, TWO_ARM_SEEDS)),
            Comparison("Fig. 2", f"final λ / initial λ (claim: below {LAMBDA_RATIO:g})", e_ratio,
                       per_seed=", ".join(f"s{s} {v:.2f}" for s, v in ratio.items()), digits=2,
                       key="Fig. 2 lambda", expected_sign=-1, tested=tested,
                       status=_seed_status(e_ratio, TWO_ARM_SEEDS))]


def fig3_g_eval(data: Data) -> list[Comparison]:
    curves = data.curves["g_eval"]
    if curves.empty:
        return []
    pre = (sweep_score(curves, "sweep-pretrained", 1.0), sweep_score(curves, "sweep-pretrained", 0.25))
    fine = (sweep_score(curves, "sweep-finetuned", 1.0), sweep_score(curves, "sweep-finetuned", 0.25))
    e1, t1 = paired(*pre)
    e2, t2 = paired(pre[0] - pre[1], fine[0] - fine[1])
    return [positive("Fig. 3 / 5 (L)", "D1", "D1 = R(1.0 g*) − R(0.25 g*) after pretraining (paired)", e1,
                     SWEEP_SEEDS, t1),
            positive("Fig. 3 / 5 (L)", "D2", "D2 = D1 after pretraining − D1 after finetuning (paired)", e2,
                     SWEEP_SEEDS, t2)]


def fig4_stoch(data: Data) -> list[Comparison]:
    runs, curves = data.runs["stoch_vs_det"], data.curves["stoch_vs_det"]
    out = []
    for size in ("small", "large"):
        s, d = f"{size},stochastic", f"{size},deterministic"
        e3, t3 = unpaired(arm(runs, s), arm(runs, d))
        out.append(positive("Fig. 4", f"D3 ({size})", f"D3 ({size}) = stochastic − deterministic final (unpaired)",
                            e3, TWO_ARM_SEEDS, t3))
        e4, t4 = unpaired(best_minus_final(curves, d), best_minus_final(curves, s))
        out.append(positive("Fig. 4", f"D4 ({size})",
                            f"D4 ({size}) = deterministic (best − final) − stochastic (best − final)", e4,
                            TWO_ARM_SEEDS, t4))
    return out


def fig5_g_online(data: Data) -> list[Comparison]:
    return [_two_arm(data, "Fig. 5 (R)", "g_online", "D5", "D5 = R(2x) − R(1x) (paired; comparable)",
                     "g_online=2x", "g_online=1x", rule=comparable, min_seeds=SWEEP_SEEDS),
            _two_arm(data, "Fig. 5 (R)", "g_online", "D6", "D6 = R(2x) − R(10x) (paired)",
                     "g_online=2x", "g_online=10x", min_seeds=SWEEP_SEEDS)]


def fig6_curriculum(data: Data) -> list[Comparison]:
    return [_two_arm(data, "Fig. 6", "curriculum", "D7", "D7 = fixed − q=90 (paired)", "fixed", "q=90",
                     min_seeds=SWEEP_SEEDS),
            _two_arm(data, "Fig. 6", "curriculum", "D8", "D8 = q=90 − q=10 (paired)", "q=90", "q=10",
                     min_seeds=SWEEP_SEEDS)]


def fig7_hindsight(data: Data) -> list[Comparison]:
    return [_two_arm(data, "Fig. 7", "hindsight", "D9", "D9 = relabeling on − off (paired)",
                     "relabel=True", "relabel=False")]


def _datasets(data: Data, experiment: str) -> list[str]:
    return sorted(data.runs[experiment].dataset.unique())


def fig8_buffer_init(data: Data) -> list[Comparison]:
    return [_two_arm(data, "Fig. 8", "buffer_init", f"D10 ({d})", f"D10 ({d}) = top-N − random init (paired)",
                     "init=top", "init=random", dataset=d) for d in _datasets(data, "buffer_init")]


def grid_settings(runs: pd.DataFrame) -> list[str]:
    """The lr x wd settings of a Figs. 9-10 experiment: what follows the arm in ``arm,setting`` variants."""
    return sorted({v.split(",", 1)[1] for v in runs.variant if "," in v})


def data_mean(dataset: str) -> float | None:
    """The dataset's own mean normalised return, from its committed card (None without one)."""
    path = CARDS / f"{dataset}.card.json"
    if not path.is_file():
        return None
    return float(json.loads(path.read_text())["normalized_returns"]["mean"])


def regime_status(runs: pd.DataFrame, arms: Sequence[str]) -> str | None:
    """"out of regime (...)" when an arm's mean end-of-pretraining score lies below half the
    dataset's own mean normalised return (``PROTOCOL-reanalysis.md``, fixed before this reading):
    the claim is about finetuning a policy that has learned the data. None otherwise."""
    for dataset in sorted(set(runs.dataset)):
        mean = data_mean(dataset)
        if mean is None:
            continue
        for a in arms:
            pretrained = arm(runs, a, dataset, value="offline_score")
            if len(pretrained) and pretrained.mean() < mean / 2:
                return (f"out of regime (pretraining ends at {pretrained.mean():.1f} < half the data's "
                        f"mean {mean:.1f})")
    return None


def _grid(data: Data, figure: str, experiment: str, name: str, better: str, worse: str) -> list[Comparison]:
    """Figs. 9-10: per lr x wd cell, ``better`` - ``worse`` unpaired, each cell out of regime where
    its pretraining ends below half the data's mean; the grid read from its in-regime cells
    (:func:`grid_verdict`)."""
    runs = data.runs[experiment]
    out = []
    for setting in grid_settings(runs):
        a, b = f"{better},{setting}", f"{worse},{setting}"
        e, text = unpaired(arm(runs, a), arm(runs, b))
        out.append(positive(figure, f"{name} ({setting})", f"{name} ({setting}) = {better} − {worse} (unpaired)", e,
                            SWEEP_SEEDS, text, status=regime_status(runs, (a, b))))
    if out:
        n = min(c.estimate.n for c in out)
        out.append(Comparison(figure, f"{name} over the grid's in-regime cells: supports in >= 3/4 of them, "
                                      "contradicted or equivalent in none",
                              Estimate(float("nan"), float("nan"), float("nan"), n), key=f"{name} grid",
                              cells=tuple(c.key for c in out), min_cells=4))
    return out


def shared_pretraining(curves: pd.DataFrame, a: str, b: str) -> list[int]:
    """Seeds at which arms ``a`` and ``b`` pretrained the same network: complete in both, with the
    same training loss at every pretraining evaluation (checked, not assumed)."""
    pre = curves[(curves.status == "complete") & (curves.phase == "pretrain")].sort_values("step")
    loss = {v: pre[pre.variant == v].groupby("seed").loss.agg(tuple) for v in (a, b)}
    return sorted(s for s in loss[a].index.intersection(loss[b].index) if loss[a][s] == loss[b][s])


def fig9_eval_context(data: Data) -> list[Comparison]:
    """D11 as registered (unpaired), then, exploratory and without a verdict (the protocol's note of
    2026-11-28): the arms share each seed's pretraining, so their end-of-pretraining scores are one
    network rolled out with context 1 and with context 5, paired by seed."""
    out = _grid(data, "Fig. 9", "eval_context", "D11", "ctx=1", "ctx=5")
    runs, curves = data.runs["eval_context"], data.curves["eval_context"]
    for setting in grid_settings(runs):
        a, b = f"ctx=1,{setting}", f"ctx=5,{setting}"
        seeds = shared_pretraining(curves, a, b)
        e, text = paired(arm(runs, a, value="offline_score").reindex(seeds),
                         arm(runs, b, value="offline_score").reindex(seeds))
        out.append(Comparison("Fig. 9", f"D11x ({setting}) = ctx=1 − ctx=5 after pretraining, one network "
                                        "(paired; exploratory)", e, "no verdict (not registered)", text))
    return out


def fig10_pos_embedding(data: Data) -> list[Comparison]:
    return _grid(data, "Fig. 10", "pos_embedding", "D12", "pos=False", "pos=True")


def fig11_stability(data: Data) -> list[Comparison]:
    """Table 1's hopper-medium runs: ODT's and IQL's within-run deltas (the row's k, as C1 reads
    them), SAC's instability against ODT's."""
    runs, curves, d = data.runs["table1"], data.curves["table1"], "hopper-medium"
    k = row_k(curves, runs, d)
    gain = {m: gain_last_k(curves, runs, m, d, k) for m in ("odt", "iql")}
    e13 = combination_estimate([(gain["odt"].to_numpy(), 1.0)])
    e14 = combination_estimate([(gain["iql"].to_numpy(), 1.0)])
    e15, t15 = unpaired(mean_abs_change(curves, "sac", d), mean_abs_change(curves, "odt", d))
    return [positive("Fig. 11", "D13", f"D13 = ODT within-run δ (mean of its last {k} online evaluations − its end "
                     "of pretraining)", e13, TWO_ARM_SEEDS, _seed_text(gain["odt"])),
            comparable("Fig. 11", "D14", f"D14 = IQL within-run δ (last {k} online evaluations − its end of offline "
                       "training; comparable to 0)", e14, TWO_ARM_SEEDS, _seed_text(gain["iql"])),
            positive("Fig. 11", "D15", "D15 = SAC − ODT mean absolute change between consecutive online evaluations",
                     e15, TWO_ARM_SEEDS, t15)]


NEAR_BETA = 0.5  # Fig. 12's protocol: a run's entropy counts as at β within this many nats


def fig12_lambda(data: Data) -> list[Comparison]:
    """Supports if every run's final entropy is within 0.5 of beta = -6 and the 5 initial values'
    mean final lambdas lie in (0, 1) with a spread below 0.1; contradicts if one is >= 1 or the
    spread exceeds 0.3 (the protocol's rule, no sampling interval; its words mapped)."""
    curves = data.curves["lambda"]
    if curves.empty:
        return []
    last = last_row(curves)
    beta = target_entropy("walker2d-medium")
    means = last.groupby("variant")["lambda"].mean().astype(float)
    gap = (last.entropy.astype(float) - beta).abs()
    n = int(last.groupby("variant").size().min())
    spread = float(means.max() - means.min())
    if n < SWEEP_SEEDS or len(means) < 5:
        verdict = f"incomplete (n={n}, {len(means)} of 5 values)"
    elif (means >= 1).any() or spread > 0.3:
        verdict = "contradicts (the protocol's rule: a mean λ >= 1 or spread > 0.3)"
    elif (gap <= NEAR_BETA).all() and (means > 0).all() and spread < 0.1:
        verdict = "supports (the protocol's rule)"
    else:
        verdict = "inconclusive (the protocol's rule)"
    text = ", ".join(f"{v}: λ {m:.3f}" for v, m in means.items()) + "; per run: " + \
        _lambda_runs(last.join(_where_beta_binds(curves, beta)), beta)
    registered = Comparison("Fig. 12", f"spread of mean final λ over initial values (largest distance of entropy to β: "
                                       f"{gap.max():.2f})", Estimate(spread, float("nan"), float("nan"), n), verdict, text)
    return [registered, _lambda_where_bound(last, gap)]


def _lambda_where_bound(last: pd.DataFrame, gap: pd.Series) -> Comparison:
    """Exploratory (protocol's note of 2026-12-03, written after seed 20 of λ0 = 10 and 100): the same
    spread over only the initial values all of whose runs end with entropy within 0.5 of β, i.e.
    where the constraint binds and the paper's claim is about λ's resting value."""
    bound = gap.le(NEAR_BETA).groupby(last.variant).all()
    values = [v for v in bound.index if bound[v]]
    kept = last[last.variant.isin(values)].groupby("variant")["lambda"]
    means, n = kept.mean().astype(float), int(kept.size().min()) if values else 0
    spread = float(means.max() - means.min()) if len(means) > 1 else float("nan")
    text = (", ".join(f"{v}: λ {m:.3f}" for v, m in means.items()) or "no initial value's runs all reach β") + \
        f"; not reaching β: {', '.join(v for v in bound.index if not bound[v]) or 'none'}"
    label = f"spread of mean final λ over the initial values whose runs all reach β ({len(values)} of {len(bound)}; exploratory)"
    return Comparison("Fig. 12", label, Estimate(spread, float("nan"), float("nan"), n),
                      "no verdict (exploratory)", text, 3)


def _where_beta_binds(curves: pd.DataFrame, beta: float, within: float = NEAR_BETA) -> pd.DataFrame:
    """Per complete run (index run_id): ``beta_at``, the updates of its first evaluation after its
    entropy's peak whose entropy is no more than ``within`` above β (the way down: a fresh policy's
    first evaluations can sit near β before the entropy rises), and ``lambda_low``, its lowest λ
    from there on (both NaN for a run whose entropy never comes down that low)."""
    rows = {}
    for run_id, g in complete_in_order(curves).groupby("run_id"):
        entropy = g.entropy.astype(float).to_numpy()
        peak = np.nanargmax(entropy) if np.isfinite(entropy).any() else len(g)  # no entropy logged: never
        near = (entropy - beta <= within) & (np.arange(len(g)) >= peak)
        after = g[near.cumsum() > 0]
        rows[run_id] = ((float(after.updates.iloc[0]), float(after["lambda"].astype(float).min())) if len(after)
                        else (float("nan"), float("nan")))
    return pd.DataFrame.from_dict(rows, orient="index", columns=["beta_at", "lambda_low"])


def _lambda_runs(last: pd.DataFrame, beta: float) -> str:
    """Each run's final λ, entropy − β and updates, and where its entropy first came within 0.5 of β
    with its lowest λ after that: λ0 values that stop before the constraint binds are read at
    another stage than those whose entropy reached β."""
    def bound(r) -> str:
        if pd.isna(r.beta_at):
            return f"never within {NEAR_BETA:g} of β after its peak"
        return f"within {NEAR_BETA:g} of β from {_thousands(r.beta_at)}, lowest λ since {float(r.lambda_low):.3f}"

    rows = last.sort_values(["lambda_init", "seed"])
    return ", ".join(f"{r.variant} s{r.seed} λ {float(r['lambda']):.3f} (entropy − β {float(r.entropy) - beta:+.2f}, "
                     f"{_thousands(r.updates)} updates; {bound(r)})" for _, r in rows.iterrows())


def _thousands(n) -> str:
    return "?" if pd.isna(n) else f"{float(n) / 1000:.1f}k"


def appendix_f_sampling(data: Data) -> list[Comparison]:
    """The exploratory ``sampling`` experiment (not in the paper's figures; registered with no
    verdict): finetuning with trajectories drawn in proportion to return against to length. The
    rule also sets how pretraining batches draw, so the arms differ from the start: unpaired, and
    the end-of-pretraining difference is shown beside the final one."""
    runs, out = data.runs["sampling"], []
    for phase, value in (("final", "final_score"), ("end of pretraining", "offline_score")):
        e, text = unpaired(arm(runs, "sampling=return", value=value), arm(runs, "sampling=length", value=value))
        out.append(Comparison("Appendix F (runs)", f"return − length, {phase} (unpaired; exploratory)", e,
                              "no verdict (exploratory)" if e.n >= TWO_ARM_SEEDS else f"incomplete (n={e.n} < "
                              f"{TWO_ARM_SEEDS})", text))
    return out


def appendix_d_table_rtg(data: Data) -> list[Comparison]:
    return [_two_arm(data, "Appendix D", "table_rtg", f"D16 ({d})", f"D16 ({d}) = R(2g*) − R(g*) (paired; comparable)",
                     "g_online=2g*", "g_online=g*", dataset=d, rule=comparable)
            for d in _datasets(data, "table_rtg")]


FIGURES: list[tuple[str, str, tuple[str, ...], Callable[[Data], list[Comparison]]]] = [
    # (figure, the paper's claim, experiments it reads, how it is computed)
    ("Fig. 2", "return converges; entropy converges to β = −dim(A); λ decreases towards 0", ("table1",), fig2_convergence),
    ("Fig. 3 / 5 (L)", "after pretraining the return rises with g_eval; after finetuning it is much less sensitive",
     ("g_eval",), fig3_g_eval),
    ("Fig. 4", "a deterministic head declines and varies more than ODT's stochastic one", ("stoch_vs_det",), fig4_stoch),
    ("Fig. 5 (R)", "returns are stable for g_online of 1-2x expert and decrease beyond", ("g_online",), fig5_g_online),
    ("Fig. 6", "a fixed g_online beats the curriculum; larger q does better", ("curriculum",), fig6_curriculum),
    ("Fig. 7", "without hindsight relabeling ODT saturates at a lower return", ("hindsight",), fig7_hindsight),
    ("Fig. 8", "top-N buffer initialisation slightly beats random N", ("buffer_init",), fig8_buffer_init),
    ("Fig. 9", "evaluation context 1 beats 5 on ant-medium-replay at every lr and wd", ("eval_context",), fig9_eval_context),
    ("Fig. 10", "finetuning without positional embedding beats with it at every lr and wd", ("pos_embedding",),
     fig10_pos_embedding),
    ("Fig. 11", "ODT improves on its pretraining, IQL stays level, SAC from scratch fluctuates", ("table1",),
     fig11_stability),
    ("Fig. 12", "from λ0 in {1, 2, 5, 10, 100} entropy reaches β and λ converges to one value in (0, 1)",
     ("lambda",), fig12_lambda),
    ("Appendix D", "g_online = 2g* and g* give comparable returns", ("table_rtg",), appendix_d_table_rtg),
    ("Appendix F (runs)", "not a claim of the paper (exploratory): finetuning with trajectories sampled by return "
     "instead of by length", ("sampling",), appendix_f_sampling),
]
COMMANDS = {  # the protocol's commands, for figures with no runs yet
    "g_eval": "g_eval --preset cpu --seeds 3", "stoch_vs_det": "stoch_vs_det --preset cpu --seeds 5 "
    "--set online.online_samples=20000", "g_online": "g_online --preset cpu --seeds 3",
    "curriculum": "curriculum --preset cpu --seeds 3", "hindsight": "hindsight --preset cpu --seeds 5",
    "buffer_init": "buffer_init --preset cpu --seeds 5 --datasets hopper-medium walker2d-medium",
    "eval_context": "eval_context --preset cpu --seeds 3 --make-datasets",
    "pos_embedding": "pos_embedding --preset cpu --seeds 3 --make-datasets", "lambda": "lambda --preset cpu --seeds 3",
    "table_rtg": "table_rtg --preset cpu --seeds 5 --datasets hopper-medium walker2d-medium", "table1": "table1 --preset cpu",
    "sampling": "sampling --preset cpu --seeds 5",
}


def load(root: Path | str, preset: str) -> Data:
    experiments = sorted({e for _, _, exps, _ in FIGURES for e in exps})
    runs = {e: agg.load_runs(root, preset, e) for e in experiments}
    curves = {}
    for e in experiments:
        c = agg.load_results(root, preset, e)
        for col in ("phase", "score_mean", "entropy", "lambda", "g_eval_multiple", "loss", "updates"):
            if col not in c:
                c[col] = np.nan
        curves[e] = _with_initial_lambda(c, root, preset, e)
    return Data(runs, curves)


def _with_initial_lambda(curves: pd.DataFrame, root, preset: str, experiment: str) -> pd.DataFrame:
    """Each row gets its run's configured initial lambda (``optim.init_lambda`` of config.json)."""
    init = {}
    for directory in rec.iter_run_dirs(root, preset, experiment):
        path = directory / "config.json"
        if path.exists():
            init[directory.name] = (rec.read_json(path).get("optim") or {}).get("init_lambda")
    return curves.assign(lambda_init=curves.run_id.map(init))


# ----- Appendix F: no runs, the datasets themselves -------------------------------------------
def sampling_correlations(datasets: Sequence[str]) -> list[tuple[str, float | None, str]]:
    """(dataset, Pearson r between P(trajectory) by length and by return, note) for each dataset
    that loads here; None with the reason for one that does not."""
    from benchmarks.datasets import load_dataset
    from benchmarks.datasets.loading import content_sha256

    out = []
    for name in datasets:
        try:
            traj = load_dataset(name).trajectories
        except Exception as exc:  # not on this machine: said, not guessed
            out.append((name, None, f"not on disk here ({type(exc).__name__})"))
            continue
        lengths = traj.lengths.astype(float)
        returns = np.clip(traj.returns().astype(float), 0.0, None)
        r = float(np.corrcoef(lengths / lengths.sum(), returns / returns.sum())[0, 1])
        out.append((name, r, f"content {content_sha256(traj)[:8]}, {len(lengths)} trajectories"))
    return out


def previous_correlations(report: str) -> dict[str, tuple[float, str]]:
    """Appendix F's computed rows in an earlier report's text: dataset -> (r, data column)."""
    rows, table = {}, report.partition("## Appendix F")[2].partition("\n## ")[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4:
            try:
                rows[cells[0]] = (float(cells[1]), cells[3])
            except ValueError:  # the header, the rule, or a row never computed ("—")
                continue
    return rows


def keep_previous(correlations: Sequence[tuple[str, float | None, str]], report: str,
                  source: str) -> list[tuple[str, float | None, str]]:
    """``correlations`` with each dataset not on disk here given its row from the earlier ``report``
    (its data column names the file's content), so that regenerating on a machine without a
    dataset does not erase what another machine computed; each kept row is said on stderr."""
    before, out = previous_correlations(report), []
    for name, r, note in correlations:
        if r is None and name in before:
            r, note = before[name]
            print(f"Appendix F: {name} is not on disk here; kept its row from {source} ({note})", file=sys.stderr)
        out.append((name, r, note))
    return out


# ----- the report ------------------------------------------------------------------------------
def compute_all(data: Data) -> list[tuple[str, str, tuple[str, ...], list[Comparison]]]:
    """Every figure's comparisons, read together (:func:`read_all`): (figure, claim, experiments,
    its comparisons; empty where an experiment has no runs)."""
    computed = []
    for figure, claim, experiments, compute in FIGURES:
        have = all(not data.runs[e].empty for e in experiments)
        computed.append((figure, claim, experiments, compute(data) if have else []))
    read = iter(read_all([c for *_, rows in computed for c in rows]))
    return [(figure, claim, experiments, [next(read) for _ in rows]) for figure, claim, experiments, rows in computed]


def report_lines(data: Data, preset: str, correlations: Sequence[tuple[str, float | None, str]] = ()) -> list[str]:
    lines = [f"# The ablation figures against `PROTOCOL-ablations-cpu.md` (preset `{preset}`), read under "
             "`PROTOCOL-reanalysis.md`", "",
             f"Generated by `python -m studies.ablations.analysis --preset {preset}"
             f"{' --correlations ' + ' '.join(c[0] for c in correlations) if correlations else ''}` from the committed records; "
             f"data generated here by the project's forge (not D4RL). {INTERVAL_METHOD}. Primary: Fig. 2's final "
             "entropy − β (the protocol's first comparison), read alone at 0.05; every other verdict with a p-value "
             "is one member of one family read with Holm's correction (the Holm-adjusted p beside the uncorrected "
             "one; intervals uncorrected). Positive claims: supports if shown above 0, contradicts if shown below "
             f"0, equivalent if shown inside ±{MARGIN:g} (two one-sided tests: the 90% interval inside the margin); "
             f"comparable claims: equivalent if shown inside ±{MARGIN:g}, contradicts if shown beyond it. Figs. 9-10: "
             "a cell whose pretraining ends below half the dataset's mean normalised return is out of regime. "
             f"No verdict below {TWO_ARM_SEEDS} seeds (two arms) or {SWEEP_SEEDS} (a sweep point).", "",
             "| figure | the paper's claim | comparison | ours | verdict |", "|---|---|---|---|---|"]
    details = []
    for figure, claim, experiments, rows in compute_all(data):
        if not rows:
            cmd = "; ".join(f"`python -m benchmarks.run {COMMANDS[e]}`" for e in experiments)
            lines.append(f"| {figure} | {claim} | no runs yet ({cmd}) | — | — |")
            continue
        for i, c in enumerate(rows):
            lines.append(f"| {figure if i == 0 else ''} | {claim if i == 0 else ''} | {c.label} | {c.text()} | {c.verdict} |")
            if c.per_seed:
                details.append(f"- {figure}, {c.label}: {c.per_seed}")
    lines += ["", "## Appendix F: sampling by length against by return (no runs)", "",
              f"Pearson r between each trajectory's probability by length and by return (the data themselves, no "
              f"sampling interval); the protocol's rule: supports on a dataset if r > {CORRELATION_HOLDS}, else "
              "contradicts. A dataset not on the machine that wrote this report keeps the row an "
              "earlier report computed (its data column names the file's content); one never computed is listed "
              "with —.", "",
              "| dataset | r | verdict | data |", "|---|---|---|---|"]
    for name, r, note in correlations:
        verdict = "—" if r is None else ("supports" if r > CORRELATION_HOLDS else "contradicts")
        lines.append(f"| {name} | {number_cell(r, '.3f')} | {verdict} | {note} |")
    lines += ["", "## Per seed", "", *details, "", *origin_lines(data), ""]
    return lines


def origin_lines(data: Data) -> list[str]:
    """Where each experiment's complete runs ran (code, CPU, torch, data file; a mix is counted)
    and the CPU core-hours they took."""
    lines = ["## Where the runs ran", "",
             "Per experiment with complete runs, over its variants and datasets; a mixed column lists "
             "each value with its number of runs; core-h: the CPU core-hours of those runs (each run's "
             "one attempt, or the compute time a resumed run's counters kept, times its torch threads). "
             "Table 1's runs (Figs. 2 and 11) are listed per cell "
             "in Table 1's own section of the same name.", "",
             "| experiment | runs | core-h | " + " | ".join(agg.ORIGIN.values()) + " |",
             "|---|---|---|" + "---|" * len(agg.ORIGIN)]
    for experiment, runs in sorted(data.runs.items()):
        ok = runs[runs.status == "complete"] if experiment != "table1" else runs.iloc[:0]
        if not ok.empty:
            lines.append(f"| {experiment} | {len(ok)} | {agg.core_hours_cell(ok)} | " + " | ".join(agg.origin_cells(ok)) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = analysis_parser("python -m studies.ablations.analysis", __doc__, "paper_tables/ablations_cpu.md", seeds=False)
    p.add_argument("--correlations", nargs="*", default=None, metavar="DATASET",
                   help="Appendix F: the datasets whose length/return correlation to compute (default: none, so "
                        "the report does not depend on what this machine holds); one not on disk keeps its row "
                        "from the --out file if that has it")
    args = p.parse_args(argv)
    data = load(args.results, args.preset)
    correlations = sampling_correlations(args.correlations or ())
    if args.out and args.out.is_file():
        correlations = keep_previous(correlations, args.out.read_text(), str(args.out))
    return emit("\n".join(report_lines(data, args.preset, correlations)), args.out)


if __name__ == "__main__":
    sys.exit(main())
