"""The official comparison's amendments of 2026-12-06 (benchmarks/official/comparison.py): the
hopper-medium-replay row read from ``official_replay`` alone and refused when its runs span two
data files, walker2d-medium's second look at 10 seeds per arm, and Table 1's note on the official
cells of another file (benchmarks/tables.py). Frames are built here; expectations are computed
independently with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.official import comparison as C
from benchmarks.tables import official_section

OLD, NEW, OTHER = "31f6e9c7", "0badf11e", "c0ffee00"
REPLAY = "hopper-medium-replay"


def run(experiment, method, dataset, seed, final, offline, data_file, status="complete"):
    return {"preset": "cpu", "experiment": experiment, "method": method, "dataset": dataset, "variant": "default",
            "seed": seed, "run_id": f"{method}__{dataset}__s{seed}__{experiment}", "status": status,
            "final_score": float(final), "offline_score": float(offline), "wall_time": 3600.0,
            "core_seconds": 3600.0, "code": "abc1234", "cpu": "some CPU", "torch": "2.x", "data_file": data_file}


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows)


def replay_frame(new_official_file=NEW) -> pd.DataFrame:
    rows = []
    for s in range(5):  # Table 1's runs on the old file: far from the rest, must not enter
        rows.append(run("table1", "odt", REPLAY, s, 90 + s, 80 + s, OLD))
    for s in range(5):  # the amendment's runs on the new file
        rows.append(run("official_replay", "odt", REPLAY, s, 40 + 2 * s, 30 + s, NEW))
        rows.append(run("official_replay", "official-odt", REPLAY, s, 45 - s, 35 - s,
                        new_official_file if s == 4 else NEW))
    for s in range(3):  # another row, whose runs never come from official_replay
        rows.append(run("table1", "odt", "hopper-medium", s, 50 + s, 30 + s, "bdaad3f4"))
        rows.append(run("official", "official-odt", "hopper-medium", s, 48 - s, 33 + s, "bdaad3f4"))
        rows.append(run("official_replay", "official-odt", "hopper-medium", s, 0.0, 0.0, NEW))
    return frame(rows)


# ----- hopper-medium-replay: where the row comes from ------------------------------------------

def test_the_replay_row_comes_from_official_replay_only():
    loaded = replay_frame()
    runs = C.sourced(loaded)
    replay = runs[runs.dataset == REPLAY]
    assert set(replay.experiment) == {"official_replay"} and len(replay) == 10
    assert set(runs[runs.dataset == "hopper-medium"].experiment) == {"table1", "official"}
    readings = {(r.dataset, r.metric): r for r in C.read_all(runs)}
    final = readings[(REPLAY, "final_score")]
    assert list(final.ours) == [40.0, 42.0, 44.0, 46.0, 48.0]  # the new file's, not Table 1's 90-94
    assert list(final.official) == [45.0, 44.0, 43.0, 42.0, 41.0]
    welch = stats.ttest_ind(final.ours, final.official, equal_var=False)
    assert final.interval.p_value == pytest.approx(welch.pvalue)
    assert readings[("hopper-medium", "final_score")].official.tolist() == [48.0, 47.0, 46.0]  # not the zeros

    text = "\n".join(C.report_lines(loaded, "cpu"))
    assert f"| {REPLAY} (file {NEW}) | final | 44.0 ± 3.2 (n=5) | 43.0 ± 1.6 (n=5) |" in text
    # beside it, no verdict: ours on each file with its content prefix
    assert f"| Table 1 (`table1`) | {OLD} | 82.0 ± 1.6 (n=5) | 92.0 ± 1.6 (n=5) |" in text
    assert f"| `official_replay` | {NEW} | 32.0 ± 1.6 (n=5) | 44.0 ± 3.2 (n=5) |" in text
    assert f"| odt | {REPLAY} (file {NEW}) | 5 |" in text  # the provenance table: the new file only


def test_a_row_whose_runs_span_two_files_is_refused_naming_runs_and_contents():
    loaded = replay_frame(new_official_file=OTHER)
    with pytest.raises(C.MixedContents) as err:
        C.report_lines(loaded, "cpu")
    message = str(err.value)
    assert REPLAY in message and NEW in message and OTHER in message
    assert f"official-odt__{REPLAY}__s4__official_replay" in message  # the odd run, by its id
    # Table 1's old-file runs are not the row's: alone they do not make it mixed
    assert C.report_lines(replay_frame(), "cpu")


# ----- walker2d-medium: the second look at 10 seeds per arm -------------------------------------

def walker_frame(n_official: int, final_shift: float) -> pd.DataFrame:
    base = np.linspace(-1.0, 1.0, 10)
    rows = []
    for s in range(10):
        rows.append(run("table1", "odt", C.WALKER, s, 30 + base[s] + final_shift, 60 + base[s], "15c93cbb"))
        if s < n_official:
            rows.append(run("official", "official-odt", C.WALKER, s, 30 + base[s], 20 + base[s], "15c93cbb"))
    return frame(rows)


def shift_for(p: float) -> float:
    """The shift of two equal-variance sets of 10 (linspace spread) that gives Welch's p = ``p``."""
    base = np.linspace(-1.0, 1.0, 10)
    return stats.t.ppf(1 - p / 2, 18) * base.std(ddof=1) * np.sqrt(2 / 10)


def test_walker_is_not_read_until_both_arms_have_ten_seeds():
    runs = walker_frame(9, shift_for(0.049))
    assert not C.walker_complete(runs)
    text = "\n".join(C.walker_lines(runs))
    assert "Not read" in text and "ours 10, official 9" in text and "95.2%" not in text


def test_walker_second_look_is_read_at_0048_with_holm_over_the_family():
    runs = walker_frame(10, shift_for(0.049))
    assert C.walker_complete(runs)
    readings = {(r.dataset, r.metric): r for r in C.walker_readings(runs)}
    final, pre = readings[(C.WALKER, "final_score")], readings[(C.WALKER, "offline_score")]
    # independently: Welch p of each, Holm over the two read (the other rows have no runs here)
    p_final = stats.ttest_ind(final.ours, final.official, equal_var=False).pvalue
    p_pre = stats.ttest_ind(pre.ours, pre.official, equal_var=False).pvalue
    assert p_final == pytest.approx(0.049) and p_pre < 1e-10
    assert final.p_holm == pytest.approx(max(2 * p_pre, p_final))
    assert pre.p_holm == pytest.approx(2 * p_pre)
    assert final.interval.confidence == pytest.approx(0.952)
    assert final.equivalence.interval.confidence == pytest.approx(0.904)
    a, b = final.ours, final.official
    va, vb = a.var(ddof=1) / 10, b.var(ddof=1) / 10
    df = (va + vb) ** 2 / (va**2 / 9 + vb**2 / 9)
    half = stats.t.ppf(1 - 0.048 / 2, df) * np.sqrt(va + vb)
    assert (final.interval.low, final.interval.high) == pytest.approx((a.mean() - b.mean() - half,
                                                                       a.mean() - b.mean() + half))
    # p_holm 0.049 would be a difference at 0.05, not at the second look's 0.048
    assert final.verdict != "contradicts" and pre.verdict == "contradicts"
    assert C.read_all(runs, {C.WALKER: range(10)})[-2].verdict == "contradicts"  # a first look at 0.05
    text = "\n".join(C.walker_lines(runs))
    assert f"| {C.WALKER} | final |" in text and "(95.2%)" in text and "(90.4%)" in text
    assert "not made" in text  # no curves given: the exploratory readings say so


def test_walker_exploratory_readings_come_from_each_runs_curve():
    runs = walker_frame(10, 0.0)
    rng = np.random.default_rng(3)
    curve_rows, expect = [], {}
    for _, r in runs.iterrows():
        pre, online = rng.uniform(0, 60, 5), rng.uniform(0, 60, 2)
        expect[(r.method, r.seed)] = (pre[-3:].mean(), online.mean())
        order = [4, 0, 3, 1, 2]  # rows out of update order: the reading sorts by update
        for i in order:
            curve_rows.append({"experiment": r.experiment, "run_id": r.run_id, "step": i, "phase": "pretrain",
                               "updates": 1000 * (i + 1), "score_mean": pre[i]})
        for j, v in enumerate(online):
            curve_rows.append({"experiment": r.experiment, "run_id": r.run_id, "step": 5 + j, "phase": "online",
                               "updates": 6000 + j, "score_mean": v})
    text = "\n".join(C.walker_exploratory_lines(runs, pd.DataFrame(curve_rows)))
    for k, (name, seeds) in enumerate([("mean of the last three pretraining evaluations", range(10)),
                                       ("mean of the online evaluations", range(5, 10))]):
        label = "0-9" if len(seeds) == 10 else "5-9 (fresh)"
        a = np.array([expect[("odt", s)][k] for s in seeds])
        b = np.array([expect[("official-odt", s)][k] for s in seeds])
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        line = next(x for x in text.splitlines() if x.startswith(f"| {name} | {label} |"))
        assert f"{a.mean() - b.mean():+.1f} [" in line and line.endswith(f"| {p:.3f} |")


# ----- Table 1: official cells on another file --------------------------------------------------

def test_table1_marks_official_cells_of_another_file_and_names_both():
    loaded = replay_frame()
    table1 = loaded[loaded.experiment == "table1"]
    official = loaded[loaded.experiment == "official"]
    replay = loaded[loaded.experiment == "official_replay"]
    text = official_section(table1, official, "cpu", replay)
    row = next(line for line in text.splitlines() if line.startswith(f"| {REPLAY} |"))
    # ours from Table 1 (old file: 82, 92), official from official_replay (33, 43); population std
    assert row == (f"| {REPLAY} | 82.00 ± 1.41 (n=5) | 33.00 ± 1.41 (n=5)† | 92.00 ± 1.41 (n=5) "
                   "| 43.00 ± 1.41 (n=5)† |")
    note = next(line for line in text.splitlines() if line.startswith("†"))
    assert OLD in note and NEW in note and "32.00 ± 1.41 (n=5) pretrained" in note and "44.00 ± 2.83 (n=5)" in note
    hopper = next(line for line in text.splitlines() if line.startswith("| hopper-medium |"))
    # the other row: official from `official` (offline 33-35, final 48-46), unmarked
    assert hopper == "| hopper-medium | 31.00 ± 0.82 (n=3) | 34.00 ± 0.82 (n=3) | 51.00 ± 0.82 (n=3) | 47.00 ± 0.82 (n=3) |"
    assert f"| {REPLAY} |" not in official_section(table1, official, "cpu")  # no replay: no such row
