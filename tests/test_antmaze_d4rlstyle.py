"""antmaze-umaze-d4rlstyle: antmaze-umaze's collection with D4RL's episode and label conventions.

The labels on a synthetic path, a small collection with the packaged walker (1000-step episodes
that go on after the goal), what the readers make of terminals inside an episode, the registry
entry, and that antmaze-umaze and antmaze-umaze-diverse collect the same steps as before labels
became a setting.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

pytest.importorskip("gymnasium_robotics", reason="AntMaze needs gymnasium-robotics (pip install -e '.[antmaze]')")

from benchmarks.datasets import DatasetUnavailable, get_spec, load_dataset  # noqa: E402
from benchmarks.datasets.antmaze_forge import (  # noqa: E402
    AntMazeForgeConfig,
    antmaze_forge_config,
    collect_antmaze,
    d4rl_labels,
    label_counts,
    make_antmaze,
    make_controller,
    packaged_walker_path,
)
from benchmarks.datasets.d4rl_io import split_points  # noqa: E402
from benchmarks.datasets.forge_base import load_first_actor  # noqa: E402
from benchmarks.datasets.registry import hyperparameter_dataset  # noqa: E402
from rlbase.config import ConfigError  # noqa: E402
from rlbase.trajectories import Trajectories  # noqa: E402

NAME = "antmaze-umaze-d4rlstyle"
SIZE = 2500  # two 1000-step episodes and a 500-step tail
# sha256 of collect_antmaze's arrays (SIZE steps, the packaged walker, the recipe's controller,
# seed 0), recorded with the forge before labels became a setting: the two levels must not change
RECORDED = {
    "antmaze-umaze": "47f7788e14daca08e91eb422b9ed6aefd6b27443ca556359d90ef2231967af61",
    "antmaze-umaze-diverse": "437fda470d8e1f73a6c8cdb728d73755cce934bdcba3465c7de240758b204a76",
}


def _digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def actor():
    return load_first_actor([packaged_walker_path(0)])[0]


def _collect(actor, name: str, size: int = SIZE):
    cfg = antmaze_forge_config(name)
    return collect_antmaze(make_controller(actor, cfg), size, cfg.seed, cfg.diverse, cfg.episode_steps,
                           progress=False, labels=cfg.labels)


@pytest.fixture(scope="module")
def d4rlstyle(actor):
    return _collect(actor, NAME)


# ----- the labels -----------------------------------------------------------------------------
def test_labels_on_a_path_in_and_out_of_the_radius():
    goal = np.array([1.0, 2.0])
    rng = np.random.default_rng(0)
    n = 2300  # two full 1000-step episodes and 300 steps of a third
    dist = rng.choice([0.0, 0.2, 0.49, 0.51, 0.8, 3.0], size=n)
    dist[[5, 6, 7]] = [0.49, 0.51, 0.49]  # in, out, in again
    dist[999] = 0.3  # the first episode's last step ends inside the radius
    dist[1999] = 2.0  # the second's outside
    dist[12] = 0.5  # on the circle, along x: exactly 0.5 away, inside (inclusive)
    angle = np.where(np.arange(n) == 12, 0.0, rng.uniform(0, 2 * np.pi, n))
    next_xy = goal + dist[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    episode_step = np.arange(n) % 1000 + 1
    reward, terminal, timeout = d4rl_labels(next_xy, goal, episode_step)
    inside = dist <= 0.5  # from the distances drawn, not from the positions
    np.testing.assert_array_equal(reward, inside.astype(np.float32))
    np.testing.assert_array_equal(terminal, inside)
    np.testing.assert_array_equal(np.flatnonzero(timeout), [999, 1999])
    assert reward.dtype == np.float32 and terminal[[5, 7, 12, 999]].all() and not terminal[[6, 1999]].any()
    assert terminal[999] and timeout[999]  # a timeout step inside the radius carries both flags


def test_labels_setting_is_checked_and_chosen_by_the_level():
    assert antmaze_forge_config(NAME).labels == "d4rl" and antmaze_forge_config(NAME).episode_steps == 1000
    assert AntMazeForgeConfig(name=NAME) == antmaze_forge_config(NAME)
    for name in ("antmaze-umaze", "antmaze-umaze-diverse"):
        cfg = antmaze_forge_config(name)
        assert (cfg.labels, cfg.episode_steps) == ("ours", 700)
    assert antmaze_forge_config(NAME, {"episode_steps": 50}).episode_steps == 50
    with pytest.raises(ConfigError, match="labels"):
        collect_antmaze(None, 10, 0, False, labels="d4rl-v0")


# ----- the collection -------------------------------------------------------------------------
def test_episodes_run_1000_steps_and_go_on_after_the_goal(d4rlstyle):
    arrays, stats = d4rlstyle
    np.testing.assert_array_equal(np.flatnonzero(arrays["timeouts"]), [999, 1999])  # the tail: 500 steps
    terminal = arrays["terminals"]
    assert terminal.sum() > stats["episodes_reaching_goal"] >= 1  # the ant stays near the goal
    # every step but an episode's last is followed by its own next state: no episode ends at the goal
    within = np.setdiff1d(np.arange(SIZE - 1), [999, 1999])
    np.testing.assert_array_equal(arrays["next_observations"][within], arrays["observations"][within + 1])
    assert (np.flatnonzero(terminal) != 999).any() and stats["episodes"] == 2
    # labels from the stored positions, away from the circle's float32 rounding
    dist = np.linalg.norm(arrays["next_observations"][:, :2].astype(np.float64) - arrays["infos/goal"], axis=1)
    clear = np.abs(dist - 0.5) > 1e-4
    np.testing.assert_array_equal(terminal[clear], dist[clear] <= 0.5)
    np.testing.assert_array_equal(arrays["rewards"], terminal.astype(np.float32))
    counts = label_counts(arrays, stats)
    assert counts["goal_steps"] == counts["terminal_steps"] == int(terminal.sum())
    assert counts["timeout_steps"] == 2 and counts["share_within_radius"] == pytest.approx(terminal.sum() / SIZE)


def test_same_controller_start_goal_and_seed_as_antmaze_umaze(actor, d4rlstyle):
    ours, _ = _collect(actor, "antmaze-umaze", 1000)
    lengths, terminated, _ = split_points(ours["terminals"], ours["timeouts"])
    k = int(lengths[0])
    assert terminated[0]  # the first umaze episode reaches its goal at its k-th step ...
    arrays, _ = d4rlstyle  # ... the d4rl-style one takes the same steps to the same goal, and goes on
    for key in ("observations", "actions", "next_observations", "infos/qpos"):
        np.testing.assert_array_equal(arrays[key][:k], ours[key][:k])
    np.testing.assert_array_equal(arrays["infos/commanded_goal"][:k], ours["infos/goal"][:k])
    assert not arrays["timeouts"][:k].any()


def test_labels_refer_to_one_goal_for_the_whole_file(d4rlstyle):
    arrays, _ = d4rlstyle
    label_goal = arrays["infos/goal"][0]
    assert (arrays["infos/goal"] == label_goal).all()  # one point, while the episodes' own goals vary
    assert len(np.unique(arrays["infos/commanded_goal"], axis=0)) > 1


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_other_levels_collect_what_they_did(actor, name):
    arrays, _ = _collect(actor, name)
    assert _digest(arrays) == RECORDED[name]


# ----- what the readers make of it ------------------------------------------------------------
def test_readers_split_at_every_terminal_and_keep_every_goal_transition(d4rlstyle):
    from baselines.iql import transitions
    from benchmarks.corl.adapters import d4rl_arrays, qlearning_dataset
    from odt.buffer import TrajectoryBuffer

    arrays, _ = d4rlstyle
    lengths, terminated, tail = split_points(arrays["terminals"], arrays["timeouts"])
    n = int(lengths.sum())
    traj = Trajectories(arrays["observations"][:n], arrays["actions"][:n], arrays["rewards"][:n], lengths, terminated)
    goal_steps = int(arrays["terminals"][:n].sum())
    last_flag = np.flatnonzero(arrays["terminals"] | arrays["timeouts"])[-1]
    assert tail == SIZE - 1 - last_flag and terminated.sum() == goal_steps and (lengths == 1).any()
    assert np.array_equal(traj.returns()[terminated], np.ones(goal_steps))  # each ends at a goal step
    # transition readers: every goal step is a done transition; the timeout steps are dropped
    iql = transitions(traj)
    assert iql["dones"].sum() == goal_steps and len(iql["rewards"]) == n - (~terminated).sum()
    corl = qlearning_dataset(d4rl_arrays(traj))  # D4RL's rule: the file's last step has no successor
    kept = goal_steps - int(traj.terminated[-1])
    assert corl["terminals"].sum() == kept and corl["rewards"].sum() == kept
    # trajectory readers: 1-step trajectories sample and fill ODT's buffer without trouble
    buffer = TrajectoryBuffer.from_offline(traj, capacity=len(lengths))
    idx, batch = buffer.sample(np.random.default_rng(0), 256, 20)
    assert len(buffer) == len(lengths) and np.isfinite(batch["rtg"]).all()
    kept = buffer.data  # ordered by return
    one = kept.starts[(kept.lengths == 1) & kept.terminated]
    assert len(one) == ((lengths == 1) & terminated).sum() > 0 and (buffer.rtg[one] == 1.0).all()  # a goal step
    assert (idx.mask.sum(axis=1) >= 1).all() and idx.timesteps.max() < 1000


# ----- registry and make ----------------------------------------------------------------------
def test_registry_entry_is_antmaze_umazes_environment_and_scores(tmp_path):
    from benchmarks.methods import method_config

    spec, base = get_spec(NAME), get_spec("antmaze-umaze")
    assert (spec.domain, spec.family, spec.max_episode_steps, spec.env_id) == ("antmaze", "antmaze", 700, base.env_id)
    assert (spec.ref_min_score, spec.ref_max_score, spec.d4rl_name) == (base.ref_min_score, base.ref_max_score,
                                                                        "antmaze-umaze-v2")
    assert hyperparameter_dataset(NAME) == "antmaze-umaze" == hyperparameter_dataset("antmaze-umaze")
    assert method_config("iql", NAME, "cpu") == method_config("iql", "antmaze-umaze", "cpu")
    # a real D4RL antmaze-umaze-v2 file is D4RL's data, not this variant: never loaded for its name
    (tmp_path / "d4rl").mkdir()
    (tmp_path / "d4rl" / "antmaze-umaze-v2.hdf5").write_bytes(b"")
    with pytest.raises(DatasetUnavailable, match=f"make {NAME}") as err:
        load_dataset(NAME, data_dir=tmp_path)
    assert "bring D4RL" not in str(err.value)


def test_make_writes_the_variant_and_its_card(tmp_path):
    cfg = antmaze_forge_config(NAME, {"size": 1500, "controller_eval_episodes": 1})
    card = make_antmaze(get_spec(NAME), cfg, root=tmp_path, progress=False)
    data = load_dataset(NAME, data_dir=tmp_path)
    n = card["label_counts"]
    assert (n["steps"], n["timeout_steps"], n["episodes"]) == (1500, 1, 1)
    assert data.trajectories.terminated.sum() == card["terminated_trajectories"] == n["terminal_steps"]
    assert card["antmaze_config"]["labels"] == "d4rl" and card["d4rl_equivalent"] == "antmaze-umaze-v2"
    assert any("0.2" in note and "1001st" in note for note in card["data_notes"])
    text = (tmp_path / f"{NAME}.card.md").read_text()
    assert f"Labels: {n['goal_steps']} goal transitions" in text and "at least once):" in text
    assert "set on the 1000th step of every collection episode" in text  # the variant's conventions
    assert json.loads((tmp_path / f"{NAME}.card.json").read_text())["label_counts"] == n


@pytest.mark.parametrize("method", ["dt", "odt", "bc", "iql"])
def test_each_reader_trains_on_it(method, d4rlstyle):
    """A short offline phase (and ODT's online one, whose buffer starts from 1-step goal pieces)
    on the collected steps, split as a reader splits them: finite losses and scores."""
    from benchmarks.methods import build_agent, method_config

    arrays, _ = d4rlstyle
    lengths, terminated, _ = split_points(arrays["terminals"], arrays["timeouts"])
    n = int(lengths.sum())
    traj = Trajectories(arrays["observations"][:n], arrays["actions"][:n], arrays["rewards"][:n], lengths, terminated)
    spec = get_spec(NAME)
    short = {"eval_episodes": 1, "online_samples": 100} if method == "iql" else {"eval_episodes": 1}
    if method == "odt":
        short = {"eval_episodes": 1, "online.online_samples": 100}
    agent = build_agent(method, method_config(method, NAME, "smoke", 0, short), traj, spec.make_env, spec.score_fn,
                        progress=False)
    rows = []
    try:
        agent.pretrain(log=rows.append)
        if method == "odt":
            assert (agent.buffer.data.lengths == 1).sum() >= 5  # its top-10 by return: mostly 1-step pieces
        agent.finetune(log=rows.append)
    finally:
        agent.close()
    assert rows and all(np.isfinite(r["score_mean"]) for r in rows if "score_mean" in r)
