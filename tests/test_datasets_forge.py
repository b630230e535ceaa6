"""The forge end to end at a tiny size: SAC to a (low) level, medium + medium-replay files,
cards, the loader round trip, determinism, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from benchmarks.datasets import get_spec, load_dataset
from benchmarks.datasets.__main__ import main as cli
from benchmarks.datasets.d4rl_io import read_d4rl, split_points
from benchmarks.datasets.forge import (
    ForgeConfig,
    NumpyActor,
    _write_dataset,
    collect,
    load_policy,
    make,
    policy_path,
)
from benchmarks.datasets.loading import card_path, generated_path

TINY_SAC = {"hidden_dim": 16, "batch_size": 16, "warmup_steps": 100}


def _tiny(name: str, **kw) -> ForgeConfig:
    base = dict(name=name, seed=0, size=800, target_score=-100.0, sac_max_steps=2_000, eval_every=200,
                eval_episodes=2, checkpoint_every=200, sac_overrides=dict(TINY_SAC), packaged_policy=False)
    return ForgeConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def forged(tmp_path_factory):
    root = tmp_path_factory.mktemp("forge")
    card = make("hopper-medium", _tiny("hopper-medium"), root=root, progress=False)
    return root, card


def test_medium_and_replay_files_and_cards(forged):
    root, card = forged
    assert generated_path("hopper-medium", root).exists() and generated_path("hopper-medium-replay", root).exists()
    assert policy_path(get_spec("hopper-medium"), 0, root).exists()
    assert card["steps_in_file"] == 800 and card["level"] == "medium"
    assert card["env_id"] == "Hopper-v5" and card["seed"] == 0 and "gymnasium" in card and "mujoco" in card
    assert card["steps_in_trajectories"] + card["unfinished_tail_steps"] == 800
    for key in ("min", "mean", "max"):
        assert np.isfinite(card["normalized_returns"][key])
    assert json.loads(card_path("hopper-medium", root).read_text())["sha256"] == card["sha256"]
    replay = json.loads(card_path("hopper-medium-replay", root).read_text())
    assert replay["steps_in_file"] == replay["sac_steps"] == 200  # reached at the first evaluation
    assert card_path("hopper-medium", root).with_suffix("").with_suffix(".card.md").exists()
    # where SAC trained and under which math settings: the replay file is only as portable as SAC
    assert {"cpu_model", "machine", "MKL_CBWR", "aten_cpu_capability", "torch"} <= replay["sac_math"].keys()
    assert card["sac_math"] == replay["sac_math"]


def test_loader_reads_back_what_the_forge_wrote(forged):
    root, _ = forged
    d = load_dataset("hopper-medium", data_dir=root)
    assert d.provenance["source"] == "generated" and d.provenance["card"]["level"] == "medium"
    actor, _ = load_policy(get_spec("hopper-medium"), 0, root, packaged=False)
    arrays = collect(get_spec("hopper-medium"), 800, 0, actor, progress=False)  # same seed: same data
    n = d.trajectories.num_steps
    np.testing.assert_array_equal(d.trajectories.observations, arrays["observations"][:n])
    np.testing.assert_array_equal(d.trajectories.actions, arrays["actions"][:n])
    np.testing.assert_array_equal(d.trajectories.rewards, arrays["rewards"][:n])
    np.testing.assert_array_equal(d.next_observations, arrays["next_observations"][:n])
    lengths, terminated, tail = split_points(arrays["terminals"], arrays["timeouts"])
    np.testing.assert_array_equal(d.trajectories.lengths, lengths)
    assert d.provenance["dropped_tail_steps"] == tail


def test_replay_spans_the_sac_run(forged):
    root, _ = forged
    d = load_dataset("hopper-medium-replay", data_dir=root)
    # next observations continue the trajectory inside each episode
    ends = d.trajectories.starts + d.trajectories.lengths - 1
    inner = np.setdiff1d(np.arange(d.trajectories.num_steps), ends)
    np.testing.assert_array_equal(d.next_observations[inner], d.trajectories.observations[inner + 1])


def test_make_is_idempotent(forged, capsys):
    root, card = forged
    again = make("hopper-medium", _tiny("hopper-medium"), root=root, progress=False)
    assert again["sha256"] == card["sha256"]
    assert "exists" in capsys.readouterr().err


def test_collection_is_deterministic_and_seeded():
    spec = get_spec("hopper-random")
    a, b = collect(spec, 300, 1, None, progress=False), collect(spec, 300, 1, None, progress=False)
    c = collect(spec, 300, 2, None, progress=False)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["actions"], c["actions"])


def test_numpy_actor_matches_torch_actor(forged):
    root, _ = forged
    actor, _ = load_policy(get_spec("hopper-medium"), 0, root, packaged=False)
    obs = np.random.default_rng(0).normal(size=(5, 11)).astype(np.float32)

    class NoNoise:
        def standard_normal(self, shape):
            return np.zeros(shape)

    expected = actor.mean_action(torch.as_tensor(obs)).detach().numpy()
    np.testing.assert_allclose(NumpyActor(actor).sample(obs, NoNoise()), expected, atol=1e-5)


def test_written_file_equals_arrays(tmp_path):
    spec = get_spec("hopper-random")
    arrays = collect(spec, 400, 0, None, progress=False)
    _write_dataset(spec, arrays, tmp_path, _tiny("hopper-random"), extra={"level": "random"})
    back = read_d4rl(generated_path("hopper-random", tmp_path))
    n = back.trajectories.num_steps
    assert n + back.dropped_tail_steps == 400
    np.testing.assert_array_equal(back.trajectories.observations, arrays["observations"][:n])
    assert back.metadata["card"]["level"] == "random"


def test_cli_make_random_and_list(tmp_path, capsys):
    assert cli(["make", "hopper-random", "--size", "500", "--data-dir", str(tmp_path), "--quiet"]) == 0
    assert "hopper-random: 500 steps" in capsys.readouterr().out
    assert cli(["list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hopper-random" in out and "generated" in out and "500 steps" in out


def test_cli_rejects_unknown_names(capsys):
    with pytest.raises(SystemExit):
        cli(["make", "hopper-mediun"])
    assert "hopper-medium" in capsys.readouterr().err


def test_expert_level_is_not_made_yet(tmp_path):
    with pytest.raises(ValueError, match="expert"):
        make("hopper-expert", _tiny("hopper-expert"), root=tmp_path, progress=False)


def test_unreachable_level_is_a_clear_error(tmp_path, capsys):
    rc = cli(["make", "hopper-medium-replay", "--data-dir", str(tmp_path), "--target-score", "1000",
              "--sac-max-steps", "400", "--eval-every", "200", "--eval-episodes", "1", "--quiet",
              "--sac", "hidden_dim=16", "--sac", "batch_size=16", "--sac", "warmup_steps=100"])
    assert rc == 1  # the forge failed (as a failed run does), not a usage error
    assert "did not reach the medium level (normalized score 1000.0)" in capsys.readouterr().err
    assert (tmp_path / "forge" / "hopper-seed0" / "sac").is_dir()  # checkpoints kept for a resume


def test_packaged_hopper_policy_is_a_medium_policy(tmp_path):
    """The committed behaviour policy rebuilds hopper-medium without SAC training."""
    spec = get_spec("hopper-medium")
    actor, record = load_policy(spec, 0, tmp_path)  # nothing in tmp_path: the packaged file is used
    assert record["path"].endswith("policies/hopper-medium-seed0.pt")
    assert 25 < record["evaluation"]["score_mean"] < 50  # a third of expert, give or take
    arrays = collect(spec, 1000, 0, actor, progress=False)
    lengths, _, _ = split_points(arrays["terminals"], arrays["timeouts"])
    assert len(lengths) >= 1 and lengths[0] > 100  # it hops for a while, unlike a random policy (~20 steps)
    assert arrays["rewards"][:lengths[0]].sum() > 300


def test_a_medium_replay_snapshot_in_the_forge_directory_does_not_replace_the_committed_policy(tmp_path):
    """make <family>-medium-replay leaves its own SAC snapshot at policy_path; a later
    make <family>-medium must still collect with the committed policy (the data of the committed
    runs), and use the local snapshot only when asked to (--train: packaged=False)."""
    spec = get_spec("hopper-medium")
    _, committed = load_policy(spec, 0, tmp_path)
    local = policy_path(spec, 0, tmp_path)
    local.parent.mkdir(parents=True)
    snapshot = torch.load(committed["path"], map_location="cpu", weights_only=False)
    snapshot["actor"] = {k: torch.zeros_like(v) for k, v in snapshot["actor"].items()}
    torch.save(snapshot, local)

    _, record = load_policy(spec, 0, tmp_path)
    assert record["path"] == committed["path"]
    _, record = load_policy(spec, 0, tmp_path, packaged=False)
    assert record["path"] == str(local)
    assert all(not v.any() for v in record["actor"].values())
