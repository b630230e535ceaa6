"""``python -m studies.length.analysis``: the comparisons of ``PROTOCOL-offline-length-cpu.md``.

At the ``cpu`` preset ODT pretrains 5000 updates on walker2d and ant while Table 1's offline
protocol (``odt-offline``) trains 2500, so Table 1's delta ODT there credits finetuning with 2500
extra offline updates. Experiment ``offline_length`` trains the offline protocol (its own
hyperparameters) as long as ODT's pretraining; from its runs and Table 1's, per domain
(walker2d; ant once its ``-medium-replay`` row exists):

* **L1** (primary, on walker2d and on ant): C1 of ``PROTOCOL-table1-rows-cpu.md`` by Table 1's
  definition with the longer offline protocol: sum over the domain's rows of (mean ``odt`` final
  - mean longer ``odt-offline`` final - delta IQL), delta IQL each IQL run's final minus its
  offline score; its claim is C1's (``studies.rows.analysis.claim`` of the paper's value);
* **L2**, per row: longer ``odt-offline`` - Table 1's ``odt-offline``, paired by seed (the
  same seed starts from the same initialisation and batch order), read against "more updates
  raised the score" (> 0);
* **L3**, per row, described: mean longer ``odt-offline`` against the mean of ODT's own
  end-of-pretraining scores (both as long, different hyperparameters);
* **the check**: a longer run's evaluations at the updates where Table 1's run of the same seed
  also evaluated are expected to be equal (the learning-rate schedule does not depend on the
  length).

The protocol's amendment of 2026-11-29 adds experiment ``offline_length_c3``: DT and the offline
protocol both trained four times the preset's offline length on hopper-medium-replay, where C3
(mean ``odt-offline`` - mean ``dt``) differs from the paper. From its runs:

* **L4**: C3 with both methods at the longer length, its claim C3's on the row;
* **L5**, per method: longer - Table 1's run of the same seed, read as L2;
* the check and the per-seed finals as above, per method.

Intervals and verdicts as ``studies.rows.analysis`` under ``PROTOCOL-reanalysis.md``: 95% t-intervals
(Welch-Satterthwaite df for sums of independent groups, paired t for L2 and L5); the two L1s
are this protocol's primaries, read alone at 0.05; L2, L4 and L5 are its family, read with
Holm's correction; equivalence against 5 normalised points. No verdict below ``MIN_SEEDS``
complete seeds in any group.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    Estimate,
    Groups,
    Registered,
    Verdict,
    analysis_parser,
    analysis_runs,
    c1_groups,
    combination_estimate,
    complete_runs,
    emit,
    gain_in_run,
    margin_for,
    on_other_data,
    per_seed_difference,
    read_protocol,
    seed_status,
)
from studies.rows.analysis import DOMAINS as ROW_DOMAINS
from studies.rows.analysis import (
    MIN_SEEDS,
    c3_groups,
    claim,
    claim_text,
    paper_c1,
    paper_c1_row,
    paper_c3,
    summed,
)

EXPERIMENT = "offline_length"
DOMAINS = {d: ROW_DOMAINS[d] for d in ("walker2d", "ant")}  # where the cpu preset's two lengths differ
METHOD = "odt-offline"
C3_EXPERIMENT = "offline_length_c3"  # the amendment of 2026-11-29: DT and the offline protocol at 4x the length
C3_ROWS = ("hopper-medium-replay",)  # where C3 differs from the paper
C3_METHODS = ("dt", METHOD)


def _final(runs: pd.DataFrame, method: str, dataset: str) -> pd.Series:
    return complete_runs(runs, method, dataset).set_index("seed").final_score


def _row_groups_l1(table1: pd.DataFrame, longer: pd.DataFrame, dataset: str) -> Groups:
    return [(_final(table1, "odt", dataset).to_numpy(), 1.0), (_final(longer, METHOD, dataset).to_numpy(), -1.0),
            (gain_in_run(table1, "iql", dataset), -1.0)]


def l1(table1: pd.DataFrame, longer: pd.DataFrame, datasets: Sequence[str]) -> Estimate:
    """Sum over ``datasets`` of delta ODT (against the longer offline protocol) - delta IQL."""
    return summed(table1, datasets, lambda runs, d: _row_groups_l1(runs, longer, d))


def l2(table1: pd.DataFrame, longer: pd.DataFrame, dataset: str,
       method: str = METHOD) -> Estimate:
    """Longer run of ``method`` - Table 1's, per seed both have (L2; L5 with ``dt`` or ``odt-offline``)."""
    diffs = per_seed_difference(complete_runs(longer, method, dataset), complete_runs(table1, method, dataset),
                                "final_score")
    return combination_estimate([(diffs.to_numpy(), 1.0)])


def l3(table1: pd.DataFrame, longer: pd.DataFrame, dataset: str) -> Estimate:
    """Mean longer offline protocol - mean of ODT's own end-of-pretraining scores (independent groups)."""
    pretrained = complete_runs(table1, "odt", dataset).offline_score.to_numpy()
    return combination_estimate([(_final(longer, METHOD, dataset).to_numpy(), 1.0), (pretrained, -1.0)])


def l4(longer: pd.DataFrame, dataset: str) -> Estimate:
    """C3 (mean ``odt-offline`` - mean ``dt``, independent groups) with both at the longer length."""
    return summed(longer, [dataset], c3_groups)


L2_CLAIM = +1  # L2 and L5 read against "the longer training raised the score"


def comparisons(table1: pd.DataFrame, longer: pd.DataFrame, c3_longer: pd.DataFrame) -> list[Registered]:
    """The protocol's comparisons in report order: L1 per domain (the primaries), L2 per row, L4
    and L5 (the family)."""
    out = []
    for domain, rows in DOMAINS.items():
        e, m = l1(table1, longer, rows), margin_for(domain)
        out.append(Registered(f"L1 {domain}", e, claim(paper_c1(domain), m), m, True, seed_status(e, MIN_SEEDS)))
    for d in (d for rows in DOMAINS.values() for d in rows):
        e = l2(table1, longer, d)
        out.append(Registered(f"L2 {d}", e, L2_CLAIM, margin_for(d), False, seed_status(e, MIN_SEEDS)))
    for d in C3_ROWS:
        e, m = l4(c3_longer, d), margin_for(d)
        out.append(Registered(f"L4 {d}", e, claim(paper_c3(d), m), m, False, seed_status(e, MIN_SEEDS)))
        for method in C3_METHODS:
            e = l2(table1, c3_longer, d, method=method)
            out.append(Registered(f"L5 {d} {method}", e, L2_CLAIM, m, False, seed_status(e, MIN_SEEDS)))
    return out


def read(table1: pd.DataFrame, longer: pd.DataFrame, c3_longer: pd.DataFrame) -> dict[str, Verdict]:
    """Every comparison's verdict: the L1s alone, the rest as one Holm family."""
    return read_protocol(comparisons(table1, longer, c3_longer))


def check_rows(table1_curves: pd.DataFrame, longer_curves: pd.DataFrame, dataset: str,
               method: str = METHOD) -> pd.DataFrame:
    """Per seed and evaluation both runs made: Table 1's score, the longer run's, and whether they
    are equal (to 1e-9). Only evaluations before Table 1's run's last one count: its last is taken
    at its end, which the longer run passes without evaluating."""
    def scores(curves: pd.DataFrame) -> pd.DataFrame:
        c = curves[(curves.method == method) & (curves.dataset == dataset) & (curves.phase == "pretrain")]
        return c[["seed", "updates", "score_mean"]]
    short = scores(table1_curves)
    short = short[short.updates < short.groupby("seed").updates.transform("max")]
    both = short.merge(scores(longer_curves), on=["seed", "updates"], suffixes=("_table1", "_longer"))
    both["equal"] = (both.score_mean_table1 - both.score_mean_longer).abs() <= 1e-9
    return both.sort_values(["seed", "updates"]).reset_index(drop=True)


def report_lines(table1: pd.DataFrame, longer: pd.DataFrame, table1_curves: pd.DataFrame,
                 longer_curves: pd.DataFrame, verdicts: dict[str, Verdict]) -> list[str]:
    lines = ["# Table 1's δ ODT with the offline protocol as long as ODT's pretraining "
             "(`PROTOCOL-offline-length-cpu.md`, read under `PROTOCOL-reanalysis.md`)", "",
             f"{INTERVAL_METHOD}. n: the smallest seed count among the groups. Primary: L1 on walker2d and "
             "on ant, each read alone at 0.05; L2, L4 and L5 are one family read with Holm's correction "
             "(Holm-adjusted p beside the uncorrected one; intervals uncorrected). Equivalence: two one-sided "
             "tests against ±5 normalised points. A claim follows the paper's value (its sign beyond the "
             "margin, '≈ 0' within it); L2 and L5 are read against 'the longer training raised the score' "
             f"(> 0). No verdict below {MIN_SEEDS} seeds in any group. `odt`, `iql` and the shorter "
             "`odt-offline` are Table 1's runs; δ IQL is Table 1's (final minus offline score).", "",
             "## L1: Σ_D (ODT − longer ODT offline) − Σ_D δ IQL", "",
             "| domain / row | L1 | C1 by Table 1's definition (shorter offline protocol) | the paper | claim | verdict |",
             "|---|---|---|---|---|---|"]
    for domain, rows in DOMAINS.items():
        e, c1 = l1(table1, longer, rows), summed(table1, rows, c1_groups)
        sign = claim(paper_c1(domain), margin_for(domain))
        lines.append(f"| **{domain}** (sum) | {e.text()} | {c1.text()} | {paper_c1(domain):+.1f} | "
                     f"{claim_text(sign, margin_for(domain))} | {verdicts[f'L1 {domain}'].text()} |")
        for d in rows:
            e, c1 = l1(table1, longer, [d]), summed(table1, [d], c1_groups)
            lines.append(f"| {d} | {e.text()} | {c1.text()} | {paper_c1_row(d):+.1f} | — | "
                         "described (the protocol reads the sum) |")
    lines += ["", "## L2: longer ODT offline − Table 1's ODT offline, paired by seed (claim: > 0); "
              "L3: longer ODT offline − ODT's own end of pretraining (described)", "",
              "| row | L2 | verdict | L3 |", "|---|---|---|---|"]
    for d in (d for rows in DOMAINS.values() for d in rows):
        e = l2(table1, longer, d)
        lines.append(f"| {d} | {e.text()} | {verdicts[f'L2 {d}'].text()} | {l3(table1, longer, d).text()} |")
    pairs = [(d, METHOD) for rows in DOMAINS.values() for d in rows]
    lines += ["", "## The check: evaluations both runs of a seed made", ""]
    lines += _check_table(table1_curves, longer_curves, pairs, with_method=False)
    lines += _finals_table(longer, pairs, with_method=False)
    return lines + [""]


def _check_table(table1_curves: pd.DataFrame, longer_curves: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                 with_method: bool) -> list[str]:
    """The check's rows for each (dataset, method) of ``pairs``; a method column where several are shown."""
    head = ["row", *(["method"] if with_method else []), "seed", "updates", "Table 1", "longer run", "equal"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, m in pairs:
        for r in check_rows(table1_curves, longer_curves, d, m).itertuples():
            cells = [d, *([m] if with_method else []), r.seed, r.updates, f"{r.score_mean_table1:.3f}",
                     f"{r.score_mean_longer:.3f}", "yes" if r.equal else "no"]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return lines


def _finals_table(longer: pd.DataFrame, pairs: Sequence[tuple[str, str]], with_method: bool, seeds: int = 5) -> list[str]:
    """Per-seed finals of the longer runs of each (dataset, method) of ``pairs`` (— where absent)."""
    head = ["row", *(["method"] if with_method else []), *(f"s{s}" for s in range(seeds))]
    lines = ["", "Per-seed finals of the longer runs:", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, m in pairs:
        f = _final(longer, m, d)
        cells = [d, *([m] if with_method else []), *(f"{f[s]:.1f}" if s in f.index else "—" for s in range(seeds))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def c3_report_lines(table1: pd.DataFrame, longer: pd.DataFrame, table1_curves: pd.DataFrame,
                    longer_curves: pd.DataFrame, verdicts: dict[str, Verdict]) -> list[str]:
    """The section of the amendment of 2026-11-29: L4 beside Table 1's C3, L5 per method, the check, the finals."""
    lines = ["## The C3 arm (amendment of 2026-11-29): DT and ODT offline both at 4x the preset's length", "",
             "### L4: C3 (mean ODT offline − mean DT) with both at the longer length", "",
             "| row | L4 | C3 (Table 1's lengths) | the paper | claim | verdict |", "|---|---|---|---|---|---|"]
    for d in C3_ROWS:
        e = l4(longer, d)
        lines.append(f"| {d} | {e.text()} | {summed(table1, [d], c3_groups).text()} | {paper_c3(d):+.1f} | "
                     f"{claim_text(claim(paper_c3(d), margin_for(d)), margin_for(d))} | {verdicts[f'L4 {d}'].text()} |")
    lines += ["", "### L5: longer − Table 1's run of the same seed, paired (claim: > 0)", "",
              "| row | method | L5 | verdict |", "|---|---|---|---|"]
    for d in C3_ROWS:
        for m in C3_METHODS:
            e = l2(table1, longer, d, method=m)
            lines.append(f"| {d} | {m} | {e.text()} | {verdicts[f'L5 {d} {m}'].text()} |")
    pairs = [(d, m) for d in C3_ROWS for m in C3_METHODS]
    lines += ["", "### The check: evaluations both runs of a seed made", ""]
    lines += _check_table(table1_curves, longer_curves, pairs, with_method=True)
    lines += _finals_table(longer, pairs, with_method=True)
    return lines + [""]


def _runs_or_empty(root: Path, preset: str, like: pd.DataFrame, seeds: Sequence[int] | None,
                   experiment: str = EXPERIMENT) -> pd.DataFrame:
    runs = agg.load_runs(root, preset, experiment)
    if runs.empty:
        return like.iloc[0:0]
    return runs[runs.seed.isin(seeds)] if seeds else runs


def other_data_lines(left: pd.DataFrame, experiment: str = EXPERIMENT) -> list[str]:
    """One line per dataset for the longer runs ``left`` out because they trained on another data
    file than Table 1's runs of it (``on_other_data``: a remade medium-replay file is another dataset)."""
    return [f"Left out: {len(g)} `{experiment}` run(s) on {d}, data file {', '.join(sorted(set(g.data_file)))}, "
            f"not the file of Table 1's runs of it." for d, g in left.groupby("dataset")]


def _curves(root: Path, preset: str, experiment: str) -> pd.DataFrame:
    curves = agg.load_results(root, preset, experiment)
    columns = ["method", "dataset", "phase", "seed", "updates", "score_mean"]
    return curves if not curves.empty else pd.DataFrame(columns=columns)


def main(argv: list[str] | None = None) -> int:
    args = analysis_parser("python -m studies.length.analysis", __doc__, "paper_tables/length_protocol_cpu.md").parse_args(argv)
    table1 = analysis_runs(args, "table1")
    if table1 is None:
        return 1
    longer = _runs_or_empty(args.results, args.preset, table1, args.seeds)
    other = on_other_data(longer, table1)
    left_out = other_data_lines(longer[other])
    c3 = _runs_or_empty(args.results, args.preset, table1, args.seeds, C3_EXPERIMENT)
    c3_other = on_other_data(c3, table1)
    verdicts = read(table1, longer[~other], c3[~c3_other])
    table1_curves = _curves(args.results, args.preset, "table1")
    lines = report_lines(table1, longer[~other], table1_curves, _curves(args.results, args.preset, EXPERIMENT),
                         verdicts)
    lines += [*left_out, ""] if left_out else []
    lines += c3_report_lines(table1, c3[~c3_other], table1_curves, _curves(args.results, args.preset, C3_EXPERIMENT),
                             verdicts)
    c3_left_out = other_data_lines(c3[c3_other], C3_EXPERIMENT)
    lines += [*c3_left_out, ""] if c3_left_out else []
    return emit("\n".join(lines), args.out)


if __name__ == "__main__":
    sys.exit(main())
