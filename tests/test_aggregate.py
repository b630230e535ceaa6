"""Aggregation, tables, the range check and the figures, on results trees written directly
(no training): same tree -> same frame and table, missing stays missing, failed shows as
failed, deltas/sums/bold, the paper's numbers, rliable, the check's exit codes, every figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from benchmarks import aggregate as agg
from benchmarks import check, plots, tables
from benchmarks import records as rec
from benchmarks.experiments import RunSpec


def fake_run(root, method, dataset, seed, status="complete", final=50.0, offline=40.0,
             experiment="table1", preset="smoke", variant="default", nll=(3.0, 1.0)):
    """A run directory as run_one would leave it, with a two-phase curve."""
    spec = RunSpec(experiment, method, dataset, seed, preset, variant=variant)
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / rec.PROVENANCE, {"source": "generated-smoke"})
    curve = [{"phase": "pretrain", "updates": 10, "online_samples": 0, "score_mean": offline,
              "return_mean": offline * 10, "nll": nll[0], "entropy": -1.0, "lambda": 0.1},
             {"phase": "online", "updates": 20, "online_samples": 100, "score_mean": final,
              "return_mean": final * 10, "nll": nll[1], "entropy": -2.0, "lambda": 0.05}]
    if status == "partial":
        rec.write_curve(d / rec.CURVE, curve[:1])
        return spec
    rec.write_curve(d / rec.CURVE, curve if status == "complete" else [])
    record = {"status": status, "run_id": spec.run_id}
    if status == "complete":
        record.update(final_score=final, offline_score=offline, final_return=final * 10,
                      offline_return=offline * 10, counters={"wall_time": 1.0})
    else:
        record["error"] = "RuntimeError: boom"
    rec.write_json(d / rec.RECORD, record)
    return spec


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "results"
    for s in range(3):
        fake_run(root, "odt", "hopper-medium", s, final=90.0 + s, offline=60.0)
        fake_run(root, "odt-offline", "hopper-medium", s, final=66.0 + s)
        fake_run(root, "iql", "hopper-medium", s, final=67.0, offline=64.0)
        fake_run(root, "dt", "hopper-medium", s, final=61.0)
        fake_run(root, "odt", "walker2d-medium", s, final=70.0)
    fake_run(root, "iql", "walker2d-medium", 0, status="failed")
    fake_run(root, "iql", "walker2d-medium", 1, status="diverged")
    fake_run(root, "dt", "walker2d-medium", 0, status="partial")
    return root


def test_same_tree_twice_gives_the_same_frames_and_tables(tree):
    a, b = agg.load_results(tree), agg.load_results(tree)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(agg.load_runs(tree), agg.load_runs(tree))
    runs = agg.load_runs(tree, "smoke", "table1")
    assert tables.table1_text(runs, "smoke", reps=200) == tables.table1_text(agg.load_runs(tree, "smoke", "table1"), "smoke", reps=200)


def test_tidy_frame_has_one_row_per_curve_row_and_keeps_runs_without_curves(tree):
    df = agg.load_results(tree)
    complete = df[df.status == "complete"]
    assert len(complete) == 2 * 15  # 15 complete runs x 2 rows
    failed = df[df.status.isin(["failed", "diverged"])]
    assert len(failed) == 2 and failed.step.eq(-1).all() and failed.phase.isna().all()
    assert set(df.status) == {"complete", "failed", "diverged", "partial"}
    assert {"preset", "experiment", "method", "dataset", "variant", "seed", "nll", "lambda"} <= set(df.columns)
    assert "returns" not in df.columns


def test_table1_cells_means_deltas_missing_and_failed(tree):
    cells = tables.table1_cells(agg.load_runs(tree, "smoke", "table1"))
    hop = cells["hopper-medium"]
    assert hop["odt_online"].mean == pytest.approx(91.0) and hop["odt_online"].n == 3
    assert hop["odt_online"].std == pytest.approx(np.std([90.0, 91.0, 92.0]))
    assert hop["odt_offline"].mean == pytest.approx(67.0)
    assert hop["delta_odt"].mean == pytest.approx(24.0)
    assert hop["iql_offline"].mean == pytest.approx(64.0) and hop["delta_iql"].mean == pytest.approx(3.0)
    assert not hop["sac"].present  # never ran: missing, not zero
    walker = cells["walker2d-medium"]
    assert not walker["iql_online"].present and walker["iql_online"].failed == 2
    assert not walker["dt"].present and walker["dt"].partial == 1
    assert not cells["antmaze-umaze"]["odt_online"].present


def test_table1_markdown_shows_missing_failed_bold_and_the_paper(tree):
    text = tables.table1_text(agg.load_runs(tree, "smoke", "table1"), "smoke", reps=200)
    ours = text.split("## The paper's Table 1")[0]
    hop = next(line for line in ours.splitlines() if line.startswith("| hopper-medium |"))
    cells = [c.strip() for c in hop.strip("|").split("|")]
    assert cells[3] == "**91.00 ± 0.82**"  # best 0.2m cell in bold
    assert cells[4] == "**24.00**" and cells[8] == tables.MISSING_MD
    # our columns name the budget they ran with; the paper's keep 0.2m
    assert "| ODT (300) |" in ours and "ODT (0.2m)" not in ours and "| ODT (0.2m) |" in text
    assert [tables.online_budget_label(p) for p in ("paper", "cpu", "smoke")] == ["0.2m", "5k", "300"]
    walker = next(line for line in ours.splitlines() if line.startswith("| walker2d-medium |"))
    assert "failed (2)" in walker and "running (1)" in walker
    ant = next(line for line in ours.splitlines() if line.startswith("| antmaze-umaze |"))
    assert "0.00" not in ant and ant.count(tables.MISSING_MD) == 10
    loco_sum = next(line for line in ours.splitlines() if line.startswith("| sum (locomotion) |"))
    assert loco_sum.count(tables.MISSING_MD) == 10  # rows are missing, so no sums
    assert "97.54 ± 2.10" in text and "605.02" in text  # the paper's numbers
    diff = text.split("## Ours minus the paper's")[1]
    assert f"{91.0 - 97.54:.2f}" in diff
    assert "SMOKE PRESET" in text


def test_block_sums_only_when_every_row_of_the_block_has_a_number():
    cell = tables.Cell(10.0, 1.0, 3)
    cells = {d: {c.key: cell for c in tables.TABLE1_COLUMNS} for d in tables.TABLE1_DATASETS}
    sums = tables.block_sums(cells)
    assert sums["locomotion"]["odt_online"] == pytest.approx(80.0)
    assert sums["antmaze"]["dt"] == pytest.approx(20.0)
    cells["ant-medium"]["sac"] = tables.Cell()
    assert tables.block_sums(cells)["locomotion"]["sac"] is None


def test_table1_latex_renders(tree):
    tex = tables.table1_text(agg.load_runs(tree, "smoke", "table1"), "smoke", tex=True, reps=200)
    assert tex.count(r"\begin{tabular}") == 4 and r"\textbf{91.00 $\pm$ 0.82}" in tex
    assert "failed (2)" in tex and tables.MISSING_TEX in tex


def test_write_experiment_tables_writes_md_tex_json(tree, tmp_path):
    paths = tables.write_experiment_tables("table1", tree, "smoke", tmp_path / "pt", reps=200)
    assert sorted(p.name for p in paths) == ["table1.json", "table1.md", "table1.tex"]
    data = json.loads((tmp_path / "pt" / "table1.json").read_text())
    cell = next(c for c in data["cells"] if c["dataset"] == "hopper-medium" and c["column"] == "odt_online")
    assert cell["mean"] == pytest.approx(91.0) and cell["n"] == 3


def test_rliable_is_seeded_and_iqm_of_constant_scores_is_the_constant():
    m = {"A": np.full((5, 3), 0.5), "B": np.linspace(0, 1, 15).reshape(5, 3)}
    s1 = agg.rliable_summary(m, [("B", "A")], reps=300)
    s2 = agg.rliable_summary(m, [("B", "A")], reps=300)
    assert s1 == s2
    assert s1["aggregates"]["A"]["iqm"] == pytest.approx(0.5)
    assert s1["aggregates"]["A"]["optimality_gap"] == pytest.approx(0.5)
    lo, hi = s1["aggregates"]["B"]["iqm_ci"]
    assert lo <= s1["aggregates"]["B"]["iqm"] <= hi
    assert 0.0 <= s1["improvement"]["B > A"]["p"] <= 1.0


def test_hyperparameter_tables_match_the_paper_and_catch_drift(monkeypatch):
    assert tables.hyperparameter_mismatches() == []
    from benchmarks import reference
    real = reference.load("hyperparameters")
    tampered = json.loads(json.dumps(real))
    tampered["online"]["rows"]["hopper-medium"]["lr"] = 0.5
    monkeypatch.setattr(reference, "load", lambda name: tampered if name == "hyperparameters" else real)
    bad = tables.hyperparameter_mismatches()
    assert len(bad) == 1 and "hopper-medium" in bad[0] and "0.5" in bad[0]


def test_variant_table_for_table_rtg_lists_the_paper(tmp_path):
    root = tmp_path / "r"
    for v in ("g_online=2g*", "g_online=g*"):
        fake_run(root, "odt", "hopper-medium", 0, experiment="table_rtg", variant=v)
    text = tables.variant_text(agg.load_runs(root, "smoke", "table_rtg"), "table_rtg", "smoke")
    assert "97.54" in text and "95.70" in text and "50.00" in text


# ----- the range check -------------------------------------------------------------------
RULES = {"rules": [{"experiment": "table1", "methods": ["odt"], "datasets": "*", "metric": "final_score",
                    "min": 0, "max": 100},
                   {"experiment": "table1", "methods": ["odt"], "datasets": "*", "metric": "drop:nll", "min": 1.0}]}


def test_check_passes_in_range_and_names_cells_out_of_range(tmp_path):
    root = tmp_path / "r"
    for s in range(2):
        fake_run(root, "odt", "hopper-medium", s, final=50.0)
        fake_run(root, "odt", "walker2d-medium", s, final=150.0, nll=(1.0, 1.5))
    found = check.check(root, "smoke", RULES)
    bad = [f.text for f in found if not f.ok]
    assert len(bad) == 2
    assert any("walker2d-medium final_score = 150.000" in b and "outside" in b for b in bad)
    assert any("walker2d-medium drop:nll = -0.500" in b for b in bad)
    assert all("hopper-medium" not in b for b in bad)


def test_check_exit_codes(tmp_path, capsys):
    root = tmp_path / "r"
    fake_run(root, "odt", "hopper-medium", 0, final=50.0)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    assert check.main(["--results", str(root), "--expected", str(rules)]) == 0
    fake_run(root, "odt", "hopper-medium", 1, final=float("nan"))
    assert check.main(["--results", str(root), "--expected", str(rules)]) == 1
    assert "not finite" in capsys.readouterr().out


def test_check_fails_on_failed_runs_and_on_rules_that_match_nothing(tmp_path, capsys):
    root = tmp_path / "r"
    fake_run(root, "odt", "hopper-medium", 0)
    fake_run(root, "iql", "hopper-medium", 0, status="diverged")
    found = check.check(root, "smoke", RULES)
    assert any("run diverged" in f.text and not f.ok for f in found)
    empty = check.check(tmp_path / "nothing", "smoke", RULES)
    assert empty and all(not f.ok and "no complete runs" in f.text for f in empty)
    assert check.main(["--results", str(root), "--preset", "nope"]) == 2
    assert check.main(["--results", str(root), "--expected", str(tmp_path / "absent.json")]) == 2


def test_derived_rules_reproduce_their_runs_and_catch_a_shift(tmp_path):
    root = tmp_path / "r"
    for s, score in enumerate([30.0, 34.0, 38.0, 42.0, 46.0]):
        fake_run(root, "odt", "hopper-medium", s, final=score, offline=score - 20.0, preset="cpu")
        fake_run(root, "dt", "hopper-medium", s, final=50.0, preset="cpu")
    fake_run(root, "sac", "hopper-medium", 0, final=5.0, preset="cpu")  # one run: too few for a rule
    rules = tmp_path / "cpu.json"
    rules.write_text(json.dumps({"description": "d", "rules": [RULES["rules"][1]]}))
    assert check.main(["--preset", "cpu", "--results", str(root), "--derive", str(rules)]) == 0
    derived = json.loads(rules.read_text())
    assert derived["description"] == "d" and derived["rules"][0] == RULES["rules"][1]  # hand rule kept
    cells = {(r["methods"][0], r["metric"]): r for r in derived["rules"][1:]}
    assert set(cells) == {("odt", "offline_score"), ("odt", "final_score"), ("dt", "final_score")}
    odt = cells[("odt", "final_score")]
    assert (odt["mean"], odt["n"]) == (38.0, 5) and odt["sd"] == pytest.approx(np.std([30, 34, 38, 42, 46], ddof=1), abs=1e-3)
    one, five = check.rule_range(odt, 1), check.rule_range(odt, 5)
    assert one[0] < five[0] < 38.0 < five[1] < one[1]  # fewer seeds checked: a wider range
    assert check.main(["--preset", "cpu", "--results", str(root), "--expected", str(rules)]) == 0
    shifted = tmp_path / "shifted"
    for s in range(5):
        fake_run(shifted, "odt", "hopper-medium", s, final=10.0, offline=18.0, preset="cpu")
        fake_run(shifted, "dt", "hopper-medium", s, final=50.0, preset="cpu")
    bad = [f.text for f in check.check(shifted, "cpu", derived) if not f.ok]
    assert len(bad) == 1 and "odt hopper-medium final_score = 10.000" in bad[0]


def test_the_shipped_smoke_ranges_are_not_vacuous(tmp_path):
    expected = check.load_expected("smoke")
    root = tmp_path / "r"
    fake_run(root, "odt", "hopper-medium", 0, final=1.0, offline=1.0, nll=(30.0, 0.0))
    fake_run(root, "iql", "hopper-medium", 0, final=1.0, offline=1.0)
    ok = check.check(root, "smoke", expected)
    assert not [f.text for f in ok if not f.ok and "drop:q_loss" not in f.text]
    fake_run(root, "odt", "walker2d-medium", 0, final=math.inf, offline=1.0, nll=(1.0, 5.0))
    bad = [f.text for f in check.check(root, "smoke", expected) if not f.ok]
    assert any("walker2d-medium final_score" in b for b in bad)
    assert any("walker2d-medium drop:nll" in b for b in bad)


# ----- figures ---------------------------------------------------------------------------
def test_every_figure_is_written_and_missing_ones_say_so(tree, tmp_path):
    out = tmp_path / "figs"
    paths = plots.make_plots(tree, out, ["smoke"])
    names = {p.stem for p in paths}
    assert names == {f.name for f in plots.FIGURES} | {"sampling_probabilities"}
    for f in plots.FIGURES:
        for ext in ("png", "pdf", "csv"):
            assert (out / "smoke" / f"{f.name}.{ext}").stat().st_size > 0
    missing = pd.read_csv(out / "smoke" / "hindsight.csv")
    assert list(missing.columns) == ["missing"] and "no runs" in missing.iloc[0, 0]
    curves = pd.read_csv(out / "smoke" / "learning_curves.csv")
    assert set(curves.method) == {"odt", "iql"} and len(curves) > 0
    conv = pd.read_csv(out / "smoke" / "convergence.csv")
    assert {"score_mean", "nll", "entropy", "lambda"} <= set(conv.metric)


def test_on_grid_interpolates_each_run():
    df = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "m": ["x"] * 4,
                       "online_samples": [0, 100, 0, 50], "score_mean": [0.0, 10.0, 0.0, 10.0]})
    g = plots.on_grid(df, "online_samples", "score_mean", ["m"], points=3)
    a = g[g.run_id == "a"]
    assert list(a.online_samples) == [0, 50, 100] and list(a.score_mean) == [0, 5, 10]
    assert list(g[g.run_id == "b"].score_mean) == [0, 10]  # no extrapolation past a run's end


@pytest.mark.parametrize("preset", ["smoke", "cpu", "paper"])
def test_shipped_ranges_parse_and_name_known_things(preset):
    from benchmarks.experiments import EXPERIMENTS, TABLE1_METHODS
    from benchmarks.reference import load
    expected = check.load_expected(preset)
    assert expected["rules"]
    for r in expected["rules"]:
        assert r["experiment"] in EXPERIMENTS
        assert r["methods"] == "*" or set(r["methods"]) <= set(TABLE1_METHODS)
        assert r["metric"] in check.RECORD_METRICS or r["metric"].startswith("drop:")
        assert r.get("min", -math.inf) < r.get("max", math.inf)
    if preset == "paper":  # every published Table 1 cell is inside its own range
        ref = load("table1")["rows"]
        assert len(expected["rules"]) == sum(isinstance(v, list) for row in ref.values() for v in row.values())
        for r in expected["rules"]:
            (d,) = r["datasets"]
            means = [v[0] for v in ref[d].values() if isinstance(v, list)]
            assert any(r["min"] < m < r["max"] for m in means)


def test_curriculum_figure_draws_the_exploration_rtg_beside_the_return(tmp_path):
    root = tmp_path / "results"
    for variant, rtgs in (("curriculum", (2000.0, 2600.0)), ("fixed", (7200.0, 7200.0))):
        for seed in range(2):
            spec = fake_run(root, "odt", "hopper-medium", seed, experiment="curriculum", variant=variant)
            curve = [{"phase": "pretrain", "updates": 10, "online_samples": 0, "score_mean": 40.0}]
            curve += [{"phase": "online", "updates": 10 * (i + 2), "online_samples": 100 * (i + 1),
                       "score_mean": 50.0 + i, "exploration_rtg": g} for i, g in enumerate(rtgs)]
            rec.write_curve(rec.run_dir(root, spec) / rec.CURVE, curve)
    plots.make_plots(root, tmp_path / "figs", ["smoke"], names=["curriculum"])
    data = pd.read_csv(tmp_path / "figs" / "smoke" / "curriculum.csv")
    assert set(data.metric) == {"exploration_rtg", "score_mean"}
    last = data[data.metric == "exploration_rtg"].groupby("variant")["value"].max()
    assert last["curriculum"] == pytest.approx(2600.0) and last["fixed"] == pytest.approx(7200.0)
