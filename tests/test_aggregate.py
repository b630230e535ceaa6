"""Aggregation, tables, the range check and the figures, on results trees written directly
(no training): same tree -> same frame and table, missing stays missing, failed shows as
failed, deltas/sums/bold, the paper's numbers, rliable, the check's exit codes, every figure."""

from __future__ import annotations

import fnmatch
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
    assert "0.00" not in ant and ant.count(tables.MISSING_MD) == len(tables.TABLE1_COLUMNS)
    loco_sum = next(line for line in ours.splitlines() if line.startswith("| sum (locomotion) |"))
    assert loco_sum.count(tables.MISSING_MD) == len(tables.TABLE1_COLUMNS)  # rows are missing, so no sums
    assert "97.54 ± 2.10" in text and "605.02" in text  # the paper's numbers
    diff = text.split("## Ours minus the paper's")[1]
    assert f"{91.0 - 97.54:.2f}" in diff
    assert "SMOKE PRESET" in text
    # the caption gives the fullest cell's seed count as an upper bound, not every cell's
    assert "up to 3 seeds per cell, (n=k) marking a cell of fewer" in ours


def test_a_cell_with_fewer_seeds_than_the_fullest_is_marked(tree):
    fake_run(tree, "odt", "hopper-medium", 3, final=93.0, offline=60.0)  # 4 seeds; the rest keep 3
    ours = tables.table1_text(agg.load_runs(tree, "smoke", "table1"), "smoke", reps=200).split("## The paper's")[0]
    assert "up to 4 seeds per cell" in ours
    hop = next(line for line in ours.splitlines() if line.startswith("| hopper-medium |"))
    assert "(n=3)" in hop and "91.50 ± 1.12 |" in hop.replace("**", "")  # 4 seeds: no n mark


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


def test_rliable_interval_depends_only_on_its_own_runs():
    """A method's bootstrap interval, and a pair's, are the same whether or not other methods
    are summarised beside them."""
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(0, 1, (5, 3)) for _ in range(3))
    alone = agg.rliable_summary({"A": a, "B": b}, [("B", "A")], reps=300)
    crowded = agg.rliable_summary({"C": c, "A": a, "B": b}, [("C", "A"), ("B", "A")], reps=300)
    for name in ("A", "B"):
        assert crowded["aggregates"][name] == alone["aggregates"][name]
    assert crowded["improvement"]["B > A"] == alone["improvement"]["B > A"]
    assert agg.bootstrap_seed(0, "A") != agg.bootstrap_seed(0, "B") != agg.bootstrap_seed(1, "B")


def test_table1_aggregates_cover_the_same_gym_tasks_for_every_method(tmp_path):
    """DT and ODT on three Gym datasets, IQL on two of them with 5 runs and on the third with 2,
    SAC on one, an AntMaze run: with the protocols' minimum of 5 runs every row aggregates the
    two datasets all but SAC share (SAC its one), never AntMaze and not the cell still filling,
    and a row's IQM is the IQM over exactly those datasets' runs."""
    root = tmp_path / "results"
    for s in range(5):
        for d in ("hopper-medium", "walker2d-medium", "halfcheetah-medium"):
            fake_run(root, "dt", d, s, final=10.0 if d == "halfcheetah-medium" else 60.0)
            fake_run(root, "odt", d, s, final=80.0, offline=60.0)
            fake_run(root, "odt-offline", d, s, final=60.0)
            if d != "halfcheetah-medium" or s < 2:
                fake_run(root, "iql", d, s, final=70.0, offline=65.0)
        fake_run(root, "sac", "hopper-medium", s, final=5.0)
        fake_run(root, "odt", "antmaze-umaze", s, final=0.0)
    runs = agg.load_runs(root)
    every = tables.table1_rliable(runs, reps=50, min_runs=1)
    assert every["tasks"] == ["halfcheetah-medium", "hopper-medium", "walker2d-medium"]
    assert every["aggregates"]["IQL (0.2m)"]["runs"] == 2  # IQL's datasets cut to the partial cell's 2
    summary = tables.table1_rliable(runs, reps=50, min_runs=tables.aggregate_min_runs("cpu"))
    assert summary["tasks"] == ["hopper-medium", "walker2d-medium"]
    assert summary["aggregates"]["IQL (0.2m)"]["runs"] == 5
    rows = summary["aggregates"]
    assert rows["DT"]["tasks"] == 2 and rows["DT"]["iqm"] == pytest.approx(0.60)  # not halfcheetah's 10
    assert rows["ODT (0.2m)"]["tasks"] == 2 and rows["ODT (0.2m)"]["iqm"] == pytest.approx(0.80)
    assert rows["SAC (0.2m)"]["tasks"] == 1
    assert summary["improvement"]["ODT (0.2m)* > IQL (0.2m)*"]["p"] == pytest.approx(1.0)
    text = tables.table1_text(agg.load_runs(root), "smoke", summary=summary)
    assert "(hopper-medium, walker2d-medium; SAC over those of them" in text


def test_hyperparameter_tables_match_the_paper_and_catch_drift(monkeypatch):
    assert tables.hyperparameter_mismatches() == []
    from benchmarks import reference
    real = reference.load("hyperparameters")
    tampered = json.loads(json.dumps(real))
    tampered["online"]["rows"]["hopper-medium"]["lr"] = 0.5
    monkeypatch.setattr(reference, "load", lambda name: tampered if name == "hyperparameters" else real)
    bad = tables.hyperparameter_mismatches()
    assert len(bad) == 1 and "hopper-medium" in bad[0] and "0.5" in bad[0]


def test_tables_out_writes_no_stray_hyperparameter_copy(tmp_path):
    """--out DIR gets the experiment's tables only; hyperparameters.* go where asked, or nowhere."""
    root = tmp_path / "r"
    root.mkdir()
    out, hyper = tmp_path / "t" / "cpu", tmp_path / "h"
    assert tables.main(["--results", str(root), "--out", str(out)]) == 0
    assert not list(tmp_path.rglob("hyperparameters.*"))
    assert tables.main(["--results", str(root), "--out", str(out), "--hyperparameters-out", str(hyper)]) == 0
    assert sorted(p.name for p in hyper.iterdir()) == ["hyperparameters.md", "hyperparameters.tex"]
    assert not list((tmp_path / "t").rglob("hyperparameters.*"))


def test_tables_at_a_preset_without_results_names_the_presets_that_have_them(tree, tmp_path, capsys):
    assert tables.main(["--results", str(tree), "--out", str(tmp_path / "t")]) == 0  # default preset: paper
    err = capsys.readouterr().err
    assert "no results at preset paper" in err and "presets with results: smoke" in err
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


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


@pytest.mark.parametrize("spec_text", ["{not json", '{"preset": "smoke"}', "[]"])
def test_a_complete_run_with_a_bad_spec_is_named_not_a_traceback(tmp_path, capsys, spec_text):
    root = tmp_path / "r"
    fake_run(root, "odt", "hopper-medium", 0)
    bad = rec.run_dir(root, fake_run(root, "odt", "hopper-medium", 1))
    (bad / rec.SPEC).write_text(spec_text)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    assert check.main(["--results", str(root), "--expected", str(rules)]) == 2
    assert tables.main(["--results", str(root), "--preset", "smoke", "--out", str(tmp_path / "t")]) == 2
    assert plots.main(["--results", str(root), "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err.count(str(bad / rec.SPEC)) == 3 and "results/archive/" in err
    assert (bad / rec.SPEC).read_text() == spec_text  # nothing rewritten


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
    ranges = ["runs", "range", "regression"]  # these fake runs have no config: external rules below
    ok = check.check(root, "smoke", expected, families=ranges)
    assert not [f.text for f in ok if not f.ok and "drop:q_loss" not in f.text]
    fake_run(root, "odt", "walker2d-medium", 0, final=math.inf, offline=1.0, nll=(1.0, 5.0))
    bad = [f.text for f in check.check(root, "smoke", expected, families=ranges) if not f.ok]
    assert any("walker2d-medium final_score" in b for b in bad)
    assert any("walker2d-medium drop:nll" in b for b in bad)


# ----- the external rule family: yardsticks that are not the checked runs ----------------
EXTERNAL = [{"kind": k, "experiment": "table1", **extra} for k, extra in (
    ("consistent_records", {}), ("not_degenerate", {}),
    ("online_phase", {"methods": ["odt", "odt-control", "iql"]}),
    ("control", {"methods": ["odt", "odt-control"]}),
    ("beats_random", {"margin": 2.0}),
    ("dataset_card", {"methods": ["dt", "odt-offline", "odt", "odt-control"]}))]


def real_run(root, method, dataset, seed, final=50.0, offline=40.0, preset="cpu", card=(35.0, 65.0)):
    """A complete run with every file run_one writes: the spec, the method's real config, a
    provenance with a dataset card, and a record whose rows, scores (D4RL-normalised returns)
    and counters fit that config. ``offline`` is ignored for one-phase methods."""
    from benchmarks.datasets.registry import get_spec
    from benchmarks.datasets.scores import unnormalize
    from benchmarks.methods import method_config
    from rlbase.config import to_dict

    spec = RunSpec("table1", method, dataset, seed, preset)
    d = rec.run_dir(root, spec)
    config = to_dict(method_config(method, dataset, preset, seed))
    budget = check.online_budget(config)
    ds = get_spec(dataset)
    spread = 1.0 + seed + 10 * ["dt", "odt-offline", "odt", "odt-control", "iql", "sac"].index(method)

    def row(phase, score, updates, samples):
        ret = float(unnormalize(score, ds.ref_min_score, ds.ref_max_score))
        return {"phase": phase, "updates": updates, "online_samples": samples, "score_mean": score,
                "return_mean": ret, "returns": [ret - spread, ret + spread]}

    two_phase = method in ("odt", "odt-control", "iql")
    first = None if method == "sac" else row("pretrain", offline if two_phase else final, 100, 0)
    last = row("online", final, 200, budget) if budget else first
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / rec.CONFIG, config)
    rec.write_json(d / rec.PROVENANCE, {"name": dataset, "source": "generated", "card": {
        "normalized_returns": {"mean": card[0], "max": card[1], "min": 0.0}}})
    rec.write_curve(d / rec.CURVE, [r for i, r in enumerate((first, last)) if r is not None and (i == 0 or r is not first)])
    rec.write_json(d / rec.RECORD, {
        "status": "complete", "run_id": spec.run_id, "spec": spec.to_dict(), "final": last, "offline": first,
        "final_score": last["score_mean"], "final_return": last["return_mean"],
        "offline_score": first and first["score_mean"], "offline_return": first and first["return_mean"],
        "counters": {"online_samples": budget, "updates": last["updates"], "wall_time": 1.0}})
    return d


@pytest.fixture
def good_tree(tmp_path):
    """Table 1 cells that every external rule accepts."""
    root = tmp_path / "good"
    for s in range(3):
        real_run(root, "odt", "hopper-medium", s, final=60.0 + s, offline=40.0 + s)
        real_run(root, "odt-control", "hopper-medium", s, final=45.0 + s, offline=40.0 + s)
        real_run(root, "odt-offline", "hopper-medium", s, final=44.0 + s)
        real_run(root, "dt", "hopper-medium", s, final=32.0 + s)
        real_run(root, "iql", "hopper-medium", s, final=30.0 + s, offline=28.0 + s)
        real_run(root, "sac", "hopper-medium", s, final=7.0 + s)
    return root


def _external_failures(root, rules=None):
    return [f.text for f in check.check(root, "cpu", {"external": rules or EXTERNAL}) if not f.ok]


def test_external_rules_accept_consistent_plausible_runs(good_tree):
    found = check.check(good_tree, "cpu", {"external": EXTERNAL})
    assert found and all(f.family == "external" for f in found)
    assert [f.text for f in found if not f.ok] == []
    assert any("odt vs odt-control hopper-medium: odt - control = +15.00" in f.text for f in found)
    # the shipped cpu rules' external family, those that reach this tree's hopper-medium runs
    # (the AntMaze rules and SAC's halfcheetah rule have nothing to check here)
    shipped = [r for r in check.load_expected("cpu")["external"]
               if any(fnmatch.fnmatch("hopper-medium", p) for p in r.get("datasets", ["*"]))]
    assert _external_failures(good_tree, shipped) == []


def test_shipped_antmaze_rules_fail_a_cloner_at_zero_not_one_below_half_the_datas_success(tmp_path):
    """The cpu preset's AntMaze sizing reached 4-26% success at 2e4 updates, under the card floor
    (half the data's 66% success, less 5): the shipped rules ask such a cell only to beat random
    (0% success) by 5 points, and still fail a cell that never reaches the goal."""
    shipped = [r for r in check.load_expected("cpu")["external"]
               if any(fnmatch.fnmatch("antmaze-umaze", p) for p in r.get("datasets", ["*"]))
               and r["kind"] in ("dataset_card", "beats_random")]
    assert {r["kind"] for r in shipped} == {"beats_random"}
    low, zero = tmp_path / "low", tmp_path / "zero"
    for s in range(4):
        real_run(low, "dt", "antmaze-umaze", s, final=20.0 + s, card=(65.98, 100.0))
        real_run(zero, "dt", "antmaze-umaze", s, final=0.0, card=(65.98, 100.0))
    assert _external_failures(low, shipped) == []
    (bad,) = _external_failures(zero, shipped)
    assert "dt antmaze-umaze" in bad


def test_swapped_records_fail_the_consistency_rule(good_tree):
    d = {m: next(good_tree.glob(f"cpu/table1/{m}__hopper-medium__default__s0__*")) for m in ("odt", "odt-offline", "iql", "sac")}
    a, b = (d["odt"] / rec.RECORD).read_bytes(), (d["odt-offline"] / rec.RECORD).read_bytes()
    (d["odt"] / rec.RECORD).write_bytes(b)
    (d["odt-offline"] / rec.RECORD).write_bytes(a)
    bad = _external_failures(good_tree, [EXTERNAL[0]])
    assert len(bad) == 2
    odt_bad = next(t for t in bad if d["odt"].name + ": inconsistent" in t)
    assert "record.json is odt-offline__" in odt_bad and "record spec method='odt-offline'" in odt_bad
    assert "took 0 online samples of a budget of" in odt_bad
    off_bad = next(t for t in bad if d["odt-offline"].name + ": inconsistent" in t)
    assert "but its config has no online budget" in off_bad

    # configs swapped between methods: the record no longer matches what the config describes
    cfg_iql, cfg_sac = (d["iql"] / rec.CONFIG).read_bytes(), (d["sac"] / rec.CONFIG).read_bytes()
    (d["iql"] / rec.CONFIG).write_bytes(cfg_sac)
    (d["sac"] / rec.CONFIG).write_bytes(cfg_iql)
    bad = _external_failures(good_tree, [EXTERNAL[0]])
    assert any(d["iql"].name in t and "not an IQL config" in t for t in bad)
    assert any(d["sac"].name in t and "not a SAC config" in t for t in bad)


def test_odt_and_control_configs_swapped_or_a_dt_record_labelled_odt_fail(good_tree):
    odt = next(good_tree.glob("cpu/table1/odt__hopper-medium__default__s1__*"))
    ctl = next(good_tree.glob("cpu/table1/odt-control__hopper-medium__default__s1__*"))
    a, b = (odt / rec.CONFIG).read_bytes(), (ctl / rec.CONFIG).read_bytes()
    (odt / rec.CONFIG).write_bytes(b)
    (ctl / rec.CONFIG).write_bytes(a)
    bad = _external_failures(good_tree, [EXTERNAL[0]])
    assert any(odt.name in t and "add_rollouts=False" in t for t in bad)
    assert any(ctl.name in t and "add_rollouts=True" in t for t in bad)
    # a whole run directory renamed into another method's cell
    dt = next(good_tree.glob("cpu/table1/dt__hopper-medium__default__s2__*"))
    dt.rename(dt.parent / dt.name.replace("dt__", "odt-offline__x"))
    assert any("holds the spec of dt__hopper-medium" in t for t in _external_failures(good_tree, [EXTERNAL[0]]))


def test_zeroed_records_fail(good_tree, tmp_path):
    # every score written as 0 (a reporting bug): inconsistent with the returns, and degenerate
    for path in good_tree.glob("cpu/table1/*/record.json"):
        r = json.loads(path.read_text())
        r["final_score"] = 0.0
        r["offline_score"] = 0.0 if r["offline_score"] is not None else None
        path.write_text(json.dumps(r))
    bad = _external_failures(good_tree)
    assert any("not_degenerate: every one of 18 runs scores exactly 0" in t for t in bad)
    assert any("final_score 0.0 is not the final row's score_mean" in t for t in bad)
    assert sum("no better than a random policy" in t for t in bad) == 6  # every cell
    assert any("odt hopper-medium: final score equals the end-of-pretraining score" in t for t in bad)
    assert any("dt hopper-medium offline_score = 0.000" in t and "below what cloning" in t for t in bad)

    # runs that really scored 0 (records consistent): still not better than random, still degenerate
    zero = tmp_path / "zero"
    for s in range(2):
        for m in ("odt", "dt", "iql"):
            real_run(zero, m, "hopper-medium", s, final=0.0, offline=0.0)
    bad = _external_failures(zero)
    assert not any("inconsistent record" in t for t in bad)
    assert any("every one of 6 runs scores exactly 0" in t for t in bad)
    assert sum("no better than a random policy" in t for t in bad) == 3


def test_an_online_phase_that_did_nothing_fails(tmp_path):
    root = tmp_path / "r"
    for s in range(3):
        real_run(root, "odt", "hopper-medium", s, final=40.0 + s, offline=40.0 + s)  # unchanged on every seed
        real_run(root, "iql", "hopper-medium", s, final=30.0 + s, offline=29.0)
    bad = _external_failures(root, [EXTERNAL[2]])
    assert len(bad) == 1 and "odt hopper-medium: final score equals the end-of-pretraining score" in bad[0]
    assert "every one of 3 runs: the online phase changed nothing" in bad[0]
    # a two-phase record whose last row has no more updates than its end of pretraining
    d = next(root.glob("cpu/table1/iql__hopper-medium__default__s0__*"))
    r = json.loads((d / rec.RECORD).read_text())
    r["final"]["updates"] = r["offline"]["updates"]
    (d / rec.RECORD).write_text(json.dumps(r))
    bad = _external_failures(root, [EXTERNAL[2]])
    assert any(d.name in t and "no gradient update after pretraining" in t for t in bad)
    # constant evaluations (no AntMaze success before or after) are not evidence either way
    ant = tmp_path / "ant"
    for s in range(2):
        dd = real_run(ant, "iql", "antmaze-umaze", s, final=0.0, offline=0.0)
        r = json.loads((dd / rec.RECORD).read_text())
        for phase in ("final", "offline"):
            r[phase]["returns"] = [0.0] * 4
        (dd / rec.RECORD).write_text(json.dumps(r))
    found = check.check(ant, "cpu", {"external": [EXTERNAL[2]]})
    assert all(f.ok for f in found) and any("comparison is skipped" in f.text for f in found)


def test_control_comparison_is_optional_and_catches_identical_results(tmp_path):
    root = tmp_path / "r"
    for s in range(2):
        real_run(root, "odt", "hopper-medium", s, final=50.0 + s)
    found = check.check(root, "cpu", {"external": [EXTERNAL[3]]})
    assert [f.ok for f in found] == [True] and "no odt-control runs" in found[0].text
    for s in range(2):
        real_run(root, "odt-control", "hopper-medium", s, final=50.0 + s)  # the rollouts changed nothing
    bad = _external_failures(root, [EXTERNAL[3]])
    assert len(bad) == 1 and "identical final scores on all 2 paired seeds" in bad[0]


def test_duplicated_evaluations_and_card_ranges(tmp_path):
    root = tmp_path / "r"
    for s in range(2):
        real_run(root, "odt-offline", "hopper-medium", s, final=44.0 + s)
    a, b = sorted(root.glob("cpu/table1/odt-offline__*"))
    r = json.loads((a / rec.RECORD).read_text())
    r.update(run_id=b.name, spec=json.loads((b / rec.SPEC).read_text()))
    (b / rec.RECORD).write_text(json.dumps(r))  # s0's results filed as s1's
    bad = _external_failures(root, [EXTERNAL[1]])
    assert len(bad) == 1 and "identical evaluation returns" in bad[0] and a.name in bad[0] and b.name in bad[0]

    card = {"kind": "dataset_card", "experiment": "table1", "low_fraction": 0.5, "slack": 5.0, "high_slack": 15.0}
    cards = tmp_path / "cards"
    real_run(cards, "dt", "hopper-medium", 0, final=10.0, card=(35.0, 65.0))  # below 0.5 * 35 - 5
    real_run(cards, "dt", "walker2d-medium", 0, final=90.0, card=(30.0, 60.0))  # above 60 + 15
    real_run(cards, "dt", "halfcheetah-medium", 0, final=40.0, card=(42.0, 45.0))
    bad = _external_failures(cards, [card])
    assert len(bad) == 2
    assert any("hopper-medium" in t and "[12.50, 80.00]" in t and "below" in t for t in bad)
    assert any("walker2d-medium" in t and "far above the best trajectory" in t for t in bad)
    d = next(cards.glob("cpu/table1/dt__hopper-medium__*"))
    rec.write_json(d / rec.PROVENANCE, {"name": "hopper-medium", "source": "d4rl"})  # no card: skipped
    found = check.check(cards, "cpu", {"external": [card]})
    assert any(f.ok and "hopper-medium" in f.text and "skipped, no dataset card" in f.text for f in found)


def test_a_minari_dataset_scored_by_raw_return_has_no_random_floor_and_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))  # no metadata: no reference scores
    name = "minari:mujoco/hopper/medium-v0"
    assert check.random_policy_score(name) is None
    run = check.RunFiles(tmp_path, {"method": "odt", "dataset": name}, {"final_score": 1234.5}, None, None)
    (finding,) = check._beats_random({"metric": "final_score"}, [run])
    assert finding.ok and "skipped, scored by raw return" in finding.text and "nan" not in finding.text


def test_random_policy_floor_comes_from_the_d4rl_reference_and_a_measurement():
    from benchmarks.datasets.registry import get_spec
    hopper = get_spec("hopper-medium")
    assert float(hopper.score_fn(hopper.ref_min_score)) == 0.0  # D4RL's random policy, by definition
    assert check.random_policy_score("hopper-medium") == check.RANDOM_POLICY_SCORES["hopper"]
    assert check.random_policy_score("walker2d-medium-replay") == 0.0  # measured -0.01: D4RL's 0 is higher
    assert check.random_policy_score("antmaze-umaze") == 0.0
    # the cached numbers are what a fresh measurement gives (Hopper episodes are ~20 steps: fast)
    assert check.measure_random_policy_score("hopper-medium", episodes=20) == pytest.approx(
        check.RANDOM_POLICY_SCORES["hopper"], abs=0.6)


def test_external_rules_cannot_pass_vacuously_and_output_names_each_family(good_tree, tmp_path, capsys):
    bad = _external_failures(good_tree, [{"kind": "beats_random", "experiment": "table1", "datasets": ["ant-*"]}])
    assert len(bad) == 1 and "rule would pass vacuously" in bad[0]
    assert "unknown external rule kind" in _external_failures(good_tree, [{"kind": "nope", "experiment": "table1"}])[0]
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"experiment": "table1", "methods": ["dt"], "datasets": "*", "metric": "final_score", "min": 0, "max": 100},
        {"experiment": "table1", "methods": ["dt"], "datasets": "*", "metric": "final_score", "mean": 80.0,
         "sd": 1.0, "n": 5, "z": 3.0, "slack": 0.0}], "external": EXTERNAL}))
    assert check.main(["--preset", "cpu", "--results", str(good_tree), "--expected", str(rules), "-v"]) == 1
    out = capsys.readouterr().out
    assert "OK   [range] table1 dt hopper-medium final_score" in out
    assert "FAIL [regression] table1 dt hopper-medium final_score = 33.000" in out
    assert "OK   [external] table1 consistent_records" in out
    assert "regression 0/1" in out and "external" in out
    assert check.main(["--preset", "cpu", "--results", str(good_tree), "--expected", str(rules),
                       "--families", "external"]) == 0


@pytest.mark.parametrize("preset", ["smoke", "cpu", "paper"])
def test_shipped_external_rules_name_known_kinds_methods_and_datasets(preset):
    from benchmarks.experiments import EXPERIMENTS, TABLE1_DATASETS, TABLE1_METHODS
    external = check.load_expected(preset).get("external", [])
    assert {r["kind"] for r in external} >= {"consistent_records", "not_degenerate", "online_phase", "control"}
    for r in external:
        assert r["kind"] in check.EXTERNAL_KINDS and r["experiment"] in EXPERIMENTS and r.get("why")
        assert r.get("methods", "*") == "*" or set(r["methods"]) <= set(TABLE1_METHODS)
        patterns = r.get("datasets", "*")
        assert any(check._matches(d, patterns) for d in TABLE1_DATASETS)


# ----- figures ---------------------------------------------------------------------------
def test_every_figure_is_written_and_missing_ones_say_so(tree, tmp_path):
    out = tmp_path / "figs"
    paths = plots.make_plots(tree, out, ["smoke"], missing=True)
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
    stability = pd.read_csv(out / "smoke" / "stability.csv")  # Fig. 11 from Table 1's hopper-medium runs
    assert set(stability.method) == {"odt", "iql"} and stability.run_id.str.contains("hopper").all()


def test_learning_curve_legends_count_runs_and_name_only_what_the_panel_draws():
    import matplotlib.pyplot as plt
    rows = []
    for dataset, method, seeds in [("hopper-medium", "odt", 3), ("hopper-medium", "sac", 2),
                                   ("antmaze-umaze", "odt", 1)]:
        for seed in range(seeds):
            for x in (0, 50, 100):
                rows.append({"run_id": f"{method}-{dataset}-{seed}", "dataset": dataset, "method": method,
                             "status": "complete", "phase": "online", "online_samples": x,
                             "score_mean": float(x + seed)})
    fig = plt.figure()
    plots.draw_learning_curves(pd.DataFrame(rows), fig)
    legends = {ax.get_title(): [t.get_text() for t in ax.get_legend().get_texts()]
               for ax in fig.axes if ax.get_visible()}
    y_labels = {ax.get_title(): ax.get_ylabel() for ax in fig.axes if ax.get_visible()}
    plt.close(fig)
    assert legends == {"hopper-medium": ["odt (n=3)", "sac (n=2)"], "antmaze-umaze": ["odt (n=1)"]}
    # AntMaze's normalized return is its success rate in percent (reference scores 0 and 1)
    assert y_labels == {"hopper-medium": "normalized return", "antmaze-umaze": "success rate (%)"}


def test_a_method_has_one_colour_in_every_figure():
    """ODT's line is the same colour in Table 1's curves (beside IQL and SAC) and beside its
    control, and two methods never share one."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    def colours(draw, methods):
        rows = [{"run_id": f"{m}-{s}", "dataset": "hopper-medium", "method": m, "status": "complete",
                 "phase": "online", "online_samples": x, "score_mean": float(x + s)}
                for m in methods for s in range(2) for x in (0, 50, 100)]
        fig = plt.figure()
        draw(pd.DataFrame(rows), fig)
        (ax,) = [a for a in fig.axes if a.get_visible()]
        found = {t.get_text().split(" ")[0]: to_hex(h.get_color())
                 for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
        plt.close(fig)
        return found

    table1 = colours(plots.draw_learning_curves, ["iql", "odt", "sac"])
    control = colours(plots.draw_control, ["odt", "odt-control"])
    assert table1["odt"] == control["odt"]
    assert len(set(table1.values()) | {control["odt-control"]}) == 4


def test_log_axes_label_plain_numbers_and_no_crowded_minor_ticks():
    import matplotlib.pyplot as plt

    def labels(low, high):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [low, high])
        plots._plain_log_y(ax)
        fig.canvas.draw()
        ticks = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
        plt.close(fig)
        return ticks

    assert {"0.4", "2"} <= set(labels(0.35, 2.0))  # a lambda that falls from 2 to 0.35
    assert labels(0.1, 100) == []  # lambda0 = 100 beside 1: three decades, majors only


def test_final_score_legends_count_runs_per_point_when_points_split_by_dataset():
    import matplotlib.pyplot as plt
    rows = []
    for dataset, variant, seeds in [("hopper-medium", "g_online=2g*", 5), ("walker2d-medium", "g_online=2g*", 5),
                                    ("hopper-medium", "g_online=g*", 5), ("walker2d-medium", "g_online=g*", 3)]:
        for seed in range(seeds):
            rows.append({"run_id": f"{variant}-{dataset}-{seed}", "dataset": dataset, "method": "odt",
                         "variant": variant, "status": "complete", "phase": "online", "online_samples": 100, "step": 0,
                         "score_mean": float(seed)})
    fig = plt.figure()
    plots.draw_table_rtg(pd.DataFrame(rows), fig)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert texts == ["g_online=2g* (n=5 per dataset)", "g_online=g* (n=3-5 per dataset)"]


def _final_score_rows(seeds=5):
    return [{"run_id": f"{variant}-{seed}", "dataset": "hopper-medium", "method": "odt", "variant": variant,
             "status": "complete", "phase": "online", "online_samples": 100, "step": 0, "score_mean": float(seed)}
            for variant in ("g_online=2g*", "g_online=g*") for seed in range(seeds)]


def test_final_score_figures_place_seed_dots_the_same_every_time_and_leave_numpys_rng_alone():
    """The seeds' dots are jittered; regenerating a figure from the same data must give the same
    picture (no churn in git), and drawing must not move the global generator other code uses."""
    import matplotlib.pyplot as plt

    def dot_offsets():
        fig = plt.figure()
        plots.draw_table_rtg(pd.DataFrame(_final_score_rows()), fig)
        xy = np.concatenate([c.get_offsets() for c in fig.axes[0].collections if len(c.get_offsets())])
        plt.close(fig)
        return xy

    np.random.seed(123)
    first = dot_offsets()
    after = np.random.random()
    np.random.seed(999)  # a different global state must not change the dots
    np.random.random(7)
    second = dot_offsets()
    np.random.seed(123)
    assert np.random.random() == after  # drawing consumed nothing from the global generator
    assert len(first) >= 10 and np.array_equal(first, second)
    assert len(np.unique(np.round(first[:, 0], 6))) > 2  # and the dots are jittered, not stacked


def test_lambda_figure_marks_beta_of_the_datasets_action_space():
    """Fig. 12's claim is that entropy reaches beta = -|A| from any lambda0: on walker2d (|A| = 6)
    the entropy panel carries a dashed line at -6 and says so."""
    import matplotlib.pyplot as plt
    # lambda0=1's run goes on to 300 updates (short episodes: more rounds for the same samples)
    rows = [{"run_id": f"l{l0}", "dataset": "walker2d-medium", "method": "odt", "variant": f"lambda0={l0}",
             "status": "complete", "phase": phase, "updates": u, "online_samples": 0, "step": u,
             "entropy": -1.0 - u / 100, "lambda": l0 / (1 + u)}
            for l0 in (0.1, 1) for phase, u in (("pretrain", 10), ("pretrain", 50), ("online", 100), ("online", 300))
            if not (l0 == 0.1 and u == 300)]
    fig = plt.figure()
    data = plots.draw_lambda(pd.DataFrame(rows), fig)
    entropy_ax, lambda_ax = fig.axes[:2]
    flat = [line.get_ydata() for line in entropy_ax.lines if len(set(line.get_ydata())) == 1]
    assert any(np.allclose(y, -6.0) for y in flat)
    assert "β = −|A| = −6" in entropy_ax.get_title()
    assert lambda_ax.get_yscale() == "log"
    upright = [line.get_xdata() for line in lambda_ax.lines if len(set(line.get_xdata())) == 1]
    assert any(np.allclose(x, 50) for x in upright)  # the end of pretraining, dotted
    ends = data[data.metric == "lambda"].groupby("variant").updates.max().to_dict()
    assert ends == {"lambda0=0.1": 100, "lambda0=1": 300}  # each variant to its own end, not the shortest's
    plt.close(fig)


def test_lambda_figure_draws_each_run_to_its_own_end_beyond_the_mean():
    """The mean of an initial lambda stops where its first run stops; a longer seed's later course
    (2026-12-03: lambda0 = 10 seed 21 dips again after 60k updates) is still drawn, thin."""
    import matplotlib.pyplot as plt
    ends = {"short": 100, "long": 300}
    rows = [{"run_id": r, "dataset": "walker2d-medium", "method": "odt", "variant": "lambda0=10", "status": "complete",
             "phase": "online", "updates": u, "online_samples": 0, "step": u, "entropy": -u / 100,
             "lambda": 10 / (1 + u)} for r, end in ends.items() for u in range(10, end + 1, 10)]
    fig = plt.figure()
    data = plots.draw_lambda(pd.DataFrame(rows), fig)
    assert data[data.metric == "lambda"].updates.max() == 100  # the mean: up to the short run's end
    for ax in fig.axes[:2]:
        reach = max(np.nanmax(line.get_xdata()) for line in ax.lines if len(line.get_xdata()) > 1)
        assert reach == 300
    plt.close(fig)


def test_metric_panel_legends_say_how_many_runs_each_variant_averages():
    """Fig. 12's caption says "n in the legends" when its initial lambdas have different seed
    counts: each legend entry of each panel names its variant's number of runs."""
    import matplotlib.pyplot as plt
    runs = [("a", "lambda0=1"), ("b", "lambda0=1"), ("c", "lambda0=1"), ("d", "lambda0=2")]
    rows = [{"run_id": r, "dataset": "walker2d-medium", "method": "odt", "variant": v, "status": "complete",
             "phase": "online", "updates": u, "online_samples": 0, "step": u, "entropy": -u / 100, "lambda": 1 / (1 + u)}
            for r, v in runs for u in (10, 100)]
    fig = plt.figure()
    plots.draw_lambda(pd.DataFrame(rows), fig)
    for ax in fig.axes[:2]:
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["lambda0=1 (n=3)", "lambda0=2 (n=1)"]
    plt.close(fig)


def test_learning_curve_panels_follow_table_1s_row_order():
    """Panels read in Table 1's order (hopper, walker2d, halfcheetah, ant, antmaze), not by name."""
    import matplotlib.pyplot as plt
    datasets = ["ant-medium", "halfcheetah-medium", "hopper-medium-replay", "walker2d-medium", "hopper-medium"]
    rows = [{"run_id": f"odt-{d}", "dataset": d, "method": "odt", "status": "complete", "phase": "online",
             "online_samples": x, "score_mean": float(x)} for d in datasets for x in (0, 100)]
    fig = plt.figure()
    plots.draw_learning_curves(pd.DataFrame(rows), fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    plt.close(fig)
    assert titles == ["hopper-medium", "hopper-medium-replay", "walker2d-medium", "halfcheetah-medium", "ant-medium"]


def test_fig_4_panels_read_small_then_large_as_in_the_paper():
    """Fig. 4's left panel is the small model, its right the large one (not by name), on one y scale."""
    import matplotlib.pyplot as plt
    rows = [{"run_id": f"{size}-{arm}", "variant": f"{size},{arm}", "dataset": "hopper-medium", "method": "odt",
             "status": "complete", "phase": "online", "online_samples": x, "score_mean": float(x)}
            for size in ("large", "small") for arm in ("stochastic", "deterministic") for x in (0, 100)]
    fig = plt.figure()
    plots.draw_stoch(pd.DataFrame(rows), fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    small, large = fig.axes[:2]
    plt.close(fig)
    assert titles == ["small", "large"]
    assert small.get_shared_y_axes().joined(small, large)  # one y scale: the sizes compare by eye


def test_each_learning_curve_ends_where_its_own_first_run_ends():
    """A panel's curves are not cut where another method stopped: ODT's AntMaze runs end at 5,600
    samples (8 rollouts of 700 steps), IQL's at 5,000; each curve averages all its runs up to where
    the first of them ends (odt: 5,600, not its other run's 6,300)."""
    import matplotlib.pyplot as plt
    rows = [{"run_id": r, "dataset": "antmaze-umaze-diverse", "method": m, "status": "complete",
             "phase": "online", "online_samples": x, "score_mean": v}
            for r, m, end in (("odt-0", "odt", 5600), ("odt-1", "odt", 6300), ("iql-0", "iql", 5000))
            for x, v in ((k * end / 3, 2.0 * k / 3) for k in range(4))]  # four evaluations: a line, not its ends
    fig = plt.figure()
    data = plots.draw_learning_curves(pd.DataFrame(rows), fig)
    plt.close(fig)
    ends = data.groupby("method").online_samples.max()
    assert ends["odt"] == 5600 and ends["iql"] == 5000
    # at 5,600 the odt curve still averages both runs: 2.0 (odt-0's last value) and 5600/6300 * 2
    last = data[(data.method == "odt") & (data.online_samples == 5600)].score_mean
    assert sorted(last.round(4)) == [round(2.0 * 5600 / 6300, 4), 2.0]


def test_on_grid_interpolates_each_run():
    df = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "m": ["x"] * 4,
                       "online_samples": [0, 100, 0, 50], "score_mean": [0.0, 10.0, 0.0, 10.0]})
    g = plots.on_grid(df, "online_samples", "score_mean", ["m"], points=3)
    a = g[g.run_id == "a"]
    assert list(a.online_samples) == [0, 50, 100] and list(a.score_mean) == [0, 5, 10]
    assert list(g[g.run_id == "b"].score_mean) == [0, 10]  # no extrapolation past a run's end


def test_on_grid_does_not_extrapolate_before_a_runs_first_evaluation():
    # curves against updates start at the first evaluation (here 1000), not at 0
    df = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "m": ["x"] * 4,
                       "updates": [1000, 3000, 1000, 2000], "score_mean": [10.0, 30.0, 10.0, 20.0]})
    g = plots.on_grid(df, "updates", "score_mean", ["m"], points=3, common=True)
    assert list(g[g.run_id == "a"].updates) == [1000, 1500, 2000]  # common: up to where b ends
    assert list(g[g.run_id == "a"].score_mean) == [10, 15, 20]
    # a run that starts later (SAC's first evaluation after 1000 samples) starts there; the others at 0
    late = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "m": ["x", "x", "y", "y"],
                         "updates": [0, 2000, 1000, 2000], "score_mean": [0.0, 20.0, 5.0, 5.0]})
    g = plots.on_grid(late, "updates", "score_mean", ["m"], points=3)
    assert list(g[g.run_id == "a"].updates) == [0, 1000, 2000] and list(g[g.run_id == "b"].updates) == [1000, 2000]


def test_on_grid_common_start_begins_where_every_run_has_begun():
    # the curriculum's exploration RTG is first logged at each run's first online evaluation
    # (1000 and 1800 samples here): averaged from 1000, the mean would jump when b enters at 1800
    df = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "m": ["x"] * 4,
                       "online_samples": [1000, 5000, 1800, 5000], "rtg": [100.0, 500.0, 2000.0, 2000.0]})
    g = plots.on_grid(df, "online_samples", "rtg", ["m"], points=3, common_start=True)
    assert list(g[g.run_id == "a"].online_samples) == [1800, 3400, 5000]
    assert list(g[g.run_id == "a"].rtg) == [180.0, 340.0, 500.0]
    assert list(g[g.run_id == "b"].online_samples) == [1800, 3400, 5000]


def test_on_grid_starts_online_curves_where_pretraining_ended():
    # three pretraining evaluations share online_samples 0: the curve starts at the last one
    df = pd.DataFrame({"run_id": ["a"] * 4, "m": ["x"] * 4, "step": [0, 1, 2, 3],
                       "online_samples": [0, 0, 0, 100], "score_mean": [5.0, 30.0, 20.0, 40.0]})
    g = plots.on_grid(df, "online_samples", "score_mean", ["m"], points=3)
    assert list(g.score_mean) == [20.0, 30.0, 40.0]


def test_figure_captions_say_seeds_samples_used_and_data_provenance():
    df = pd.DataFrame({"run_id": ["a", "a", "b", "c"], "seed": [20, 20, 21, 24],
                       "online_samples": [0, 5212, 5020, 5406], "data_source": ["generated"] * 4})
    note = plots.provenance_note(df)
    assert note.startswith("seeds 20-21, 24, online samples used 5,020-5,406 per online run")
    assert "generated here by the project's forge" in note and "not D4RL's files" in note
    assert plots.provenance_note(df[df.seed == 20]).startswith("seed 20, online samples used 5,212 by the one online run")


def test_figure_captions_say_when_curves_have_different_seed_counts():
    # dt has seeds 0-4, odt seeds 0-9: the caption's "seeds 0-9" alone would overstate dt's n
    df = pd.DataFrame({"run_id": [f"dt{s}" for s in range(5)] + [f"odt{s}" for s in range(10)],
                       "seed": list(range(5)) + list(range(10)),
                       "method": ["dt"] * 5 + ["odt"] * 10, "dataset": ["hopper-medium"] * 15})
    assert plots.provenance_note(df).startswith("seeds 0-9 (5-10 seeds per curve: n in the legends)")
    same = df[df.seed < 5]
    assert plots.provenance_note(same).startswith("seeds 0-4") and "per curve" not in plots.provenance_note(same)


def test_learning_curves_caption_counts_only_the_runs_it_draws():
    """Table 1's curves draw the methods with an online phase; offline-only runs (DT's AntMaze
    seeds, ODT offline) have no curve there and must not enter the caption's seed counts."""
    spec = next(f for f in plots.FIGURES if f.name == "learning_curves")
    rows = [(m, "hopper-medium", s) for m in ("odt", "iql") for s in range(5)]
    rows += [("dt", "antmaze-umaze", s) for s in range(3)] + [("odt-offline", "hopper-medium", 0)]
    df = pd.DataFrame([{"run_id": f"{m}-{d}-{s}", "method": m, "dataset": d, "seed": s, "experiment": "table1",
                        "status": "complete"} for m, d, s in rows])
    drawn = plots._runs_of(spec, df)
    assert sorted(drawn.method.unique()) == ["iql", "odt"] and len(drawn) == 10
    assert plots.provenance_note(drawn).startswith("seeds 0-4") and "per curve" not in plots.provenance_note(drawn)


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


def test_table1_reports_the_online_samples_each_cell_used():
    runs = pd.DataFrame([
        {"method": "odt", "dataset": "hopper-medium", "status": "complete", "online_samples": 5020.0},
        {"method": "odt", "dataset": "hopper-medium", "status": "complete", "online_samples": 5400.0},
        {"method": "odt", "dataset": "hopper-medium", "status": "failed", "online_samples": 9999.0},
        {"method": "iql", "dataset": "hopper-medium", "status": "complete", "online_samples": 5000.0},
        {"method": "dt", "dataset": "walker2d-medium", "status": "complete", "online_samples": float("nan")},
    ])
    assert tables.samples_used(runs) == [["hopper-medium", "5210 [5020, 5400]", "—", "5000 [5000, 5000]", "—"]]


def test_g_eval_figure_shares_its_y_axis_and_marks_g_star(tmp_path):
    """Figs. 3 / 5 (L): both phases' sweeps on one y scale (the figure compares sensitivities),
    the data written beside it with each point's multiple of g*, and g* (the 1x point) drawn."""
    import matplotlib.pyplot as plt

    root = tmp_path / "results"
    rows = []
    for seed in range(2):
        spec = fake_run(root, "odt", "hopper-medium", seed, experiment="g_eval")
        curve = [{"phase": phase, "updates": 10, "online_samples": 0, "g_eval_multiple": m,
                  "g_eval": 3600.0 * m, "score_mean": base + 10 * m + seed}
                 for phase, base in (("sweep-pretrained", 20.0), ("sweep-finetuned", 60.0))
                 for m in (0.5, 1.0, 2.0)]
        rec.write_curve(rec.run_dir(root, spec) / rec.CURVE, curve)
        rows += [{**r, "run_id": f"r{seed}"} for r in curve]
    fig = plt.figure()
    data = plots.draw_g_eval(pd.DataFrame(rows), fig)
    left, right = fig.axes
    assert left.get_ylim() == right.get_ylim()  # one scale: 25-41 and 65-81 on the same axis
    assert left.get_ylim()[0] <= 25 and right.get_ylim()[1] >= 81
    assert any(list(line.get_xdata()) == [3600.0, 3600.0] for line in left.lines)  # g*, dashed
    assert set(data.g_eval_multiple) == {0.5, 1.0, 2.0}
    plt.close(fig)
    plots.make_plots(root, tmp_path / "figs", ["smoke"], names=["g_eval"])
    assert set(pd.read_csv(tmp_path / "figs" / "smoke" / "g_eval.csv").phase) == {"sweep-pretrained", "sweep-finetuned"}


def test_a_figure_whose_selection_is_empty_is_skipped_not_crashed(tmp_path):
    """Table 1 with IQL runs but no ODT or control runs: the control and convergence figures
    have nothing to draw and are skipped (before: draw_control raised 'No objects to concatenate')."""
    rows = [{"run_id": f"iql-{s}", "preset": "cpu", "experiment": "table1", "dataset": "hopper-medium",
             "method": "iql", "seed": s, "status": "complete", "phase": "online", "online_samples": x,
             "score_mean": float(x + s)} for s in range(2) for x in (0, 100)]
    df = pd.DataFrame(rows)
    control = next(f for f in plots.FIGURES if f.name == "odt_vs_control")
    assert plots._runs_of(control, df).empty
    assert not plots._runs_of(next(f for f in plots.FIGURES if f.name == "learning_curves"), df).empty
    root = tmp_path / "results"
    for seed in range(2):
        fake_run(root, "iql", "hopper-medium", seed)
    written = {p.stem for p in plots.make_plots(root, tmp_path / "figs", ["smoke"],
                                                names=["learning_curves", "odt_vs_control", "convergence"])}
    assert written == {"learning_curves"}


def test_a_row_whose_runs_trained_on_different_data_contents_fails(tmp_path):
    """A remade medium-replay file with other content is another dataset: its runs must not join
    the row's cells (2026-11-26: an odt-offline run on a remade hopper-medium-replay file)."""
    root, rule = tmp_path / "r", {"kind": "same_data", "experiment": "table1"}
    for method in ("odt", "odt-offline"):
        for s in range(2):
            real_run(root, method, "hopper-medium-replay", s, final=30.0 + s)
    real_run(root, "dt", "hopper-medium", 0, final=40.0)
    for d in root.glob("cpu/table1/*"):
        p = json.loads((d / rec.PROVENANCE).read_text())
        rec.write_json(d / rec.PROVENANCE, {**p, "content_sha256": "b1b0ee3f" + "0" * 56})
    found = check.check(root, "cpu", {"external": [rule]})
    assert all(f.ok for f in found) and any("4 runs on one data content b1b0ee3f" in f.text for f in found)

    stray = next(root.glob("cpu/table1/odt-offline__hopper-medium-replay__*s1*"))
    p = json.loads((stray / rec.PROVENANCE).read_text())
    rec.write_json(stray / rec.PROVENANCE, {**p, "content_sha256": "556e4f3a" + "0" * 56})
    bad = _external_failures(root, [rule])
    assert len(bad) == 1 and "hopper-medium-replay" in bad[0] and "2 different data contents" in bad[0]
    assert stray.name in bad[0] and "b1b0ee3f: 3 runs" in bad[0]


def test_p1m_figure_pairs_odt_and_control_by_seed_and_counts_what_it_draws():
    import matplotlib.pyplot as plt
    rows = [{"run_id": f"{m}-{s}", "dataset": "hopper-medium", "method": m, "variant": "pretrain=20000",
             "seed": s, "status": "complete", "phase": "online", "online_samples": 5000, "step": 0, "score_mean": v}
            for m, scores in (("odt", {0: 10.0, 1: 20.0, 2: 30.0}), ("odt-control", {1: 5.0, 2: 5.0, 3: 5.0}))
            for s, v in scores.items()]
    fig = plt.figure()
    wide = plots.draw_control_pretraining(pd.DataFrame(rows), fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ticks = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    plt.close(fig)
    assert dict(zip(wide.seed, wide.odt_minus_control, strict=True)) == {1: 15.0, 2: 25.0}  # seeds 0, 3 unpaired
    assert legend == ["odt (n=3 per dataset)", "odt-control (n=3 per dataset)"]
    assert ticks == ["hopper-medium\n(2 seeds paired)"]


def test_rliable_import_failure_names_pandas_and_the_pin(monkeypatch):
    """arch 7 (rliable's dependency) fails at import under pandas 3 with a bare TypeError."""
    import builtins

    from benchmarks import aggregate
    real_import = builtins.__import__

    def failing(name, *args, **kwargs):
        if name.startswith("rliable"):
            raise TypeError("deprecate_kwarg() missing 1 required positional argument: 'new_arg_name'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.raises(RuntimeError, match=r"pandas .*arch<8 needs pandas<3"):
        aggregate.import_rliable()


def test_offline_length_figure_draws_three_offline_references_and_nothing_online():
    import matplotlib.pyplot as plt

    def run(experiment, method, dataset, seed, points):
        return [{"run_id": f"{experiment}-{method}-{dataset}-{seed}", "experiment": experiment, "method": method,
                 "dataset": dataset, "seed": seed, "status": "complete", "phase": phase, "updates": u,
                 "online_samples": samples, "step": u, "score_mean": float(u) / 100 + seed}
                for phase, u, samples in points]

    pretrain = lambda *us: [("pretrain", u, 0) for u in us]  # noqa: E731
    rows = []
    for seed in (0, 1):
        rows += run("table1", "odt", "walker2d-medium", seed, pretrain(1000, 5000) + [("online", 6000, 5000)])
        rows += run("table1", "odt-offline", "walker2d-medium", seed, pretrain(1000, 2000, 2500))
        rows += run("table1", "iql", "walker2d-medium", seed, pretrain(1000) + [("online", 2000, 5000)])
        rows += run("table1", "odt", "hopper-medium", seed, pretrain(1000, 2500))  # no longer arm there
    rows += run("offline_length", "odt-offline", "walker2d-medium", 0, pretrain(1000, 5000))
    spec = next(f for f in plots.FIGURES if f.name == "offline_length")
    chosen = plots._runs_of(spec, pd.DataFrame(rows))
    assert set(chosen.dataset) == {"walker2d-medium"} and "iql" not in set(chosen.method)
    assert (chosen.phase == "pretrain").all()  # ODT's online rows are not an offline reference
    fig = plt.figure()
    drawn = plots.draw_offline_length(chosen, fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert legend == ["offline protocol, 5000 updates (offline_length) (n=1)",
                      "offline protocol, 2500 updates (Table 1) (n=2)", "ODT's pretraining (Table 1's odt runs) (n=2)"]
    assert drawn.groupby("arm").updates.max().to_dict() == {
        "offline protocol, 5000 updates (offline_length)": 5000, "offline protocol, 2500 updates (Table 1)": 2500,
        "ODT's pretraining (Table 1's odt runs)": 5000}


def test_offline_length_c3_figure_draws_dt_and_odt_offline_at_both_lengths_on_its_rows_only():
    import matplotlib.pyplot as plt

    def run(experiment, method, dataset, seed, updates):
        return [{"run_id": f"{experiment}-{method}-{dataset}-{seed}", "experiment": experiment, "method": method,
                 "dataset": dataset, "seed": seed, "status": "complete", "phase": "pretrain", "updates": u,
                 "online_samples": 0, "step": u, "score_mean": float(u) / 100 + seed} for u in updates]

    rows = []
    for seed in (0, 1):
        for method in ("dt", "odt-offline", "odt", "iql"):
            rows += run("table1", method, "hopper-medium-replay", seed, (1000, 2000, 2500))
        rows += run("table1", "dt", "hopper-medium", seed, (1000, 2500))  # no longer arm on this row
    for method in ("dt", "odt-offline"):
        rows += run("offline_length_c3", method, "hopper-medium-replay", 0, range(1000, 10_001, 1000))
    spec = next(f for f in plots.FIGURES if f.name == "offline_length_c3")
    chosen = plots._runs_of(spec, pd.DataFrame(rows))
    assert set(chosen.dataset) == {"hopper-medium-replay"} and set(chosen.method) == {"dt", "odt-offline"}
    fig = plt.figure()
    drawn = plots.draw_offline_length_c3(chosen, fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert legend == ["ODT offline, 1e4 updates (offline_length_c3) (n=1)", "DT, 1e4 updates (offline_length_c3) (n=1)",
                      "ODT offline, 2500 updates (Table 1) (n=2)", "DT, 2500 updates (Table 1) (n=2)"]
    assert drawn.groupby("arm").updates.max().to_dict() == {
        "ODT offline, 1e4 updates (offline_length_c3)": 10_000, "DT, 1e4 updates (offline_length_c3)": 10_000,
        "ODT offline, 2500 updates (Table 1)": 2500, "DT, 2500 updates (Table 1)": 2500}


def test_antmaze_offline_figure_draws_each_methods_offline_phase_on_its_own_share_of_updates():
    """IQL's 1.8e5 offline updates and DT's 2e4 both end at 100%; nothing online, no locomotion
    row and no odt-control (it shares ODT's pretraining) is drawn."""
    import matplotlib.pyplot as plt

    def run(method, dataset, seed, points):
        return [{"run_id": f"{method}-{dataset}-{seed}", "experiment": "table1", "method": method,
                 "dataset": dataset, "seed": seed, "status": "complete", "phase": phase, "updates": u,
                 "online_samples": 0 if phase == "pretrain" else 5000, "step": u, "score_mean": 10.0 * seed}
                for phase, u in points]

    rows = []
    for seed in (0, 1):
        rows += run("dt", "antmaze-umaze", seed, [("pretrain", u) for u in (5000, 10_000, 20_000)])
        rows += run("iql", "antmaze-umaze", seed, [("pretrain", u) for u in (90_000, 180_000)] + [("online", 181_000)])
        rows += run("odt", "antmaze-umaze", seed, [("pretrain", 10_000), ("pretrain", 20_000), ("online", 21_500)])
        rows += run("odt-control", "antmaze-umaze", seed, [("pretrain", 20_000), ("online", 21_500)])
        rows += run("dt", "hopper-medium", seed, [("pretrain", 2500)])
    spec = next(f for f in plots.FIGURES if f.name == "antmaze_offline")
    chosen = plots._runs_of(spec, pd.DataFrame(rows))
    assert set(chosen.dataset) == {"antmaze-umaze"} and set(chosen.method) == {"dt", "iql", "odt"}
    assert (chosen.phase == "pretrain").all()
    fig = plt.figure()
    drawn = plots.draw_antmaze_offline(chosen, fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert legend == ["DT (n=2)", "ODT's pretraining (n=2)", "IQL's offline phase (n=2)"]
    share = drawn.groupby("arm").offline_share
    assert share.max().to_dict() == {"DT": 100.0, "ODT's pretraining": 100.0, "IQL's offline phase": 100.0}
    assert share.min().to_dict() == {"DT": 25.0, "ODT's pretraining": 50.0, "IQL's offline phase": 50.0}


def test_antmaze_offline_arms_at_the_same_values_are_told_apart_by_their_dashes():
    """Two cloners at 0% at every evaluation draw the same points: the one drawn first must show
    through the gaps of the other (distinct dash patterns), and each arm keeps its pattern (and its
    legend entry's) in every panel, whichever arms a panel has."""
    import matplotlib.pyplot as plt

    def run(method, dataset, seed):
        return [{"run_id": f"{method}-{dataset}-{seed}", "experiment": "table1", "method": method,
                 "dataset": dataset, "seed": seed, "status": "complete", "phase": "pretrain", "updates": u,
                 "online_samples": 0, "step": u, "score_mean": 0.0} for u in (10_000, 20_000)]

    rows = [r for seed in (0, 1) for m in ("dt", "odt-offline") for r in run(m, "antmaze-umaze-diverse", seed)]
    rows += [r for seed in (0, 1) for r in run("odt-offline", "antmaze-umaze", seed)]
    fig = plt.figure()
    plots.draw_antmaze_offline(pd.DataFrame(rows), fig)
    styles = {ax.get_title(): {t.get_text(): (h.get_linestyle(), h.get_color())
                               for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
              for ax in fig.axes}
    drawn = {ax.get_title(): [(line.get_linestyle(), line.get_color()) for line in ax.get_lines()
                              if line.get_color() != "grey"] for ax in fig.axes}  # not the 30% line
    plt.close(fig)
    diverse = styles["antmaze-umaze-diverse"]
    assert diverse["DT (n=2)"][0] != diverse["ODT offline (n=2)"][0]
    assert styles["antmaze-umaze"]["ODT offline (n=2)"] == diverse["ODT offline (n=2)"]
    assert len(set(drawn["antmaze-umaze-diverse"])) == 2  # the curves themselves, not only the legend


def test_a_grid_figures_legend_is_titled_by_the_field_it_compares():
    import matplotlib.pyplot as plt
    rows = [{"run_id": f"{pos}-{wd}-{seed}", "dataset": "walker2d-medium", "method": "odt",
             "variant": f"pos={pos},lr=0.001,wd={wd}", "status": "complete", "phase": "online",
             "online_samples": 100, "step": 0, "score_mean": float(seed)}
            for pos in (False, True) for wd in (0.001, 0.0001) for seed in range(3)]
    fig = plt.figure()
    plots.draw_grid_final(pd.DataFrame(rows), fig)
    legend = fig.axes[0].get_legend()
    title, texts = legend.get_title().get_text(), [t.get_text() for t in legend.get_texts()]
    plt.close(fig)
    assert title == "pos" and texts == ["pos=False (n=3 per setting)", "pos=True (n=3 per setting)"]
    assert plots._factor_name(["ctx=1", "ctx=5"]) == "ctx"
    assert plots._factor_name(["ctx=1", "pos=True"]) == "factor"  # two fields: no single name
    assert plots._factor_name(["small", "large"]) == "factor"


def _ran_on(root, spec, *attempts, content="ab12cd34ef"):
    """Give a fake run the environment.json attempts and dataset hash a real run records."""
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.ENVIRONMENT, {"attempts": [
        {"git_sha": sha, "git_dirty": dirty, "cpu_model": cpu, "versions": {"torch": torch}}
        for sha, dirty, cpu, torch in attempts]})
    rec.write_json(d / rec.PROVENANCE, {"source": "generated", "content_sha256": content})


def test_each_table1_cell_says_where_its_runs_ran(tmp_path):
    """Three IQL seeds: two on one machine and commit, the third resumed on another CPU under an
    uncommitted change; a DT cell on one machine; a run outside git. The origin of each run is
    read from its attempts, a uniform cell shows one value, a mixed one each value with its count,
    and a partial run is not counted."""
    root = tmp_path / "results"
    amd = ("a" * 40, False, "AMD EPYC", "2.13.0+cpu")
    for s in range(3):
        spec = fake_run(root, "iql", "hopper-medium", s)
        xeon = ("b" * 40, True, "Intel Xeon", "2.11.0")
        _ran_on(root, spec, *((amd, xeon) if s == 2 else (amd,)))
        _ran_on(root, fake_run(root, "dt", "hopper-medium", s), amd, content="ffff0000aa")
    _ran_on(root, fake_run(root, "dt", "hopper-medium", 3, status="partial"), ("c" * 40, False, "Other", "2.0"))
    _ran_on(root, fake_run(root, "sac", "hopper-medium", 0), (None, None, "AMD EPYC", "2.13.0+cpu"))
    runs = agg.load_runs(root)
    third = runs[(runs.method == "iql") & (runs.seed == 2)].iloc[0]
    assert (third.code, third.cpu, third.torch, third.data_file) == (
        "aaaaaaa then bbbbbbb+dirty", "AMD EPYC then Intel Xeon", "2.13.0+cpu then 2.11.0", "ab12cd34")
    rows = {r[1]: r for r in tables.cell_origins(runs)}
    assert rows["DT"] == ["hopper-medium", "DT", "3", "0.00", "aaaaaaa", "AMD EPYC", "2.13.0+cpu", "ffff0000"]
    assert rows["IQL"][2:] == ["3", "0.00", "aaaaaaa (2), aaaaaaa then bbbbbbb+dirty (1)",
                               "AMD EPYC (2), AMD EPYC then Intel Xeon (1)",
                               "2.13.0+cpu (2), 2.13.0+cpu then 2.11.0 (1)", "ab12cd34"]
    assert rows["SAC"][4] == "outside git"
    gpu_run = rec.run_dir(root, fake_run(root, "odt", "hopper-medium", 0))
    rec.write_json(gpu_run / rec.ENVIRONMENT, {"attempts": [{"git_sha": "d" * 40, "git_dirty": False,
                                                             "cpu_model": "Intel Xeon", "cuda": True}]})
    assert agg.load_runs(root).query("method == 'odt'").cpu.tolist() == ["Intel Xeon + CUDA GPU"]
    text = tables.table1_text(runs, "smoke", reps=50)
    assert "## Where each cell's runs ran" in text and "| hopper-medium | DT | 3 | 0.00 | aaaaaaa |" in text


def _took(root, spec, seconds=None, wall_time=None, attempts=1, threads=1, cuda=False):
    """Give a fake complete run the timing a real run records: its attempts (torch threads, CUDA)
    and the seconds of its one attempt or, resumed, the compute time its counters kept."""
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.ENVIRONMENT, {"attempts": [{"torch_threads": threads, "cuda": cuda}] * attempts})
    record = rec.read_json(d / rec.RECORD)
    record.update(attempt_seconds=seconds, counters={"wall_time": wall_time})
    rec.write_json(d / rec.RECORD, record)


def test_each_table1_cell_says_the_cpu_core_hours_its_runs_took(tmp_path):
    """DT: three one-attempt runs of 0.5, 1 and 1.5 h, the last at two threads (3 h of cores):
    4.5 core-h. IQL: a run resumed over two attempts whose counters kept 2 h, and a GPU run, which
    prices no CPU time and is said to be untimed. A partial run is not counted. The total sums
    every complete cell's runs."""
    root = tmp_path / "results"
    for s, (seconds, threads) in enumerate([(1800, 1), (3600, 1), (5400, 2)]):
        _took(root, fake_run(root, "dt", "hopper-medium", s), seconds=seconds, threads=threads)
    _took(root, fake_run(root, "iql", "hopper-medium", 0), seconds=900, wall_time=7200, attempts=2)
    _took(root, fake_run(root, "iql", "hopper-medium", 1), seconds=600, cuda=True)
    fake_run(root, "dt", "hopper-medium", 3, status="partial")
    runs = agg.load_runs(root)
    rows = {r[1]: r for r in tables.cell_origins(runs)}
    assert rows["DT"][2:4] == ["3", "4.50"]
    assert rows["IQL"][2:4] == ["2", ">= 2.00 (1 of 2 not timed)"]
    text = tables.table1_text(runs, "smoke", reps=50)
    assert "All cells: >= 6.50 (1 of 5 not timed) core-hours over 5 runs." in text


def test_derive_for_named_datasets_replaces_only_their_rules(tmp_path, capsys):
    root = tmp_path / "r"
    for s, score in enumerate([30.0, 34.0, 38.0]):
        fake_run(root, "dt", "walker2d-medium", s, final=score, preset="cpu")
    # hopper-medium's cell was archived: no runs left, but an old rule for it and one for ant remain
    old_hopper = {"experiment": "table1", "methods": ["dt"], "datasets": ["hopper-medium"], "metric": "final_score",
                  "mean": 60.0, "sd": 1.0, "n": 5, "z": 3.0, "slack": 2.0}
    old_ant = {**old_hopper, "datasets": ["ant-medium"], "mean": 40.0}
    old_walker = {**old_hopper, "datasets": ["walker2d-medium"], "mean": 99.0, "n": 2}
    rules = tmp_path / "cpu.json"
    rules.write_text(json.dumps({"rules": [RULES["rules"][1], old_hopper, old_ant, old_walker]}))
    argv = ["--preset", "cpu", "--results", str(root), "--derive", str(rules)]
    assert check.main(argv + ["--datasets", "hopper-medium", "walker2d-medium"]) == 0
    out = json.loads(rules.read_text())["rules"]
    assert RULES["rules"][1] in out and old_ant in out  # a hand rule and another dataset's rule kept
    assert old_hopper not in out and old_walker not in out  # the archived cell's rule is gone
    walker = [r for r in out if r.get("datasets") == ["walker2d-medium"]]
    assert len(walker) == 1 and (walker[0]["mean"], walker[0]["n"]) == (34.0, 3)
    assert "2 old ones dropped" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        check.main(["--preset", "cpu", "--results", str(root), "--datasets", "hopper-medium"])
    before = rules.read_text()
    with pytest.raises(SystemExit):  # a misspelt name is refused, not a silent no-op
        check.main(argv + ["--datasets", "hoper-medium"])
    assert rules.read_text() == before and "unknown dataset(s) hoper-medium" in capsys.readouterr().err
