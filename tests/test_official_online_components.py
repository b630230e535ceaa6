"""The online-phase component check (benchmarks/official/online_components.py): its comparison
helpers against our code alone, and, where ``ODT_OFFICIAL_SRC`` holds the official online-dt code,
the two codes side by side on the buffer, the sampling, one exploration rollout, one evaluation
episode and the optimisation across the phase switch (skipped without it: CI has no official code).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.official import online_components as O
from odt.buffer import TrajectoryBuffer
from odt.relabel import returns_to_go
from rlbase.trajectories import Trajectories

SOURCE = os.environ.get("ODT_OFFICIAL_SRC", "")
needs_official = pytest.mark.skipif(not SOURCE or not (Path(SOURCE) / "main.py").is_file(),
                                    reason="ODT_OFFICIAL_SRC does not name the official online-dt code")


# ----- without the official code ---------------------------------------------------------------

def test_ring_read_from_its_next_slot_is_oldest_first():
    """A ring of 3 after 4 insertions (a, b, c, then d over a): next slot 1 holds the oldest."""
    assert O.ring_in_age_order(["d", "b", "c"], 1) == ["b", "c", "d"]
    assert O.ring_in_age_order(["a", "b", "c"], 0) == ["a", "b", "c"]


def test_ring_order_matches_our_fifo_buffer():
    """The official ring discipline, simulated, read oldest-first, is what our buffer keeps."""
    rng = np.random.default_rng(0)
    eps = [{"observations": rng.normal(size=(n, 2)).astype(np.float32), "actions": np.zeros((n, 1), np.float32),
            "rewards": np.full(n, float(i), np.float32), "terminated": False} for i, n in enumerate((3, 5, 2, 4, 6, 1))]
    ours = TrajectoryBuffer.from_offline(Trajectories.from_episodes(eps[:3]), 3)
    ring, start = [ours.data.episode(i)["observations"] for i in range(3)], 0  # ascending return, as official
    for e in eps[3:]:
        ours.add(e)
        ring[start], start = e["observations"], (start + 1) % 3
        kept = [ours.data.episode(i)["observations"] for i in range(len(ours))]
        assert O.identify(O.ring_in_age_order(ring, start), kept) == [0, 1, 2]


def test_identify_finds_equal_arrays_and_refuses_strangers():
    a, b = np.arange(6.0).reshape(3, 2), np.ones((2, 2))
    assert O.identify([b, a], [a, b]) == [1, 0]
    with pytest.raises(ValueError):
        O.identify([np.zeros((3, 2))], [a, b])


@pytest.mark.parametrize("lengths", [(7, 13, 26, 45), (1, 2, 20, 21), (1000,) * 3])
def test_padding_share_counts_every_window(lengths):
    k = 20
    padded = sum(max(0, k - (n - s)) for n in lengths for s in range(n))
    assert O.padding_share(lengths, k) == pytest.approx(padded / (sum(lengths) * k), rel=1e-12)


def test_padding_share_of_long_trajectories():
    assert O.padding_share([1000] * 25, 20) == pytest.approx(19 / 2 / 1000)


def test_our_sampler_passes_and_a_wrong_law_fails_the_uniformity_test():
    """Windows drawn by length with a uniform start are uniform over (trajectory, start); drawing
    trajectories uniformly instead is caught."""
    lengths = np.array([5, 40, 12, 80])
    data = Trajectories.from_episodes([{"observations": np.zeros((n, 1), np.float32), "actions": np.zeros((n, 1), np.float32),
                                        "rewards": np.ones(n, np.float32), "terminated": False} for n in lengths])
    buf = TrajectoryBuffer(len(lengths), data)
    idx, _ = buf.sample(np.random.default_rng(1), 20_000, 20)
    traj = np.searchsorted(buf.data.starts, idx.flat[:, 0], side="right") - 1
    cells = O.window_cells(traj, idx.timesteps[:, 0], lengths)
    assert O.uniformity_pvalue(cells, int(lengths.sum())) > O.P_MIN
    rng = np.random.default_rng(2)
    wrong_traj = rng.integers(0, len(lengths), 20_000)
    wrong = O.window_cells(wrong_traj, (rng.random(20_000) * lengths[wrong_traj]).astype(int), lengths)
    assert O.uniformity_pvalue(wrong, int(lengths.sum())) < 1e-12
    assert O.homogeneity_pvalue(cells, wrong, int(lengths.sum())) < 1e-12
    with pytest.raises(ValueError):
        O.window_cells(np.array([0]), np.array([5]), lengths)


def test_the_official_relabelling_law_is_our_returns_to_go():
    r = np.random.default_rng(3).uniform(0, 3.5, 300).astype(np.float32)
    np.testing.assert_allclose(O.official_rtg(r, 0.001), returns_to_go(r, np.array([300])) / 1000, rtol=1e-5)


def test_official_rollout_layout_clamps_actions_and_marks_the_last_step():
    ep = O.synthetic_rollouts(0, lengths=(9,))[0]
    ep["actions"][0] = 1.0
    got = O.as_official_rollout(ep, [-1 + 1e-6, 1 - 1e-6])
    assert got["actions"].max() < 1.0 and got["terminals"].tolist() == [0] * 8 + [1]


def test_our_noise_is_what_our_sampler_draws():
    """The draws handed to the official rollout are the ones our sampled rollout takes, step by step."""
    gen = torch.Generator().manual_seed(7)
    drawn = [torch.randn((1, 3), generator=gen) for _ in range(4)]
    assert all(torch.equal(a, b) for a, b in zip(O.our_noise(7, 4, 3), drawn))


def test_verdicts():
    assert O.Check("a", "c", "max rel", 1e-6, 1e-5).verdict == "ok"
    assert O.Check("a", "c", "max rel", 1e-3, 1e-5).verdict == "DIFFERS"
    assert O.Check("a", "c", "p-value", 0.5, 1e-3, higher_ok=True).verdict == "ok"
    assert O.Check("a", "c", "p-value", 1e-9, 1e-3, higher_ok=True).verdict == "DIFFERS"
    assert O.Check("a", "c", "max rel", 1.0, None).verdict == "known difference"


def test_rollouts_run_in_the_registrys_environment():
    """Walker2d's rollouts step the registry's Walker2d-v5 with D4RL's feet (the env both codes'
    runs step), 17-dim observations and 6-dim actions; synthetic rollouts take those shapes."""
    env = O.dataset_env("walker2d-medium")()
    try:
        assert env.spec.id == "Walker2d-v5" and env.spec.kwargs.get("xml_file") == "walker2d.xml"
        assert env.observation_space.shape == (17,) and env.action_space.shape == (6,)
        assert env.spec.max_episode_steps == 1000
    finally:
        env.close()
    ep = O.synthetic_rollouts(0, lengths=(4,), dataset="walker2d-medium")[0]
    assert ep["observations"].shape == (4, 17) and ep["actions"].shape == (4, 6)


def test_replayed_episode_ignores_actions_and_ends_at_the_time_limit():
    """The replay env returns the recorded observations and rewards whatever the action, and the
    time limit truncates it after the recorded 1000 steps."""
    env = O.replay_env("walker2d-medium", seed=3)()
    obs, _ = env.reset(seed=11)
    first = obs.copy()
    steps, total = 0, 0.0
    truncated = terminated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        steps, total = steps + 1, total + reward
    assert steps == 1000 and truncated and not terminated
    observations, rewards, _ = O.recorded_episode("walker2d-medium", seed=3)
    assert np.array_equal(first, observations[0]) and np.array_equal(obs, observations[-1])
    assert total == pytest.approx(rewards.sum())


def test_switch_note_says_when_there_is_no_switch():
    from odt.config import make_config

    assert "no switch" in O.switch_note(make_config("walker2d-medium", "online", "cpu"))
    assert "online.lr 0.0001" in O.switch_note(make_config("hopper-medium", "online", "cpu"))


def test_cli_without_the_official_code_says_how_to_set_it_up(monkeypatch, capsys):
    monkeypatch.delenv("ODT_OFFICIAL_SRC", raising=False)
    assert O.main([]) == 2
    assert "ODT_OFFICIAL_SRC" in capsys.readouterr().err


# ----- with the official code ------------------------------------------------------------------

@pytest.fixture(scope="module")
def report() -> O.Report:
    torch.set_num_threads(1)
    return O.compare(Path(SOURCE), seed=0)


KNOWN = {  # the differences the check must report, and only these
    ("1 buffer", "initial buffer at the preset's capacity: trajectories"),
    ("1 buffer", "list order inside the buffer"),
    ("1 buffer", "stored rollout actions (official: clamped to +-(1 - 1e-6) when executed)"),
    ("2 sampling", "share of padded positions in a buffer of 25 rollouts of L steps"),
    ("2 sampling", "online batch: actions"),
    ("3 exploration", "exploration: stored actions"),
    ("6 whole episodes", "exploration, 1000 replayed steps: stored actions"),
}


@needs_official
def test_every_judged_comparison_is_within_its_tolerance(report):
    failing = [f"{r.area} / {r.check}: {r.measure} {r.value:.3g}, tol {r.tol}" for r in report.rows if r.ok is False]
    assert not failing, "\n".join(failing)


@needs_official
def test_only_the_known_differences_are_unjudged(report):
    assert {(r.area, r.check) for r in report.rows if r.ok is None} == KNOWN


@needs_official
def test_every_area_is_checked(report):
    assert {r.area for r in report.rows} == {"1 buffer", "2 sampling", "3 exploration", "4 evaluation",
                                             "5 optimisation", "6 whole episodes"}
    whole = next(r for r in report.rows if r.check == "evaluation, 1000 replayed steps: steps until done")
    assert whole.note.startswith("1000 steps (ours), 1000 (official)")
    steps = next(r for r in report.rows if r.check == "exploration: steps until done")
    assert "steps" in steps.note


@pytest.fixture(scope="module")
def walker_report() -> O.Report:
    torch.set_num_threads(1)
    return O.compare(Path(SOURCE), seed=0, dataset="walker2d-medium")


@needs_official
def test_walker2d_online_phase_differs_only_where_hopper_does(walker_report):
    """walker2d-medium's config (finetuning at optim.lr, no switch), shapes and environment: the
    same comparisons pass and the same known differences remain."""
    failing = [f"{r.area} / {r.check}: {r.measure} {r.value:.3g}" for r in walker_report.rows if r.ok is False]
    assert not failing, "\n".join(failing)
    assert {(r.area, r.check) for r in walker_report.rows if r.ok is None} == KNOWN
    lr = next(r for r in walker_report.rows if r.check.startswith("learning rate at each"))
    assert "no switch" in lr.note
