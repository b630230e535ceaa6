"""PROTOCOL-online-200k-cpu.md: the experiments' registration (seeds per method, each matched
control launched after its ODT twin has ended) and the study's reading
(studies/online_200k/analysis.py) on hand-made records whose answers the tests compute on their
own (scipy's t distribution, a Holm written out here), seeded and fast."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks import job as job_mod
from benchmarks import launch as launch_mod
from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.experiments import EXPERIMENTS, RunSpec, expand
from studies.online_200k import analysis as an

ODT, CONTROL, IQL = "odt", "odt-control-matched", "iql"


# ----- registration ----------------------------------------------------------------------------------
def _seeds(specs, method):
    return sorted(s.seed for s in specs if s.method == method)


def test_online_200k_runs_ten_pairs_and_five_iql_seeds_at_cpu_200k():
    specs = expand("online_200k", "cpu-200k")
    assert {(s.dataset, s.preset) for s in specs} == {("hopper-medium", "cpu-200k")}
    assert _seeds(specs, ODT) == _seeds(specs, CONTROL) == list(range(10))
    assert _seeds(specs, IQL) == list(range(5))
    assert len(specs) == 25
    # amendment A1: both paired arms autocast to bf16, under a variant that says so; IQL has no precision
    for s in specs:
        bf16 = s.method != IQL
        assert (s.variant, s.overrides) == (("bf16", (("precision", "bf16"),)) if bf16 else ("default", ()))
    ids = {s.run_id for s in specs}
    for s in specs:  # every control's twin is in the plan, in the same experiment folder
        twin = matched.twin_spec(s)
        assert twin is None or (twin.run_id in ids and twin.method == ODT and twin.seed == s.seed)
    assert EXPERIMENTS["online_200k"].seeds_of(IQL) == 5 and EXPERIMENTS["online_200k"].seeds_of(ODT) == 10
    # an explicit count is every method's: --seeds 10 gives IQL its "0-9 if compute allows"
    more = expand("online_200k", "cpu-200k", seeds=10)
    assert _seeds(more, IQL) == _seeds(more, ODT) == list(range(10))
    assert _seeds(expand("online_200k", "cpu-200k", seeds=2), IQL) == [0, 1]


def test_online_200k_sizing_is_odt_at_both_precisions_and_a_bf16_pair_at_tuning_seed_100():
    specs = expand("online_200k_sizing", "cpu-200k")
    assert sorted((s.method, s.seed, s.variant) for s in specs) == [
        (ODT, 100, "bf16"), (ODT, 100, "default"), (CONTROL, 100, "bf16")]
    assert EXPERIMENTS["online_200k_sizing"].description.startswith("Tuning")
    # the bf16 sizing runs are the same computation as the reported ones, at another seed
    reported = {s.method: s for s in expand("online_200k", "cpu-200k", seeds=1)}
    for s in specs:
        same = (s.dataset, s.preset, s.overrides) == (reported[s.method].dataset, "cpu-200k", reported[s.method].overrides)
        assert same == (s.variant == "bf16")
    fp32 = next(s for s in specs if s.variant == "default")
    assert not fp32.overrides and matched.twin_spec(next(s for s in specs if s.method == CONTROL)).variant == "bf16"


def test_online_200k_arms_resolve_to_their_precisions():
    from benchmarks.methods import method_config
    for s in expand("online_200k", "cpu-200k", seeds=1):
        cfg = method_config(s.method, s.dataset, s.preset, s.seed, s.overrides_dict)
        if s.method == IQL:
            assert not hasattr(cfg, "precision")
        else:
            assert cfg.precision == "bf16"


def test_cpu_200k_configs_are_the_protocols():
    from benchmarks.methods import method_config
    odt = method_config(ODT, "hopper-medium", "cpu-200k", 0, {})
    assert (odt.online.online_samples, odt.online.buffer_size, odt.online.updates_per_round,
            odt.online.eval_every_rounds, odt.pretrain_updates, odt.eval_episodes) == (200_000, 1000, 300, 10, 2500, 10)
    assert (odt.online.g_online, odt.g_eval, odt.model.embed_dim, odt.model.n_layers) == (7200.0, 3600.0, 64, 3)
    ctrl = method_config(CONTROL, "hopper-medium", "cpu-200k", 0, {})
    assert ctrl.online.add_rollouts is False and ctrl.online.online_updates == 0  # set from the twin at run time
    iql = method_config(IQL, "hopper-medium", "cpu-200k", 0, {})
    assert (iql.online_samples, iql.buffer_size, iql.online_window) == (200_000, 1_000_000, 0)


# ----- the launcher: a control starts only once its twin has ended --------------------------------------
class _Clock:
    """Jobs that end after a number of polls (their 'duration'), recording starts and ends in order."""

    def __init__(self, duration, fails=lambda spec: False):
        self.duration, self.fails, self.events, self.arrays = duration, fails, [], []

    def job(self, spec):
        clock, polls = self, [0]

        class Job:
            paths = SimpleNamespace(stderr="log")
            job_id = "0"

            def done(self):
                polls[0] += 1
                finished = polls[0] >= clock.duration(spec)
                if finished and ("end", spec.method, spec.seed) not in clock.events:
                    clock.events.append(("end", spec.method, spec.seed))
                return finished

            def result(self):
                if clock.fails(spec):
                    raise RuntimeError(f"run {spec.run_id} diverged")
                return {}
        return Job()

    def executor(self):
        clock = self

        class Executor:
            def submit(self, fn, spec, *args):
                clock.events.append(("start", spec.method, spec.seed))
                return clock.job(spec)

            def map_array(self, fn, specs, *args):
                clock.arrays.append([(s.method, s.seed) for s in specs])
                return [clock.job(s) for s in specs]
        return Executor()


def _duration(spec):
    # seed 0's ODT runs long and seed 1's short: without the twin rule, order_for_sharing's plan
    # (odt 0, iql 0, odt 1, iql 1, control 0, control 1) starts control 0 while odt 0 still runs
    return {ODT: 40 if spec.seed % 2 == 0 else 10, CONTROL: 30, IQL: 5}[spec.method]


@pytest.mark.parametrize("parallel", [1, 2, 3])
def test_each_matched_control_starts_after_its_twin_has_ended(tmp_path, monkeypatch, parallel):
    clock = _Clock(_duration)
    monkeypatch.setattr(launch_mod.scheduler, "make_executor", lambda *a, **k: clock.executor())
    specs = expand("online_200k", "cpu-200k")
    opts = launch_mod.LaunchOptions(executor="local", parallel=parallel, poll_s=0.0, holder_grace_s=0.0)
    report = launch_mod.launch(specs, tmp_path, opts, progress=False)
    assert report.done == 25 and not report.failed
    starts = [(m, s) for kind, m, s in clock.events if kind == "start"]
    assert sorted(starts) == sorted((s.method, s.seed) for s in specs)  # each run once
    for seed in range(10):
        assert clock.events.index(("start", CONTROL, seed)) > clock.events.index(("end", ODT, seed))
    # seeds in order: ODT seed n starts before ODT seed n + 1
    odt_starts = [s for m, s in starts if m == ODT]
    assert odt_starts == sorted(odt_starts)


def test_a_held_back_control_does_not_idle_a_free_slot(tmp_path, monkeypatch):
    """Two at once: while ODT seed 0 runs, the slot next to it runs other work, never nothing."""
    clock = _Clock(_duration)
    monkeypatch.setattr(launch_mod.scheduler, "make_executor", lambda *a, **k: clock.executor())
    specs = expand("online_200k", "cpu-200k")
    launch_mod.launch(specs, tmp_path, launch_mod.LaunchOptions(executor="local", parallel=2, poll_s=0.0,
                                                                holder_grace_s=0.0), progress=False)
    running, most = set(), 0
    for kind, m, s in clock.events:
        (running.add if kind == "start" else running.discard)((m, s))
        most = max(most, len(running))
    assert most == 2
    # until ODT seed 0 ends, a slot that frees goes to the next run that can start
    before = clock.events[:clock.events.index(("end", ODT, 0))]
    assert ("start", CONTROL, 1) in before and ("start", CONTROL, 0) not in before


@pytest.mark.parametrize("executor", ["local", "slurm"])
def test_a_control_whose_twin_failed_is_not_started_and_not_counted_as_a_failure(tmp_path, monkeypatch, executor):
    """ODT seed 1 fails: its control is never started (it could only fail for want of a twin), the
    launch names one failure and one run not started, and every other run goes on."""
    clock = _Clock(lambda spec: 1, fails=lambda spec: spec.method == ODT and spec.seed == 1)
    monkeypatch.setattr(launch_mod.scheduler, "make_executor", lambda *a, **k: clock.executor())
    specs = expand("online_200k", "cpu-200k", seeds=3)
    report = launch_mod.launch(specs, tmp_path, launch_mod.LaunchOptions(executor=executor, parallel=2, poll_s=0.0,
                                                                         holder_grace_s=0.0), progress=False)
    odt1, ctrl1 = (next(s for s in specs if s.method == m and s.seed == 1) for m in (ODT, CONTROL))
    assert [f.run_id for f in report.failed] == [odt1.run_id]
    assert [f.run_id for f in report.not_started] == [ctrl1.run_id]
    assert odt1.run_id in report.not_started[0].error
    started = {(m, s) for kind, m, s in clock.events if kind == "start"} | {run for a in clock.arrays for run in a}
    assert (CONTROL, 1) not in started and {(CONTROL, 0), (CONTROL, 2)} <= started
    assert report.done == len(specs) - 2


def test_on_slurm_the_controls_go_out_as_a_second_array(tmp_path, monkeypatch):
    clock = _Clock(lambda spec: 1)
    monkeypatch.setattr(launch_mod.scheduler, "make_executor", lambda *a, **k: clock.executor())
    specs = expand("online_200k", "cpu-200k", seeds=2)
    report = launch_mod.launch(specs, tmp_path, launch_mod.LaunchOptions(executor="slurm", poll_s=0.0,
                                                                         holder_grace_s=0.0), progress=False)
    assert report.done == 6 and not report.failed
    assert len(clock.arrays) == 2
    assert sorted(clock.arrays[0]) == [(IQL, 0), (IQL, 1), (ODT, 0), (ODT, 1)]
    assert sorted(clock.arrays[1]) == [(CONTROL, 0), (CONTROL, 1)]


def test_twin_unfinished(tmp_path):
    odt, ctrl = (RunSpec("online_200k", m, "hopper-medium", 0, "cpu-200k") for m in (ODT, CONTROL))
    assert not launch_mod.twin_unfinished(odt, tmp_path, {odt.run_id})  # not a matched method
    assert launch_mod.twin_unfinished(ctrl, tmp_path, {odt.run_id})  # its twin is this launch's, not ended
    assert not launch_mod.twin_unfinished(ctrl, tmp_path, set())  # no twin anywhere: the run says so itself
    directory = rec.run_dir(tmp_path, odt)
    with job_mod._run_lock(directory):  # another live launch runs the twin
        assert launch_mod.twin_unfinished(ctrl, tmp_path, set())
        rec.write_json(directory / rec.RECORD, {"status": "complete", "run_id": odt.run_id})
        assert not launch_mod.twin_unfinished(ctrl, tmp_path, set())  # complete: the control can start


# ----- the analysis on synthetic records ---------------------------------------------------------------
SAMPLES = 200_000
EVERY = 10  # rounds between evaluations (the preset's)


def _ep_len(method: str, seed: int) -> int:
    """Exploration episode length: ODT's differs by seed; the control's is shorter than its twin's,
    so reading it by its own samples would pick other rounds than its twin's."""
    return 400 + 20 * seed - (60 if method == CONTROL else 0)


def _final_round(seed: int) -> int:
    return math.ceil(SAMPLES / _ep_len(ODT, seed))  # the control makes its twin's rounds


def _rounds(seed: int) -> list[int]:
    last = _final_round(seed)
    return sorted(set(range(EVERY, last + 1, EVERY)) | {last})


def _write(root, spec, offline, online_rows, updates, pretraining_from=None, config=None):
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / rec.PROVENANCE, {"source": "generated"})
    rec.write_json(d / rec.CONFIG, config or {"pretrain_updates": 2500})
    curve = [{"phase": "pretrain", "updates": u, "online_samples": 0, "score_mean": offline - 5.0 + 2.0 * i}
             for i, u in enumerate((1000, 2000))]
    curve.append({"phase": "pretrain", "updates": 2500, "online_samples": 0, "score_mean": offline})
    curve += online_rows
    rec.write_curve(d / rec.CURVE, curve)
    rec.write_json(d / rec.RECORD, {
        "status": "complete", "run_id": spec.run_id, "offline_score": offline, "final_score": online_rows[-1]["score_mean"],
        "counters": {"updates": updates, "online_samples": online_rows[-1]["online_samples"]},
        "pretraining_from": pretraining_from})


def control_score(seed: int, r: int) -> float:
    return 50.0 + seed + 0.1 * r  # the control's curve rises with rounds


def make_pair(root, seed, gap, pretrain=40.0):
    """ODT and its matched control of one seed; ``gap(seed, round)`` is ODT - control at that round."""
    specs = {m: RunSpec("online_200k", m, "hopper-medium", seed, "cpu-200k") for m in (ODT, CONTROL)}
    last = _final_round(seed)
    for m in (ODT, CONTROL):
        rows = [{"phase": "online", "rounds": r, "updates": 2500 + 300 * r,
                 "online_samples": min(r * _ep_len(m, seed), SAMPLES + _ep_len(m, seed)),
                 "score_mean": control_score(seed, r) + (gap(seed, r) if m == ODT else 0.0)} for r in _rounds(seed)]
        _write(root, specs[m], pretrain + seed, rows, 2500 + 300 * last,
               pretraining_from=specs[ODT].run_id if m == CONTROL else None)
    return specs


def make_iql(root, seed, offline, end):
    spec = RunSpec("online_200k", IQL, "hopper-medium", seed, "cpu-200k")
    rows = [{"phase": "online", "updates": 180_000 + n, "online_samples": n,
             "score_mean": end if n > SAMPLES - 3 * 5000 else offline + 1.0} for n in range(5000, SAMPLES + 1, 5000)]
    _write(root, spec, offline, rows, 380_000, config={"offline_updates": 180_000})
    return spec


def _t_interval(x, confidence=0.95):
    x = np.asarray(x, dtype=float)
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return x.mean(), x.mean() - half, x.mean() + half


def _expected_verdict(x):
    """The protocol's words, from scipy alone: 95% excludes 0 -> supports / contradicts; else the
    90% interval inside +-10 -> equivalent; else inconclusive."""
    _, lo, hi = _t_interval(x, 0.95)
    if lo > 0 or hi < 0:
        return "supports" if lo > 0 else "contradicts"
    _, lo90, hi90 = _t_interval(x, 0.90)
    return "equivalent" if -10 < lo90 and hi90 < 10 else "inconclusive"


def _noise(scale, seed=0):
    rng = np.random.default_rng(seed)
    table = rng.normal(0.0, scale, size=(10, 1000))
    return lambda s, r: float(table[s, r])


def _d200(gap, seed):
    last = _rounds(seed)[-3:]
    return float(np.mean([gap(seed, r) for r in last]))


@pytest.mark.parametrize("name, gap, word", [
    ("planted +15", lambda n: (lambda s, r: 15.0 + n(s, r)), "supports"),
    ("planted -15", lambda n: (lambda s, r: -15.0 + n(s, r)), "contradicts"),
    ("zero, tight noise", lambda n: (lambda s, r: n(s, r) / 3.0), "equivalent"),
    ("zero, wide seed-to-seed spread", lambda n: (lambda s, r: (30.0 if s % 2 else -30.0) + n(s, r)), "inconclusive"),
])
def test_d200_is_the_paired_mean_of_the_last_three_evaluations(tmp_path, name, gap, word):
    g = gap(_noise(3.0))
    for seed in range(10):
        make_pair(tmp_path, seed, g)
    table = an.per_run(*_frames(tmp_path))
    paired = an.pairs(table, _frames(tmp_path)[1])
    expected = [_d200(g, s) for s in range(10)]
    assert paired.D200.to_numpy() == pytest.approx(expected)
    comp = an.comparisons(paired, table)
    mean, lo, hi = _t_interval(expected)
    assert (comp["D200"].mean, comp["D200"].lo, comp["D200"].hi, comp["D200"].n) == (
        pytest.approx(mean), pytest.approx(lo), pytest.approx(hi), 10)
    assert _expected_verdict(expected) == word  # the data say what the case is named for
    read = an.verdicts(comp, table)
    assert read["D200"].word == word and read["D200"].primary
    assert read["G"].word.startswith("incomplete")  # no IQL runs


def _frames(root):
    from benchmarks import aggregate as agg
    return agg.load_runs(root, "cpu-200k", "online_200k"), agg.load_results(root, "cpu-200k", "online_200k")


def test_d_at_sample_points_reads_both_arms_at_the_twins_round(tmp_path):
    gap = lambda s, r: 0.05 * r + 0.3 * s  # noqa: E731 - grows with rounds, differs by seed
    for seed in range(10):
        make_pair(tmp_path, seed, gap)
    runs, curves = _frames(tmp_path)
    paired = an.pairs(an.per_run(runs, curves), curves)
    for samples, label in zip(an.SAMPLE_POINTS, ("D5k", "D25k", "D50k", "D100k"), strict=True):
        for seed in range(10):
            r = next(r for r in _rounds(seed) if r * _ep_len(ODT, seed) >= samples)
            row = paired[paired.seed == seed].iloc[0]
            assert row[f"{label}_round"] == r
            assert row[label] == pytest.approx(gap(seed, r))  # the control at the same round, not at its own samples
    assert paired.same_rounds.all() and paired.shared.all() and paired.pretrain_equal.all()
    assert (paired.odt_updates == paired.control_updates).all()


def test_the_secondary_family_is_holm_corrected_and_g_is_welch(tmp_path):
    noise = _noise(4.0, seed=1)
    gap = lambda s, r: 0.02 * r + noise(s, r)  # noqa: E731
    for seed in range(10):
        make_pair(tmp_path, seed, gap, pretrain=40.0)
    iql_gains = [2.0, -4.0, 6.0, 1.0, -1.5]
    for seed, g in enumerate(iql_gains):
        make_iql(tmp_path, seed, 60.0 + seed, 60.0 + seed + g)
    runs, curves = _frames(tmp_path)
    table = an.per_run(runs, curves)
    paired = an.pairs(table, curves)
    comp = an.comparisons(paired, table)
    read = an.verdicts(comp, table)

    # independently: ODT's gains from the generator, Welch from scipy, Holm written out
    odt_gains = [np.mean([control_score(s, r) + gap(s, r) for r in _rounds(s)[-3:]]) - (40.0 + s) for s in range(10)]
    assert table[table.method == IQL].gain.to_numpy() == pytest.approx(iql_gains)
    assert comp["G"].mean == pytest.approx(np.mean(odt_gains) - np.mean(iql_gains))
    p_g = stats.ttest_ind(odt_gains, iql_gains, equal_var=False).pvalue
    assert comp["G"].p_value == pytest.approx(p_g)
    va, vb = np.var(odt_gains, ddof=1) / 10, np.var(iql_gains, ddof=1) / 5
    df = (va + vb) ** 2 / (va**2 / 9 + vb**2 / 4)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert (comp["G"].lo, comp["G"].hi) == (pytest.approx(comp["G"].mean - half), pytest.approx(comp["G"].mean + half))

    names = ["D5k", "D25k", "D50k", "D100k", "G"]
    raw = [stats.ttest_1samp(paired[n].to_numpy(), 0.0).pvalue for n in names[:4]] + [p_g]
    order = np.argsort(raw)
    holm, running = [0.0] * 5, 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (5 - i) * raw[j]))
        holm[j] = running
    for n, p in zip(names, holm, strict=True):
        assert read[n].reading.p_difference_holm == pytest.approx(p)
        assert not read[n].primary
    assert read["D200"].reading.p_difference_holm == pytest.approx(read["D200"].reading.p_difference)  # read alone
    assert read["G"].word == "supports"  # ODT's gain ~ +12 over 10 seeds against IQL's ~ +0.7


def test_below_the_protocols_seeds_there_is_no_verdict(tmp_path):
    for seed in range(3):
        make_pair(tmp_path, seed, lambda s, r: 15.0 + s)
    text = an.report(tmp_path, "cpu-200k", tmp_path / "figures")
    assert "3 pairs" in text and "a status, not a result" in text
    assert "incomplete (n=3 < 10)" in text
    table = an.per_run(*_frames(tmp_path))
    read = an.verdicts(an.comparisons(an.pairs(table, _frames(tmp_path)[1]), table), table)
    assert all(v.word.startswith("incomplete") for v in read.values())


def test_the_report_says_no_complete_runs_yet_and_draws_nothing(tmp_path):
    text = an.report(tmp_path, "cpu-200k", tmp_path / "figures")
    assert "No complete runs yet" in text
    assert not (tmp_path / "figures").exists()
    assert an.main(["--results", str(tmp_path), "--figures", str(tmp_path / "figures")]) == 0


def test_the_figure_band_is_the_paired_t_interval_where_every_pair_evaluated(tmp_path):
    noise = _noise(2.0, seed=2)
    gap = lambda s, r: 5.0 + 0.01 * r + noise(s, r)  # noqa: E731
    for seed in range(4):
        make_pair(tmp_path, seed, gap)
    runs, curves = _frames(tmp_path)
    table = an.per_run(runs, curves)
    band = an.gap_band(an.gap_curves(table, curves))
    common = sorted(set.intersection(*(set(_rounds(s)) for s in range(4))))
    assert band.rounds.tolist() == common
    r = common[-1]
    values = [gap(s, r) for s in range(4)]
    mean, lo, hi = _t_interval(values)
    last = band[band.rounds == r].iloc[0]
    assert (last["mean"], last.low, last.high, last.n) == (pytest.approx(mean), pytest.approx(lo), pytest.approx(hi), 4)
    assert last.online_samples == pytest.approx(np.mean([r * _ep_len(ODT, s) for s in range(4)]))

    for seed in range(2):
        make_iql(tmp_path, seed, 60.0, 64.0)
    out = tmp_path / "figures"
    text = an.report(tmp_path, "cpu-200k", out)
    assert (out / "online_200k_gap.png").stat().st_size > 0 and (out / "online_200k_gap.pdf").exists()
    assert "Figure: " in text and "online_200k_gap.png" in text and "| 0 |" in text
    sidecar = json.loads((out / "online_200k_gap.json").read_text())
    assert sidecar["runs"] == {"iql": 2, "odt": 4, "odt-control-matched": 4} and sidecar["pairs"] == 4
    assert sidecar["preset"] == "cpu-200k" and sidecar["command"].endswith(f"--results {tmp_path} --preset cpu-200k")


# ----- amendment A4: the primary's two looks ------------------------------------------------------
def _paired(diffs, seeds=None):
    seeds = list(range(len(diffs))) if seeds is None else seeds
    return pd.DataFrame({"seed": seeds, an.PRIMARY: diffs})


def _t_bounds(diffs, alpha):
    d = np.asarray(diffs, float)
    half = stats.t.ppf(1 - alpha / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return d.mean() - half, d.mean() + half


def test_interim_look_reads_seeds_0_to_4_at_alpha_0005():
    diffs = [30.0, 28.0, 35.0, 25.0, 32.0]
    e, v = an.primary_at_look(_paired(diffs + [-50.0, -60.0]), 5)  # seeds 5, 6 are not in the first look
    assert e.n == 5 and np.isclose(e.mean, 30.0)
    assert np.allclose((e.lo, e.hi), _t_bounds(diffs, 0.005))  # the 99.5% paired t-interval
    assert v.word == "supports"


def test_interim_look_gives_no_verdict_where_the_995_interval_holds_0():
    diffs = [20.0, 5.0, 30.0, 12.0, 25.0]  # the 95% interval excludes 0, the 99.5% one does not
    assert _t_bounds(diffs, 0.05)[0] > 0 > _t_bounds(diffs, 0.005)[0]
    e, v = an.primary_at_look(_paired(diffs), 5)
    assert v.word.startswith("interim") and "equivalent" not in v.text()


def test_a_look_waits_for_all_its_pairs():
    assert an.primary_at_look(_paired([1.0, 2.0, 3.0, 4.0, 5.0], seeds=[0, 1, 2, 3, 6]), 5) is None
    assert an.primary_at_look(_paired([1.0] * 9), 10) is None


def test_final_look_reads_ten_pairs_at_alpha_0048_with_the_margin():
    diffs = [2.0, -3.0, 1.0, 0.5, -1.0, 2.5, -2.0, 1.5, 0.0, -0.5]
    e, v = an.primary_at_look(_paired(diffs), 10)
    assert np.allclose((e.lo, e.hi), _t_bounds(diffs, 0.048))
    assert v.word == "equivalent"  # small differences, the 90.4% interval well inside +-10


def test_where_the_runs_ran_counts_each_arm_and_names_a_pair_split_across_cpu_models(tmp_path):
    cpu = {(ODT, 0): "cpu A", (CONTROL, 0): "cpu A", (ODT, 1): "cpu A", (CONTROL, 1): "cpu B"}
    for seed in (0, 1):
        specs = make_pair(tmp_path, seed, lambda s, r: 1.0)
        for method, spec in specs.items():
            rec.write_json(rec.run_dir(tmp_path, spec) / rec.ENVIRONMENT, {"attempts": [
                {"git_sha": "e5cdf1d" + "0" * 33, "git_dirty": False, "cpu_model": cpu[method, seed]}]})
    runs, curves = _frames(tmp_path)
    lines = an.origin_lines(runs, an.pairs(an.per_run(runs, curves), curves))
    rows = {line.split(" | ")[0]: line.split(" | ") for line in lines if line.startswith("| `")}
    odt, control = rows[f"| `{ODT}`"], rows[f"| `{CONTROL}`"]
    assert (odt[1], odt[3], odt[4]) == ("2", "e5cdf1d", "cpu A")  # runs, code, CPU
    assert (control[1], control[4]) == ("2", "cpu A (1), cpu B (1)")
    assert lines[-1] == "Pairs whose two runs ran on different CPU models: 1."
