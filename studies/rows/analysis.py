"""``python -m studies.rows.analysis``: the comparisons and verdicts of ``PROTOCOL-table1-rows-cpu.md``,
read under ``PROTOCOL-reanalysis.md``.

From the ``table1`` runs of one preset, per domain D (hopper, walker2d, halfcheetah, ant: its
``-medium`` and ``-medium-replay`` rows; antmaze: ``antmaze-umaze`` and ``antmaze-umaze-diverse``,
the protocol's AntMaze amendment):

* **C1**, the paper's comparison: sum over D's rows of (delta ODT - delta IQL), each delta read
  within its own runs (a run's mean of its last k online evaluations minus its own end of
  pretraining; ``reproduction.row_k``). Beside it, described and given no verdict, Table 1's
  definition (delta ODT = mean ``odt`` final - mean ``odt-offline`` final, two sets of runs, which
  at the cpu preset also holds the offline protocol's other settings and, on walker2d and ant, its
  shorter training); each row's own terms beneath its domain, described;
* **C2**, what online data adds: ``odt`` - ``odt-control`` final, paired by seed, per row and
  summed over D (the two arms share each seed's pretraining);
* **C3**, DT against ODT's offline protocol: mean ``odt-offline`` - mean ``dt``, per row;
* **C4**, over the 8 locomotion rows once all have run: sum delta ODT - sum delta IQL within run
  (read); Table 1's version and sum ODT (online) - sum IQL (online) described;
* beside them, described only (the issue's per-domain sums, no verdict): each Table 1 score
  column summed over each domain's rows, with its interval, above the paper's sum of the same cells.

Intervals: 95% t-intervals, a sum over rows of independent groups with Welch-Satterthwaite
degrees of freedom (``reproduction.combination_estimate``). Verdicts (``PROTOCOL-reanalysis.md``):
the primary comparisons, C1 on hopper and on walker2d (the ones the protocol's question names
first), are read alone at 0.05; every other comparison is one member of the protocol's family,
read after Holm's correction. A claim's direction comes from the paper's value: beyond the
domain's margin (5 normalised points; AntMaze 10 success points) it is directional with the
paper's sign, within it the claim is "no difference beyond the margin". Words: supports,
contradicts, equivalent, inconclusive. No verdict ("incomplete") until every group has
``MIN_SEEDS`` complete seeds; an AntMaze comparison whose runs all score at most 5% success is
"out of regime (floor)".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import reference
from benchmarks.experiments import TABLE1_MIN_SEEDS
from benchmarks.methods import method_config
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    Estimate,
    Groups,
    Registered,
    Verdict,
    analysis_parser,
    analysis_runs,
    at_floor,
    c1_groups,
    c1_within_run_groups,
    combination_estimate,
    complete_runs,
    emit,
    margin_for,
    per_seed_difference,
    read_protocol,
    seed_status,
)
from benchmarks.tables import TABLE1_COLUMNS

LOCOMOTION_DOMAINS: dict[str, tuple[str, ...]] = {
    d: (f"{d}-medium", f"{d}-medium-replay") for d in ("hopper", "walker2d", "halfcheetah", "ant")}
DOMAINS = {**LOCOMOTION_DOMAINS, "antmaze": ("antmaze-umaze", "antmaze-umaze-diverse")}
MIN_SEEDS = TABLE1_MIN_SEEDS
ROW_READING = "described (the protocol reads the domain's sum)"
PRIMARY = ("C1 hopper", "C1 walker2d")  # the comparisons the protocol's question names first


def _scores(runs: pd.DataFrame, method: str, dataset: str) -> pd.DataFrame:
    return complete_runs(runs, method, dataset).set_index("seed")


def _row_groups_c2(runs: pd.DataFrame, dataset: str) -> Groups:
    diffs = per_seed_difference(complete_runs(runs, "odt", dataset), complete_runs(runs, "odt-control", dataset),
                                "final_score")
    return [(diffs.to_numpy(), 1.0)]


def c3_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    return [(_scores(runs, "odt-offline", dataset).final_score.to_numpy(), 1.0),
            (_scores(runs, "dt", dataset).final_score.to_numpy(), -1.0)]


def _row_groups_c4_online(runs: pd.DataFrame, dataset: str) -> Groups:
    return [(_scores(runs, "odt", dataset).final_score.to_numpy(), 1.0),
            (_scores(runs, "iql", dataset).final_score.to_numpy(), -1.0)]


def within_run(curves: pd.DataFrame):
    """``row_groups`` for :func:`summed`: C1's row term read within each run (the row's k)."""
    return lambda runs, dataset: c1_within_run_groups(runs, curves, dataset)


def summed(runs: pd.DataFrame, datasets: Sequence[str], row_groups) -> Estimate:
    """The sum over ``datasets`` of each row's signed combination of group means, every group an
    independent sample (one t-interval, Welch-Satterthwaite df); n is the smallest group's seed
    count (0 if a row has no runs)."""
    groups = [g for d in datasets for g in row_groups(runs, d)]
    return combination_estimate(groups)


def claim(paper: float, margin: float) -> int | None:
    """The claim a paper value makes (``PROTOCOL-reanalysis.md``): its sign when it lies beyond
    ``margin``, else None ("no difference beyond the margin")."""
    return None if abs(paper) < margin else (1 if paper > 0 else -1)


def claim_text(sign: int | None, margin: float) -> str:
    return f"≈ 0 (within ±{margin:g})" if sign is None else ("> 0" if sign > 0 else "< 0")


def paper_c1_row(dataset: str) -> float:
    row = reference.load("table1")["rows"][dataset]
    return row["delta_odt"] - row["delta_iql"]


def paper_c1(domain: str) -> float:
    return sum(paper_c1_row(d) for d in DOMAINS[domain])


def paper_c3(dataset: str) -> float:
    row = reference.load("table1")["rows"][dataset]
    return row["odt_offline"][0] - row["dt"][0]


# Table 1's measured score columns, summed per domain (described, no verdict); not SAC's, which the
# paper and this preset run on the -medium rows only, so no domain has a sum of it
SCORE_COLUMNS = [c for c in TABLE1_COLUMNS if c.method is not None and c.key != "sac"]


def score_groups(method: str, field: str):
    """``row_groups`` for :func:`summed`: one row's mean ``field`` over ``method``'s complete seeds."""
    def groups(runs: pd.DataFrame, dataset: str) -> Groups:
        return [(_scores(runs, method, dataset)[field].dropna().to_numpy(), 1.0)]
    return groups


def paper_score_sum(domain: str, key: str) -> str:
    """The paper's Table 1 means of ``key`` summed over ``domain``'s rows ("—" where it has none)."""
    rows = reference.load("table1")["rows"]
    values = [rows[d].get(key) for d in DOMAINS[domain]]
    return "—" if any(v is None for v in values) else f"{sum(v[0] for v in values):.1f}"


def count_text(n: int) -> str:
    """5000 -> "5k", 200000 -> "200k", 1000000 -> "1M", 300 -> "300"."""
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def online_budget(preset: str) -> str:
    """ODT's online samples at ``preset``, e.g. "5k"."""
    return count_text(method_config("odt", "hopper-medium", preset, 0, {}).online.online_samples)


def longer_pretraining(preset: str) -> str:
    """Where ODT pretrains longer than Table 1's separately trained offline protocol, from the
    preset's configs (each domain's first row), in words."""
    longer: dict[tuple[int, int], list[str]] = {}
    for domain, rows in DOMAINS.items():
        odt, offline = (method_config(m, rows[0], preset, 0, {}).pretrain_updates for m in ("odt", "odt-offline"))
        if odt > offline:
            longer.setdefault((offline, odt), []).append(domain)
    if not longer:
        return "trains at least as many updates as ODT pretrains on every domain"
    return "; ".join(f"trains {off} updates where ODT pretrains {odt} on {' and '.join(domains)}"
                     for (off, odt), domains in longer.items())


def score_sum_lines(runs: pd.DataFrame, preset: str = "cpu") -> list[str]:
    """Each Table 1 score column summed over each domain's rows, with its interval; the paper's below."""
    online = online_budget(preset)
    labels = [c.label.replace("0.2m", online) for c in SCORE_COLUMNS]  # this preset's budget
    lines = ["", "## Score sums per domain (described; no verdict)", "",
             "Each method's mean score summed over the domain's two rows (normalized return; AntMaze: success "
             "rate in %), 95% t-interval (each row's seeds an independent group); the paper's sum of the same "
             f"cells in the line below (its budget: 0.2M online samples against our {online}).", "",
             "| domain | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for domain, rows in DOMAINS.items():
        ours = [summed(runs, rows, score_groups(c.method, c.value)).text(signed=False) for c in SCORE_COLUMNS]
        paper = [paper_score_sum(domain, c.key) for c in SCORE_COLUMNS]
        lines += [f"| **{domain}** | " + " | ".join(ours) + " |", "| the paper | " + " | ".join(paper) + " |"]
    return lines


def locomotion_rows() -> list[str]:
    return [d for r in LOCOMOTION_DOMAINS.values() for d in r]


def _final(runs: pd.DataFrame, method: str, dataset: str) -> list[float]:
    return _scores(runs, method, dataset).final_score.tolist()


def comparisons(runs: pd.DataFrame, curves: pd.DataFrame) -> list[Registered]:
    """Every comparison the protocol reads, in report order, each with its claim and status."""
    out = []
    for domain, rows in DOMAINS.items():
        e, m = summed(runs, rows, within_run(curves)), margin_for(domain)
        key = f"C1 {domain}"
        out.append(Registered(key, e, claim(paper_c1(domain), m), m, key in PRIMARY, seed_status(e, MIN_SEEDS)))
    for domain, rows in DOMAINS.items():
        for label, datasets in ((f"{domain} (sum)", rows), *((d, [d]) for d in rows)):
            e, m = summed(runs, datasets, _row_groups_c2), margin_for(domain)
            floor = all(at_floor(d, _final(runs, "odt", d), _final(runs, "odt-control", d)) for d in datasets)
            status = seed_status(e, MIN_SEEDS) or ("out of regime (floor: every run <= 5% success)" if floor else None)
            out.append(Registered(f"C2 {label}", e, +1, m, False, status))
    for d in (d for rows in DOMAINS.values() for d in rows):
        e, m = summed(runs, [d], c3_groups), margin_for(d)
        floor = at_floor(d, _final(runs, "odt-offline", d), _final(runs, "dt", d))
        status = seed_status(e, MIN_SEEDS) or ("out of regime (floor: every run <= 5% success)" if floor else None)
        out.append(Registered(f"C3 {d}", e, claim(paper_c3(d), m), m, False, status))
    e = summed(runs, locomotion_rows(), within_run(curves))
    out.append(Registered("C4", e, +1, margin_for("locomotion"), False, seed_status(e, MIN_SEEDS)))
    return out


def claim_cell(c: Registered) -> str:
    return claim_text(c.expected_sign, c.margin)


def report_lines(runs: pd.DataFrame, curves: pd.DataFrame, preset: str = "cpu") -> list[str]:
    registered = comparisons(runs, curves)
    verdicts: dict[str, Verdict] = read_protocol(registered)
    by_key = {c.key: c for c in registered}
    lines = ["# Per-domain comparisons of `PROTOCOL-table1-rows-cpu.md`, read under `PROTOCOL-reanalysis.md`", "",
             f"{INTERVAL_METHOD}. n: the smallest seed count among the groups summed. Primary: C1 on hopper "
             "and on walker2d, read alone at 0.05; every other verdict below is one member of one family "
             "read with Holm's correction (the Holm-adjusted p beside the uncorrected one; the interval shown "
             "is uncorrected). Equivalence: two one-sided tests against the margin (5 normalised points; "
             "AntMaze 10 success points), i.e. the 90% interval inside it. A claim follows the paper's value: "
             "its sign where it lies beyond the margin, '≈ 0' within it. Verdicts: supports, contradicts, "
             f"equivalent, inconclusive. No verdict ('incomplete') below {MIN_SEEDS} seeds in any group; "
             "'out of regime (floor)' where every AntMaze run compared scores at most 5% success.", "",
             "## C1: Σ_D δ ODT − Σ_D δ IQL, each δ within its runs", "",
             "δ within run: a run's mean of its last k online evaluations minus its own end of pretraining "
             "(k = 2, or the fewest online evaluations of the row's ODT and IQL runs if fewer). Table 1's δ "
             "(described, no verdict): ODT minus the separately trained offline protocol (which at this preset "
             f"(`{preset}`) {longer_pretraining(preset)}), δ IQL its final minus its offline score.", "",
             "| domain / row | within run (read) | the paper | claim | verdict | Table 1's δ (described) |",
             "|---|---|---|---|---|---|"]
    for domain, rows in DOMAINS.items():
        c = by_key[f"C1 {domain}"]
        t1 = summed(runs, rows, c1_groups)
        lines.append(f"| **{domain}** (sum) | {c.estimate.text()} | {paper_c1(domain):+.1f} | {claim_cell(c)} | "
                     f"{verdicts[c.key].text()} | {t1.text()} |")
        for d in rows:
            w, t1 = summed(runs, [d], within_run(curves)), summed(runs, [d], c1_groups)
            lines.append(f"| {d} | {w.text()} | {paper_c1_row(d):+.1f} | — | {ROW_READING} | {t1.text()} |")
    lines += ["", "## C2: ODT − `odt-control`, paired by seed (claim: > 0)", "",
              "| domain / row | ours | verdict |", "|---|---|---|"]
    for domain, rows in DOMAINS.items():
        for label in (f"{domain} (sum)", *rows):
            c = by_key[f"C2 {label}"]
            name = f"**{domain}** (sum)" if label.endswith("(sum)") else label
            lines.append(f"| {name} | {c.estimate.text()} | {verdicts[c.key].text()} |")
    lines += ["", "## C3: ODT offline − DT", "", "| row | ours | the paper | claim | verdict |", "|---|---|---|---|---|"]
    for d in (d for rows in DOMAINS.values() for d in rows):
        c = by_key[f"C3 {d}"]
        lines.append(f"| {d} | {c.estimate.text()} | {paper_c3(d):+.1f} | {claim_cell(c)} | {verdicts[c.key].text()} |")
    lines += c4_lines(runs, curves, by_key["C4"], verdicts["C4"])
    lines += score_sum_lines(runs, preset)
    return lines


def c4_lines(runs: pd.DataFrame, curves: pd.DataFrame, c4: Registered | None = None,
             verdict: Verdict | None = None) -> list[str]:
    rows = locomotion_rows()
    sums = reference.load("table1")["sums"]["locomotion"]
    online = summed(runs, rows, _row_groups_c4_online)
    within = c4.estimate if c4 is not None else summed(runs, rows, within_run(curves))
    table1 = summed(runs, rows, c1_groups)
    ready = min(online.n, within.n, table1.n) >= MIN_SEEDS
    status = "" if ready else " (incomplete: some of the 8 rows lack runs; read nothing from it)"
    word = verdict.text() if verdict is not None else "—"
    return ["", f"## C4: sums over the 8 locomotion rows{status}", "",
            "| comparison | ours | the paper | verdict |", "|---|---|---|---|",
            f"| Σ δ ODT − Σ δ IQL, within run (read; claim: > 0) | {within.text()} | — | {word} |",
            f"| Σ δ ODT − Σ δ IQL, Table 1's δ (described) | {table1.text()} | "
            f"{sums['delta_odt'] - sums['delta_iql']:+.1f} | described |",
            f"| Σ ODT (online) − Σ IQL (online) (described) | {online.text()} | "
            f"{sums['odt_online'] - sums['iql_online']:+.1f} | described |",
            "", "The paper's Σ δ is Table 1's definition; it has no within-run reading. rliable's aggregates "
            "over the rows are in `paper_tables/<preset>/table1.md`.", ""]


def main(argv: list[str] | None = None) -> int:
    args = analysis_parser("python -m studies.rows.analysis", __doc__, "paper_tables/rows_protocol_cpu.md").parse_args(argv)
    runs = analysis_runs(args, "table1")
    if runs is None:
        return 1
    curves = agg.load_results(args.results, args.preset, "table1")
    return emit("\n".join(report_lines(runs, curves, args.preset)), args.out)


if __name__ == "__main__":
    sys.exit(main())
