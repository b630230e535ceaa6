"""``python -m studies.online_200k.analysis``: the registered reading of ``PROTOCOL-online-200k-cpu.md``.

From the ``online_200k`` runs (preset ``cpu-200k``, hopper-medium): ``odt``, its update-matched
no-new-data control ``odt-control-matched`` (seeds 0-9, paired by seed) and ``iql`` (seeds 0-4),
in the protocol's terms:

* a run's **score at 200k**: the mean of its last ``LAST_K`` = 3 online evaluations; its
  **within-run gain**: that minus its end of pretraining (IQL: its end of offline training);
* **D200** (primary, read alone): ODT - control score at 200k, paired by seed, paired
  t-interval; read at two looks (amendment A4, O'Brien-Fleming for two equally spaced looks at
  overall two-sided 0.05): once on seeds 0-4 at nominal alpha 0.005 (a verdict only where the
  99.5% interval excludes 0, else the study continues) and once on seeds 0-9 at 0.048 (95.2%
  interval, equivalence with the 90.4% interval);
* **D5k, D25k, D50k, D100k**: ODT - control at the first evaluated round at which the ODT twin has
  used at least that many online samples, that single evaluation, the control read at the same
  round (its updates match its twin's round by round), paired by seed;
* **G**: ODT's within-run gain - IQL's, Welch (independent sets);
* D5k-D100k and G are one family read after Holm's correction; every claim is "> 0" with an
  equivalence margin of ``MARGIN`` = 10 normalised points. Words (``benchmarks.intervals``):
  supports, contradicts, equivalent, inconclusive. A comparison has no verdict ("incomplete")
  until the protocol's seeds are in: 10 pairs, and for G 10 ODT and 5 IQL runs;
* where each arm's runs ran (code, CPU, torch, data file, core-hours) and any pair split across CPU
  models;
* every seed's numbers, whether each control started from its twin's pretraining, and the figure
  ``online_200k_gap`` (ODT - control against the ODT twin's online samples: one thin line per
  seed, the mean with its 95% paired t-band where every complete pair has the evaluation; ODT's
  and IQL's own curves in a second panel), written beside the other figures of the preset
  (``paper_tables/figures/cpu-200k/``) once a pair is complete.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import outputs, plots
from benchmarks import records as rec
from benchmarks.experiments import EXPERIMENTS
from benchmarks.intervals import combination_interval
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    Estimate,
    Registered,
    Verdict,
    analysis_parser,
    combination_estimate,
    emit,
    read_protocol,
    seed_status,
)

EXPERIMENT, PRESET, DATASET = "online_200k", "cpu-200k", "hopper-medium"
ODT, CONTROL, IQL = "odt", "odt-control-matched", "iql"
PAIRS = EXPERIMENTS[EXPERIMENT].seeds_of(ODT)  # 10: seeds 0-9 of ODT and of its control
IQL_SEEDS = EXPERIMENTS[EXPERIMENT].seeds_of(IQL)  # 5: seeds 0-4
LAST_K = 3  # the score at 200k: the mean of a run's last 3 online evaluations
MARGIN = 10.0  # normalised points, the protocol's equivalence margin
SAMPLE_POINTS = (5_000, 25_000, 50_000, 100_000)  # D5k ... D100k
PRIMARY = "D200"
# amendment A4: O'Brien-Fleming nominal alphas for two equally spaced looks at overall two-sided 0.05
INTERIM_PAIRS = 5  # the first look: seeds 0-4
LOOK_ALPHA = {INTERIM_PAIRS: 0.005, PAIRS: 0.048}
FIGURE = "online_200k_gap"
REPORT = "paper_tables/online_200k_cpu.md"


def sample_label(samples: int) -> str:
    return f"D{samples // 1000}k"


# ----- per run ---------------------------------------------------------------------------------
def online_curve(curves: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """One run's online evaluations in order: rounds (None for IQL), online samples, score."""
    rows = curves[(curves.run_id == run_id) & (curves.phase == "online")].sort_values("step")
    rows = rows[pd.to_numeric(rows.score_mean, errors="coerce").notna()]
    rounds = rows["rounds"] if "rounds" in rows.columns else pd.Series(np.nan, index=rows.index)
    return pd.DataFrame({"rounds": pd.to_numeric(rounds, errors="coerce").to_numpy(),
                         "online_samples": pd.to_numeric(rows.online_samples, errors="coerce").to_numpy(),
                         "score": pd.to_numeric(rows.score_mean).to_numpy()})


def score_at_end(curve: pd.DataFrame, k: int = LAST_K) -> float:
    """The mean of the last ``k`` online evaluations (NaN without any)."""
    return float(curve.score.iloc[-k:].mean()) if len(curve) else float("nan")


def _online_updates(directory: Path, updates: float) -> float:
    """A run's online updates: its updates minus its config's pretraining (ODT) or offline (IQL) ones."""
    path = Path(directory) / rec.CONFIG
    config = rec.read_json(path) if path.exists() else {}
    before = config.get("pretrain_updates", config.get("offline_updates"))
    return float(updates) - float(before) if before is not None and np.isfinite(updates) else float("nan")


def per_run(runs: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """One row per complete run of the three arms on hopper-medium: end of pretraining, score at
    200k, within-run gain, evaluations, last k rounds, online updates and samples, core-hours, and
    the run whose pretraining it started from (None: its own)."""
    cols = ["method", "seed", "run_id", "pretrain_end", "score_200k", "gain", "evaluations", "last_rounds",
            "online_updates", "online_samples", "core_hours", "pretraining_from"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    cell = runs[(runs.dataset == DATASET) & (runs.status == "complete") & runs.method.isin((ODT, CONTROL, IQL))]
    out = []
    for r in cell.itertuples():
        curve = online_curve(curves, r.run_id)
        end = score_at_end(curve)
        record = rec.read_record(Path(r.path)) or {}
        out.append({"method": r.method, "seed": int(r.seed), "run_id": r.run_id, "pretrain_end": r.offline_score,
                    "score_200k": end, "gain": end - r.offline_score, "evaluations": len(curve),
                    "last_rounds": tuple(curve.rounds.iloc[-LAST_K:].tolist()),
                    "online_updates": _online_updates(Path(r.path), r.updates), "online_samples": r.online_samples,
                    "core_hours": r.core_seconds / 3600 if pd.notna(r.core_seconds) else float("nan"),
                    "pretraining_from": record.get("pretraining_from")})
    return pd.DataFrame(out, columns=cols).sort_values(["method", "seed"], kind="stable").reset_index(drop=True)


# ----- ODT against its control, seed by seed ---------------------------------------------------------
def gap_curve(odt: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """ODT - control at every round both evaluated, against the ODT twin's online samples."""
    both = odt.merge(control, on="rounds", suffixes=("_odt", "_control"))
    return pd.DataFrame({"rounds": both.rounds, "online_samples": both.online_samples_odt,
                         "gap": both.score_odt - both.score_control})


def gap_at(odt: pd.DataFrame, control: pd.DataFrame, samples: int) -> tuple[float, float]:
    """(round, ODT - control) at the first evaluation at which the ODT twin has used at least
    ``samples`` online samples, the control read at that same round; NaN where either is missing."""
    reached = odt[odt.online_samples >= samples]
    if reached.empty:
        return float("nan"), float("nan")
    first = reached.iloc[0]
    same = control[control.rounds == first.rounds]
    return float(first.rounds), float(first.score - same.score.iloc[0]) if len(same) else float("nan")


def pairs(table: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """One row per seed with both ODT and its control complete: their numbers, D200 and D at each
    sample point (with the round it was read at), whether the two runs' last k evaluations are at
    the same rounds, and how the control got its pretraining."""
    odt = table[table.method == ODT].set_index("seed")
    ctrl = table[table.method == CONTROL].set_index("seed")
    rows = []
    for seed in sorted(set(odt.index) & set(ctrl.index)):
        o, c = odt.loc[seed], ctrl.loc[seed]
        oc, cc = online_curve(curves, o.run_id), online_curve(curves, c.run_id)
        row = {"seed": seed, "odt_pretrain": o.pretrain_end, "odt_200k": o.score_200k,
               "control_pretrain": c.pretrain_end, "control_200k": c.score_200k,
               PRIMARY: o.score_200k - c.score_200k, "same_rounds": o.last_rounds == c.last_rounds,
               "odt_updates": o.online_updates, "control_updates": c.online_updates,
               "shared": c.pretraining_from is not None and c.pretraining_from in (o.run_id, o.pretraining_from),
               "pretrain_equal": bool(np.isclose(o.pretrain_end, c.pretrain_end, rtol=0, atol=1e-9))}
        for samples in SAMPLE_POINTS:
            row[f"{sample_label(samples)}_round"], row[sample_label(samples)] = gap_at(oc, cc, samples)
        rows.append(row)
    columns = ["seed", "odt_pretrain", "odt_200k", "control_pretrain", "control_200k", PRIMARY,
               *[c for s in SAMPLE_POINTS for c in (sample_label(s), f"{sample_label(s)}_round")],
               "same_rounds", "odt_updates", "control_updates", "shared", "pretrain_equal"]
    return pd.DataFrame(rows, columns=columns)


# ----- the registered comparisons ------------------------------------------------------------------
def comparisons(paired: pd.DataFrame, table: pd.DataFrame) -> dict[str, Estimate]:
    """D200 and D5k-D100k (paired t on the per-seed differences), G (Welch)."""
    out = {PRIMARY: combination_estimate([(paired[PRIMARY].dropna().to_numpy(), 1.0)])}
    for samples in SAMPLE_POINTS:
        name = sample_label(samples)
        out[name] = combination_estimate([(paired[name].dropna().to_numpy(), 1.0)])
    out["G"] = combination_estimate([(_gains(table, ODT), 1.0), (_gains(table, IQL), -1.0)])
    return out


def _gains(table: pd.DataFrame, method: str) -> np.ndarray:
    return table[table.method == method].gain.dropna().to_numpy()


def verdicts(comp: dict[str, Estimate], table: pd.DataFrame) -> dict[str, Verdict]:
    """D200 read alone at the final look's alpha; D5k-D100k and G one Holm family at 0.05; every
    claim "> 0", margin 10 points; no verdict below the protocol's seeds (10 pairs; G: 10 ODT and
    5 IQL runs)."""
    n_odt, n_iql = len(_gains(table, ODT)), len(_gains(table, IQL))
    g_status = (None if n_odt >= PAIRS and n_iql >= IQL_SEEDS else
                f"incomplete (ODT n={n_odt} of {PAIRS}, IQL n={n_iql} of {IQL_SEEDS})")
    registered = [Registered(name, e, +1, MARGIN, False, g_status if name == "G" else seed_status(e, PAIRS))
                  for name, e in comp.items() if name != PRIMARY]
    primary = Registered(PRIMARY, comp[PRIMARY], +1, MARGIN, True, seed_status(comp[PRIMARY], PAIRS))
    return {PRIMARY: read_protocol([primary], LOOK_ALPHA[PAIRS])[PRIMARY], **read_protocol(registered)}


def primary_at_look(paired: pd.DataFrame, pairs_in_look: int) -> tuple[Estimate, Verdict] | None:
    """D200 at one of the two looks (A4): on the pairs of seeds 0..pairs_in_look-1, at the look's
    nominal alpha, its interval at 1 - alpha; None until all those pairs are complete. At the
    interim look only an interval that excludes 0 gives a verdict (no equivalence is read there)."""
    alpha = LOOK_ALPHA[pairs_in_look]
    d = paired[paired.seed < pairs_in_look][PRIMARY].dropna()
    if len(d) < pairs_in_look:
        return None
    i = combination_interval([(d.to_numpy(), 1.0)], 1.0 - alpha)
    e = Estimate(i.estimate, i.low, i.high, len(d), i.se, i.df, i.p_value)
    interim = pairs_in_look < PAIRS
    (verdict,) = read_protocol([Registered(PRIMARY, e, +1, None if interim else MARGIN, True)], alpha).values()
    if interim and verdict.word == "inconclusive":
        verdict = Verdict("interim: 0 inside the interval, the study continues to 10 pairs", True, verdict.reading)
    return e, verdict


# ----- the figure ----------------------------------------------------------------------------------
def gap_curves(table: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """Every complete pair's ODT - control at each evaluated round (long: seed, rounds, samples, gap)."""
    odt = table[table.method == ODT].set_index("seed")
    ctrl = table[table.method == CONTROL].set_index("seed")
    parts = [gap_curve(online_curve(curves, odt.loc[s].run_id), online_curve(curves, ctrl.loc[s].run_id)).assign(seed=s)
             for s in sorted(set(odt.index) & set(ctrl.index))]
    if not parts:
        return pd.DataFrame(columns=["seed", "rounds", "online_samples", "gap"])
    return pd.concat(parts, ignore_index=True)[["seed", "rounds", "online_samples", "gap"]]


def gap_band(gaps: pd.DataFrame) -> pd.DataFrame:
    """Per round that every pair evaluated: the mean of the pairs' ODT twin online samples, the mean
    gap and its 95% paired t-interval (no interval from one pair)."""
    cols = ["rounds", "online_samples", "mean", "low", "high", "n"]
    if gaps.empty:
        return pd.DataFrame(columns=cols)
    n_pairs = gaps.seed.nunique()
    rows = []
    for r, g in gaps.groupby("rounds", sort=True):
        if g.seed.nunique() < n_pairs:
            continue  # a band only where every complete pair has the evaluation
        mean, lo, hi = plots.t_interval(g.gap)
        rows.append({"rounds": r, "online_samples": g.online_samples.mean(), "mean": mean,
                     "low": lo, "high": hi, "n": len(g)})
    return pd.DataFrame(rows, columns=cols)


def _mean_where_all(curves: list[pd.DataFrame], key: str) -> pd.DataFrame:
    """Mean score (and mean online samples) at each ``key`` value every curve has."""
    if not curves:
        return pd.DataFrame(columns=["online_samples", "score"])
    long = pd.concat([c.assign(run=i) for i, c in enumerate(curves)], ignore_index=True)
    counts = long.groupby(key).run.nunique()
    keep = counts[counts == len(curves)].index
    at = long[long[key].isin(keep)].groupby(key)
    return pd.DataFrame({"online_samples": at.online_samples.mean().to_numpy(), "score": at.score.mean().to_numpy()})


def draw_figure(table: pd.DataFrame, curves: pd.DataFrame, out_dir: Path, records: pd.DataFrame | None = None,
                command: str = "", preset: str = PRESET) -> list[Path]:
    """``online_200k_gap`` (png, pdf, the plotted numbers as csv and, given ``records`` (``agg.load_runs``),
    a json sidecar of its provenance) in ``out_dir``; nothing without a complete pair."""
    gaps = gap_curves(table, curves)
    if gaps.empty:
        return []
    import matplotlib.pyplot as plt  # Agg: set by benchmarks.plots

    band = gap_band(gaps)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), layout="constrained")
    for _, g in gaps.groupby("seed"):
        left.plot(g.online_samples, g.gap, lw=0.7, alpha=0.45, color="tab:blue")
    if not band.empty:
        left.plot(band.online_samples, band["mean"], lw=2.0, color="tab:blue",
                  label=f"mean of {gaps.seed.nunique()} pairs")
        if band.low.notna().any():
            left.fill_between(band.online_samples, band.low, band.high, alpha=0.2, color="tab:blue",
                              label="95% paired t-interval")
    left.axhline(0.0, color="black", lw=0.8)
    for samples in SAMPLE_POINTS:
        left.axvline(samples, color="grey", lw=0.6, ls=":")
    left.set(xlabel="online samples (ODT twin)", ylabel="ODT − matched control (normalised score)",
             title="ODT − update-matched control, paired by seed")
    left.legend(loc="best", fontsize=8)

    for method, color in ((ODT, "tab:blue"), (IQL, "tab:orange")):
        runs = table[table.method == method]
        own = [online_curve(curves, rid) for rid in runs.run_id]
        for c in own:
            right.plot(c.online_samples, c.score, lw=0.6, alpha=0.35, color=color)
        mean = _mean_where_all(own, "rounds" if method == ODT else "online_samples")
        if not mean.empty:
            right.plot(mean.online_samples, mean.score, lw=2.0, color=color, label=f"{method} (n={len(own)})")
    right.set(xlabel="online samples", ylabel="normalised score", title="ODT's and IQL's own curves")
    if right.get_legend_handles_labels()[0]:
        right.legend(loc="best", fontsize=8)
    iql_runs = int((table.method == IQL).sum())
    seeds = ", ".join(map(str, sorted(gaps.seed.unique())))
    facts = _figure_facts(records, command, preset) if records is not None else {}
    origin = f"; {facts['provenance']}; {facts['code']}; full record: {FIGURE}.json" if facts else ""
    caption = [
        "left: ODT − control per seed (thin), their mean and its 95% paired t-interval where every pair evaluated; "
        "dotted: the registered sample points",
        "right: each run's own curve (thin) and the arm's mean",
        f"preset {preset}; {gaps.seed.nunique()} complete pairs (seeds {seeds}); {iql_runs} IQL runs{origin}; "
        "protocol paper_tables/PROTOCOL-online-200k-cpu.md"]
    plots.provenance.draw_header(fig, [f"Does online data matter at 200k samples? ({DATASET})"], caption)

    out_dir.mkdir(parents=True, exist_ok=True)
    data = pd.concat([gaps.assign(kind="pair"), band.rename(columns={"mean": "gap"}).assign(kind="mean", seed=np.nan)],
                     ignore_index=True)
    written = plots.save_figure(fig, data, out_dir, FIGURE)
    if facts:
        facts |= {"figure": FIGURE, "pairs": int(gaps.seed.nunique()), "pair_seeds": seeds, "caption": caption}
        written.append(plots.provenance.write_sidecar(out_dir, FIGURE, facts))
    return written


def _figure_facts(records: pd.DataFrame, command: str, preset: str) -> dict:
    """The figure's provenance from its complete runs: preset, seeds, samples, data, code versions."""
    complete = records[(records.status == "complete") & (records.dataset == DATASET)]
    versions = plots.provenance.code_versions(complete.code)
    return {"preset": preset, "experiment": EXPERIMENT, "dataset": DATASET,
            "runs": {str(m): int(n) for m, n in complete.method.value_counts().sort_index().items()},
            "provenance": plots.provenance.provenance_note(complete),
            "data": plots.provenance.data_sources(complete), "code_versions": versions,
            "code": plots.provenance.code_note(versions, f"{FIGURE}.json"), "command": command}


# ----- the report ----------------------------------------------------------------------------------
def _cell(x: float, spec: str = "+.1f") -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:{spec}}"


def report(root: Path | str, preset: str = PRESET, figures: Path | None = None) -> str:
    runs = agg.load_runs(root, preset, EXPERIMENT)
    curves = agg.load_results(root, preset, EXPERIMENT)
    table = per_run(runs, curves)
    counts = {m: int((table.method == m).sum()) for m in (ODT, CONTROL, IQL)}
    paired = pairs(table, curves)
    lines = [f"## Online data at the paper's budget: {DATASET}, preset `{preset}`", "",
             "Protocol: `paper_tables/PROTOCOL-online-200k-cpu.md` (the reading below is the one it registers). "
             f"Complete runs: `{ODT}` {counts[ODT]} of {PAIRS}, `{CONTROL}` {counts[CONTROL]} of {PAIRS} "
             f"({len(paired)} pairs), `{IQL}` {counts[IQL]} of {IQL_SEEDS}.", ""]
    if table.empty:
        lines += [f"**No complete runs yet** ({EXPERIMENT} at preset `{preset}` under `{root}`): no comparison, "
                  "no figure.", ""]
        return "\n".join(lines)
    if len(paired) < PAIRS or counts[IQL] < IQL_SEEDS:
        lines += ["**Incomplete: the protocol reads nothing before its seeds are in; the numbers below are a "
                  "status, not a result.**", ""]
    comp = comparisons(paired, table)
    read = verdicts(comp, table)
    what = {PRIMARY: f"ODT − control, score at 200k (mean of last {LAST_K} evaluations), paired by seed",
            "G": "ODT's within-run gain − IQL's, Welch"}
    what.update({sample_label(s): f"ODT − control at the first round with ≥ {s:,} ODT online samples, paired"
                 for s in SAMPLE_POINTS})
    lines += [f"{INTERVAL_METHOD}. Primary D200 read alone; D5k-D100k and G one family with Holm's correction; "
              f"every claim '> 0', equivalence against ±{MARGIN:g} normalised points (the 90% interval inside).", "",
              "| comparison | what | mean [95% CI] (n) | verdict |", "|---|---|---|---|"]
    lines += [f"| {'**' + name + '**' if name == PRIMARY else name} | {what[name]} | {e.text()} | {read[name].text()} |"
              for name, e in comp.items()]
    lines += ["", _looks_text(paired)]
    lines += ["", "| arm | runs | end of pretraining | score at 200k | gain in run | online updates | online samples "
              "| core-hours per run |", "|---|---|---|---|---|---|---|---|"]
    for method in (ODT, CONTROL, IQL):
        t = table[table.method == method]
        if t.empty:
            continue
        lines.append(f"| `{method}` | {len(t)} | {combination_estimate([(t.pretrain_end, 1.0)]).text(False)} | "
                     f"{combination_estimate([(t.score_200k, 1.0)]).text(False)} | "
                     f"{combination_estimate([(t.gain, 1.0)]).text()} | {_cell(t.online_updates.mean(), ',.0f')} | "
                     f"{_cell(t.online_samples.mean(), ',.0f')} | {_per_run_hours(t.core_hours)} |")
    labels = [sample_label(s) for s in SAMPLE_POINTS]
    lines += ["", "Per seed, ODT and its matched control (end of pretraining / score at 200k; D at a sample point "
              "with the round it was read at; pretraining: `shared` = the control started from its twin's state, "
              "`own` = it computed its own, with whether its end-of-pretraining score equals the twin's):", "",
              f"| seed | ODT | control | D200 | {' | '.join(labels)} | online updates ODT / control | "
              f"last {LAST_K} rounds equal | pretraining |", "|---" * (7 + len(labels)) + "|"]
    for p in paired.itertuples():
        ds = " | ".join(f"{_cell(getattr(p, name))} (r{_cell(getattr(p, name + '_round'), '.0f')})" for name in labels)
        pre = "shared" if p.shared else f"own ({'equal' if p.pretrain_equal else 'DIFFERS'})"
        lines.append(f"| {p.seed} | {p.odt_pretrain:.1f} / {p.odt_200k:.1f} | {p.control_pretrain:.1f} / "
                     f"{p.control_200k:.1f} | {p.D200:+.1f} | {ds} | {_cell(p.odt_updates, ',.0f')} / "
                     f"{_cell(p.control_updates, ',.0f')} | {'yes' if p.same_rounds else 'NO'} | {pre} |")
    unpaired = sorted(set(table[table.method.isin((ODT, CONTROL))].seed) - set(paired.seed))
    if unpaired:
        lines += ["", f"Seeds with one arm complete (not paired yet): {', '.join(map(str, unpaired))}."]
    iql = table[table.method == IQL]
    if len(iql):
        lines += ["", "IQL per seed:", "", "| seed | end of offline training | score at 200k | gain in run |",
                  "|---|---|---|---|"]
        lines += [f"| {r.seed} | {r.pretrain_end:.1f} | {r.score_200k:.1f} | {r.gain:+.1f} |" for r in iql.itertuples()]
    lines += ["", *origin_lines(runs, paired)]
    out_dir = figures if figures is not None else outputs.figures_root(root) / preset
    written = draw_figure(table, curves, out_dir, runs,
                          plots.provenance.cli_command("studies.online_200k.analysis", root, preset), preset)
    if written:
        shown = written[0].relative_to(rec.REPO_ROOT) if written[0].is_relative_to(rec.REPO_ROOT) else written[0]
        lines += ["", f"Figure: `{shown}` ({len(paired)} pairs; the band where every pair has the evaluation)."]
    else:
        lines += ["", "No figure: no complete pair yet."]
    return "\n".join(lines) + "\n"


def origin_lines(runs: pd.DataFrame, paired: pd.DataFrame) -> list[str]:
    """Where each arm's complete runs ran (code, CPU, torch, data file; a mix is counted), the
    core-hours they took, and whether each pair's two runs share a CPU model (the pairing asks it:
    a run is bit-identical only on the CPU model that made it)."""
    done = runs[(runs.status == "complete") & (runs.dataset == DATASET)] if len(runs) else runs
    lines = ["### Where the runs ran", "", "| arm | runs | core-h | " + " | ".join(agg.ORIGIN.values()) + " |",
             "|---|---|---|" + "---|" * len(agg.ORIGIN)]
    for method in (ODT, CONTROL, IQL):
        own = done[done.method == method]
        if len(own):
            lines.append(f"| `{method}` | {len(own)} | {agg.core_hours_cell(own)} | "
                         + " | ".join(agg.origin_cells(own)) + " |")
    arms = done[done.method.isin((ODT, CONTROL))]
    split = [int(seed) for seed in paired.seed if arms[arms.seed == seed].cpu.nunique(dropna=False) > 1]
    lines += ["", f"Pairs whose two runs ran on different CPU models: {', '.join(map(str, split))}." if split
              else f"Each of the {len(paired)} pairs' two runs ran on one CPU model (as each run's attempts recorded it)."]
    return lines


def _per_run_hours(hours: pd.Series) -> str:
    """The mean core-hours per run, over the runs whose records time them (a control resumed over
    several attempts is not where its record predates ``inherited_counters``: its counters hold its
    twin's pretraining too); says how many when not all."""
    timed = int(hours.notna().sum())
    mean = _cell(hours.mean(), ".2f")
    return mean if timed == len(hours) else f"{mean} ({timed} of {len(hours)} timed)"


def _looks_text(paired: pd.DataFrame) -> str:
    """The primary at its two registered looks (A4), each on its own seeds and level."""
    parts = []
    for n in sorted(LOOK_ALPHA):
        look = primary_at_look(paired, n)
        level = f"{100 * (1 - LOOK_ALPHA[n]):g}%"
        name = "interim" if n < PAIRS else "final"
        if look is None:
            parts.append(f"{name} look (seeds 0-{n - 1}, alpha {LOOK_ALPHA[n]:g}): not yet, its pairs are not all complete")
        else:
            e, v = look
            parts.append(f"{name} look (seeds 0-{n - 1}, alpha {LOOK_ALPHA[n]:g}): D200 {e.mean:+.1f} "
                         f"[{e.lo:+.1f}, {e.hi:+.1f}] ({level} paired t, n={e.n}), {v.text()}")
    return ("D200 at the registered looks (amendment A4; the table's 95% interval is a status between "
            "looks): " + "; ".join(parts) + ".")


def main(argv: Sequence[str] | None = None) -> int:
    p = analysis_parser("python -m studies.online_200k.analysis", __doc__, REPORT, seeds=False)
    p.set_defaults(preset=PRESET)
    p.add_argument("--figures", type=Path, default=None,
                   help="where the figure goes (default: the preset's figure directory beside the results, "
                        "paper_tables/figures/<preset>/ for results/)")
    args = p.parse_args(argv)
    return emit(report(args.results, args.preset, args.figures), args.out)


if __name__ == "__main__":
    sys.exit(main())
