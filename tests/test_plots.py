"""The figures show what the verdicts read: paired differences seed by seed, evaluations where
they were made, log-scale NLL with the phase switch, legends off the data, one y scale per domain."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from scipy import stats  # noqa: E402

from benchmarks import plots  # noqa: E402
from tests.test_aggregate import fake_run  # noqa: E402


def _two_arm_rows(finals: dict[str, dict[int, float]]) -> pd.DataFrame:
    """Each (variant, seed) run: pretraining's end at 0 samples, two online evaluations, the last
    one ``finals[variant][seed]``."""
    rows = []
    for variant, by_seed in finals.items():
        for seed, final in by_seed.items():
            run = f"{variant}-{seed}"
            for step, (phase, x, v) in enumerate((("pretrain", 0, 40.0), ("online", 2000, 50.0 + seed),
                                                  ("online", 5000, final))):
                rows.append({"run_id": run, "variant": variant, "seed": seed, "dataset": "hopper-medium",
                             "method": "odt", "status": "complete", "phase": phase, "step": step,
                             "online_samples": x, "updates": 1000 * (step + 1), "score_mean": v})
    return pd.DataFrame(rows)


def test_hindsight_panel_plots_the_per_seed_paired_differences_and_their_t_interval():
    on = {20: 60.0, 21: 90.0, 22: 50.0, 23: 55.0}
    off = {20: 50.0, 21: 40.0, 22: 51.0, 24: 70.0}  # seeds 23 and 24 have one arm only: unpaired
    fig = plt.figure()
    data = plots.draw_hindsight(_two_arm_rows({"relabel=True": on, "relabel=False": off}), fig)
    plt.close(fig)
    paired = data[data.panel == "paired"].set_index("seed")
    expected = {s: on[s] - off[s] for s in sorted(set(on) & set(off))}
    assert paired["difference"].to_dict() == pytest.approx(expected)
    diffs = np.array(list(expected.values()))
    half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
    assert paired["mean"].iloc[0] == pytest.approx(diffs.mean())
    assert (paired["low"].iloc[0], paired["high"].iloc[0]) == pytest.approx((diffs.mean() - half, diffs.mean() + half))


def test_curriculum_panel_pairs_d7_and_d8_and_skips_missing_arms():
    finals = {"fixed": {0: 60.0, 1: 62.0}, "q=90": {0: 50.0, 1: 61.0}, "q=10": {0: 45.0, 1: 70.0}}
    rows = _two_arm_rows(finals)
    rows.loc[rows.phase == "online", "exploration_rtg"] = 2000.0
    fig = plt.figure()
    data = plots.draw_curriculum(rows, fig)
    plt.close(fig)
    paired = data[data.metric.str.startswith("paired")]
    got = {(c, s): d for c, s, d in zip(paired.comparison, paired.seed, paired.difference)}
    assert got == pytest.approx({("D7: fixed − q=90", 0): 10.0, ("D7: fixed − q=90", 1): 1.0,
                                 ("D8: q=90 − q=10", 0): 5.0, ("D8: q=90 − q=10", 1): -9.0})
    assert plots.paired_differences(rows, "fixed", "q=50", "score_mean").empty  # no such arm: nothing paired


def test_convergence_nll_axis_is_log_and_every_panel_marks_the_end_of_pretraining():
    rows = _two_arm_rows({"": {0: 55.0, 1: 60.0}})
    rows["nll"] = rows["step"].map({0: 1000.0, 1: -1.2, 2: -1.5})
    rows["entropy"], rows["lambda"] = -1.5, 0.08
    fig = plt.figure()
    plots.draw_convergence(rows, fig)
    axes = {ax.get_title().split(" (")[0]: ax for ax in fig.axes}
    switch = {ax.get_title(): [ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == ":"] for ax in fig.axes}
    plt.close(fig)
    assert axes["NLL"].get_yscale() in ("log", "symlog")  # symlog: the NLL turns negative
    assert all(v == [1000] for v in switch.values())  # the last pretraining evaluation's updates


def test_a_curve_with_few_evaluations_draws_start_and_final_means_not_a_line():
    rows = [{"run_id": f"odt-{s}", "dataset": "ant-medium", "method": "odt", "status": "complete",
             "phase": "online", "step": k, "online_samples": x, "score_mean": v}
            for s, finals in ((0, 30.0), (1, 40.0)) for k, (x, v) in enumerate(((0, 20.0), (5000 + 100 * s, finals)))]
    fig = plt.figure()
    data = plots.draw_learning_curves(pd.DataFrame(rows), fig)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    long_lines = [ln for ln in ax.lines if len(ln.get_xdata()) > 2]
    plt.close(fig)
    final = data[data.drawn == "final mean"].iloc[0]
    assert not long_lines  # two evaluations per run: no interpolated trend
    assert final.score_mean == pytest.approx(35.0) and final.online_samples == pytest.approx(5050.0)
    assert final.n == 2 and final.low <= 35.0 <= final.high


def test_learning_curve_panels_share_one_y_scale_per_domain_at_least_min_span_tall():
    rows = [{"run_id": f"odt-{d}-{s}", "dataset": d, "method": "odt", "status": "complete", "phase": "online",
             "step": k, "online_samples": 1000 * k, "score_mean": base + 0.1 * k + s}
            for d, base in (("hopper-medium", 30.0), ("hopper-medium-replay", 60.0), ("halfcheetah-medium", 34.0))
            for s in range(2) for k in range(5)]
    fig = plt.figure()
    plots.draw_learning_curves(pd.DataFrame(rows), fig)
    limits = {ax.get_title(): ax.get_ylim() for ax in fig.axes if ax.get_visible()}
    plt.close(fig)
    assert limits["hopper-medium"] == limits["hopper-medium-replay"]
    low, high = limits["halfcheetah-medium"]
    assert high - low >= plots.MIN_SPAN and low < 34.0 < high
    assert plots.bounded_span(33.0, 35.0, 20.0) == (24.0, 44.0)
    assert plots.bounded_span(-0.1, 2.0, 20.0, floor=-0.1) == pytest.approx((-0.1, 19.9))


def _overlaps(fig, legend, ax) -> bool:
    fig.canvas.draw()
    box, area = legend.get_window_extent(), ax.get_window_extent()
    return box.overlaps(area)


def test_control_pretraining_legends_sit_off_the_data():
    rows = [{"run_id": f"{m}-{s}", "dataset": "hopper-medium", "method": m, "variant": "pretrain=20000",
             "seed": s, "status": "complete", "phase": "online", "online_samples": 5000, "step": 0,
             "score_mean": 40.0 + 3 * s + (5 if m == "odt" else 0)}
            for m in ("odt", "odt-control") for s in range(10)]
    fig = plt.figure(figsize=(9, 4.6), layout="constrained")
    plots.draw_control_pretraining(pd.DataFrame(rows), fig)
    left, right = fig.axes[:2]
    assert not _overlaps(fig, left.get_legend(), left)
    assert all(not _overlaps(fig, lg, ax) for lg in fig.legends for ax in (left, right))
    plt.close(fig)


def test_g_online_curves_give_each_arm_a_panel_with_its_seeds_and_no_bands():
    rows = _two_arm_rows({"g_online=2x": {20: 60.0, 21: 70.0}, "g_online=10x": {20: 55.0, 21: 75.0}})
    fig = plt.figure(figsize=(9, 3.6), layout="constrained")
    data = plots.draw_g_online_curves(rows, fig)
    axes = {ax.get_title(): ax for ax in fig.axes}
    two, ten = axes["g_online=2x (n=2)"], axes["g_online=10x (n=2)"]
    assert two.get_shared_y_axes().joined(two, ten) and not two.collections  # one y scale, no overlapping bands
    assert any(ln.get_linestyle() == "--" for ln in ten.lines)  # the reference arm's mean beside each other arm
    assert all(not _overlaps(fig, lg, ax) for lg in fig.legends for ax in (two, ten))
    plt.close(fig)
    seeds = data[data.drawn == "seed"]
    assert len(seeds) == 4 * 3  # per run: the end of pretraining and its two online evaluations
    means = data[data.drawn == "mean over seeds"].groupby("variant").score_mean.last()
    assert means.to_dict() == pytest.approx({"g_online=2x": 65.0, "g_online=10x": 65.0})


# ----- intervals: every band and bar is the 95% t-interval over seeds (issue 84) -------------
SKEWED = (40.0, 41.0, 43.0, 50.0, 71.0)  # 5 seeds, skewed: a percentile bootstrap's interval is far narrower


def _t95(values) -> tuple[float, float]:
    """The 95% Student t-interval of the mean, computed here with scipy, not with the project's function."""
    v = np.asarray(values, float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return v.mean() - half, v.mean() + half


def _flat_runs(finals: dict[str, dict[int, float]], xs=(0, 2500, 5000)) -> pd.DataFrame:
    """Each (variant, seed) run evaluated at ``xs``, the same score at each: every grid point of a
    curve averages the same values."""
    return pd.DataFrame([{"run_id": f"{v}-{s}", "variant": v, "seed": s, "dataset": "hopper-medium",
                          "method": "odt", "status": "complete", "phase": "online", "step": k,
                          "online_samples": x, "updates": 1000 * (k + 1), "score_mean": score}
                         for v, by_seed in finals.items() for s, score in by_seed.items()
                         for k, x in enumerate(xs)])


def _bar_extents(ax) -> list[tuple[float, float]]:
    """The (low, high) of each vertical bar drawn: pointplot's (two-point lines) and ax.errorbar's
    (segments of a LineCollection)."""
    segments = [np.column_stack([ln.get_xdata(), ln.get_ydata()]) for ln in ax.lines]
    segments += [np.asarray(seg) for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()]
    out = []
    for seg in segments:
        seg = np.asarray(seg, float)
        if len(seg) == 2 and np.isfinite(seg).all() and seg[0, 0] == seg[1, 0] and seg[0, 1] != seg[1, 1]:
            out.append((float(seg[:, 1].min()), float(seg[:, 1].max())))
    return out


def test_curve_band_is_the_t_interval_over_seeds_and_one_seed_draws_none():
    fig = plt.figure()
    plots.draw_variant_curves(_flat_runs({"five": dict(enumerate(SKEWED)), "one": {0: 55.0}}), fig)
    (ax,) = fig.axes
    bands = [c for c in ax.collections if len(c.get_paths()) and np.isfinite(c.get_paths()[0].vertices).all()
             and np.ptp(c.get_paths()[0].vertices[:, 1]) > 0]
    plt.close(fig)
    assert len(bands) == 1  # the one-seed curve has no band
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert (ys.min(), ys.max()) == pytest.approx(_t95(SKEWED))


def test_final_score_bars_are_t_intervals():
    fig = plt.figure()
    plots.draw_variant_final(_flat_runs({"five": dict(enumerate(SKEWED)), "one": {0: 55.0}}), fig)
    (ax,) = fig.axes
    bars = _bar_extents(ax)
    plt.close(fig)
    assert bars == [pytest.approx(_t95(SKEWED))]  # and none for the one-seed arm


def test_start_and_final_points_of_a_short_curve_carry_t_intervals():
    rows = [{"run_id": f"odt-{s}", "dataset": "ant-medium", "method": "odt", "status": "complete",
             "phase": "online", "step": k, "online_samples": x, "score_mean": v}
            for s, final in enumerate(SKEWED) for k, (x, v) in enumerate(((0, 20.0 + s), (5000, final)))]
    fig = plt.figure()
    data = plots.draw_learning_curves(pd.DataFrame(rows), fig)
    bars = _bar_extents(fig.axes[0])
    plt.close(fig)
    final = data[data.drawn == "final mean"].iloc[0]
    assert (final.low, final.high) == pytest.approx(_t95(SKEWED))
    assert pytest.approx(_t95(SKEWED)) in bars
    assert pytest.approx(_t95([20.0 + s for s in range(5)])) in bars


def test_control_pretraining_difference_bar_is_the_paired_t_interval():
    control = {s: 40.0 + 2 * s for s in range(5)}
    rows = [{"run_id": f"{m}-{s}", "dataset": "hopper-medium", "method": m, "variant": "pretrain=20000",
             "seed": s, "status": "complete", "phase": "online", "online_samples": 5000, "step": 0,
             "score_mean": control[s] + (SKEWED[s] - 40.0 if m == "odt" else 0.0)}
            for m in ("odt", "odt-control") for s in range(5)]
    fig = plt.figure(figsize=(9, 4.6), layout="constrained")
    plots.draw_control_pretraining(pd.DataFrame(rows), fig)
    right = fig.axes[1]
    bars = _bar_extents(right)
    plt.close(fig)
    assert bars == [pytest.approx(_t95(np.array(SKEWED) - 40.0))]


AGGREGATING = {"lineplot", "pointplot", "barplot", "relplot", "catplot", "regplot", "lmplot"}


def test_no_seaborn_call_in_plots_is_left_with_a_bootstrap_or_default_errorbar():
    """Every seaborn call that aggregates names its errorbar: None, or a function (seaborn's own
    default and ('ci', 95) are percentile bootstraps); a call with estimator=None draws raw runs."""
    import ast
    import importlib
    import inspect
    import pkgutil

    checked = 0
    for info in pkgutil.iter_modules(plots.__path__):  # every module of the package
        module = importlib.import_module(f"benchmarks.plots.{info.name}")
        syntax = ast.parse(inspect.getsource(module))
        calls = [n for n in ast.walk(syntax) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "sns" and n.func.attr in AGGREGATING]
        for call in calls:
            checked += 1
            kw = {k.arg: k.value for k in call.keywords}
            where = f"{info.name}.py:{call.lineno} sns.{call.func.attr}"
            if isinstance(kw.get("estimator"), ast.Constant) and kw["estimator"].value is None:
                continue
            assert "errorbar" in kw, f"{where}: seaborn's default errorbar is a bootstrap"
            value = eval(compile(ast.Expression(kw["errorbar"]), where, "eval"), vars(module))
            assert value is None or callable(value), f"{where}: errorbar={value!r}"
            assert not {"n_boot", "seed"} & set(kw) and not any(k.arg is None for k in call.keywords), where
    assert checked


def test_captions_no_longer_say_bootstrap():
    for f in plots.FIGURES:
        assert "bootstrap" not in f.title + f.reading, f.name


@pytest.fixture
def tree(tmp_path):
    """Table 1 at the smoke preset: 9 complete runs over seeds 0-2, one failed and one diverged."""
    root = tmp_path / "results"
    for s in range(3):
        for method, dataset in (("odt", "hopper-medium"), ("iql", "hopper-medium"), ("odt", "walker2d-medium")):
            fake_run(root, method, dataset, s, final=60.0 + s)
    fake_run(root, "iql", "walker2d-medium", 0, status="failed")
    fake_run(root, "iql", "walker2d-medium", 1, status="diverged")
    return root


def test_every_figure_has_a_short_title_and_its_provenance_in_a_caption_and_a_sidecar(tree, tmp_path, monkeypatch):
    """Titles a reader takes in at a glance: the catalogue's title on one line, plus at most one
    warning line (smoke preset, unfinished runs); where the figure comes from (preset, runs,
    seeds, data source, code version) is in the caption under the axes and the sidecar JSON."""
    import json

    from benchmarks.plots import catalogue, provenance
    from benchmarks.plots import make as render

    drawn = {}

    def keep_texts(fig, data, out, name):  # the texts as drawn; no PNG or PDF written (seconds each)
        drawn[name] = (fig._suptitle.get_text(), fig.texts[-1].get_text())
        plt.close(fig)
        return []

    monkeypatch.setattr(render, "save_figure", keep_texts)
    out = tmp_path / "figs"
    plots.make_plots(tree, out, ["smoke"], names=[f.name for f in plots.FIGURES], missing=True)
    monkeypatch.setattr("benchmarks.datasets.load_dataset", lambda *a, **k: (_ for _ in ()).throw(OSError("absent")))
    render.render_sampling_probabilities("smoke", out / "smoke")
    assert set(drawn) == {f.name for f in plots.FIGURES} | {"sampling_probabilities"}
    titles = {f.name: f.title for f in plots.FIGURES} | {"sampling_probabilities": render.SAMPLING_TITLE}
    for name, (title, caption) in drawn.items():
        lines = title.split("\n")
        assert lines[0] == titles[name] and len(lines[0]) <= catalogue.TITLE_CHARS, name
        assert lines[1:] and provenance.SMOKE in lines[1] and len(lines) == 2, name  # the smoke warning, once
        assert "preset smoke" in caption, name
        side = json.loads((out / "smoke" / f"{name}.json").read_text())
        assert side["title"] == lines and side["preset"] == "smoke" and side["smoke"] and side["command"], name
    table1 = json.loads((out / "smoke" / "learning_curves.json").read_text())  # a figure with runs
    assert table1["seeds"] == "0-2" and table1["runs"] == {"complete": 9, "diverged": 1, "failed": 1}
    assert table1["data"] == provenance.DATA_SOURCES["generated-smoke"] and table1["code_versions"]
    assert table1["records"] == [str(tree.resolve() / "smoke" / "table1")]
    assert "INCOMPLETE: 9 complete, 1 diverged, 1 failed" in drawn["learning_curves"][0]
    caption = drawn["learning_curves"][1]
    for fact in ("seeds 0-2", "online samples used 100 per online run", "tiny generated smoke data",
                 "code not recorded", "learning_curves.json"):
        assert fact in caption.replace("\n", " "), fact
    assert "no runs found" in drawn["hindsight"][1]  # a missing figure still says its preset


def test_a_code_version_note_names_the_commonest_and_counts_the_others():
    from benchmarks.plots import provenance

    versions = provenance.code_versions(pd.Series(["abc1234", "abc1234", "def5678", None]))
    assert versions == {"abc1234": 2, "def5678": 1, "not recorded": 1}
    assert provenance.code_note(versions, "f.json") == "code abc1234 (2 runs) and 2 other versions (each in f.json)"
    assert provenance.code_note({"abc1234": 3}, "f.json") == "code abc1234"
    assert provenance.title_lines("T", "cpu") == ["T"]
