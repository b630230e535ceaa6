"""One contract for every registered method: build at the smoke preset on a tiny Hopper-v5
dataset, pretrain -> finetune -> evaluate, curve rows with the shared keys, and checkpoints
that restore the same counters and parameters and resume to the same result."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import make_hopper

from benchmarks.methods import EXTERNAL_METHODS, METHODS, UPDATE_TWINS, build_agent, method_config
from rlbase.config import ConfigError

SHARED_KEYS = {"phase", "updates", "online_samples", "return_mean", "return_std", "length_mean", "returns"}


def _assert_same(a, b, path="state", skip=("wall_time", "cpu_time")):
    """Recursive equality of two state dicts (tensors and arrays exactly)."""
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys differ"
        for k in a:
            if k in skip:
                continue
            _assert_same(a[k], b[k], f"{path}.{k}", skip)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{i}]", skip)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path}: tensors differ"
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _counters(agent) -> dict:
    return {k: v for k, v in vars(agent.counters).items() if k not in ("wall_time", "cpu_time")}


# an update-matched method runs its twin's online updates, which the runner reads from the twin's
# record; here a stand-in count (4 rounds of the smoke preset's 5 updates)
MATCHED_UPDATES = {"online.online_updates": 20}


def _budget_spent(cfg, counters: dict) -> bool:
    """The online phase spent its budget: the update budget where the config sets one, else the samples."""
    online = getattr(cfg, "online", cfg)
    if getattr(online, "online_updates", 0) > 0:
        return counters["updates"] - cfg.pretrain_updates == online.online_updates
    return counters["online_samples"] >= online.online_samples


# official-odt runs code from outside the repository and restarts rather than resumes: its own
# contract is checked with a stand-in source in tests/test_official_driver.py
@pytest.mark.parametrize("method", sorted(set(METHODS) - set(EXTERNAL_METHODS)))
def test_every_method_honours_the_agent_contract(method, hopper_random):
    cfg = method_config(method, "hopper-medium", "smoke", seed=3,
                        overrides=MATCHED_UPDATES if method in UPDATE_TWINS else None)
    score = lambda r: np.asarray(r) / 10.0  # noqa: E731  (a stand-in normaliser)
    agent = build_agent(method, cfg, hopper_random, make_hopper, score, progress=False)
    rows, saved = [], []
    try:
        agent.pretrain(log=rows.append, checkpoint=lambda: saved.append(copy.deepcopy(agent.state_dict())))
        agent.finetune(log=rows.append, checkpoint=lambda: saved.append(copy.deepcopy(agent.state_dict())))
        final = copy.deepcopy(agent.state_dict())
        final_counters = _counters(agent)
        evaluation = agent.evaluate(episodes=2)
    finally:
        agent.close()

    # curve rows: the shared keys, phases in order, counters never decreasing
    assert rows and all(SHARED_KEYS <= set(r) and {"score_mean", "score_std"} <= set(r) for r in rows)
    phases = [r["phase"] for r in rows]
    assert set(phases) <= {"pretrain", "online"} and phases == sorted(phases, key=["pretrain", "online"].index)
    assert [r["updates"] for r in rows] == sorted(r["updates"] for r in rows)
    assert {"return_mean", "return_std", "length_mean", "returns", "score_mean"} <= set(evaluation)
    assert len(evaluation["returns"]) == 2
    assert evaluation["score_mean"] == pytest.approx(evaluation["return_mean"] / 10.0)
    assert final_counters["updates"] > 0
    assert agent.counters.wall_time > 0
    budget = getattr(cfg, "online", cfg).online_samples
    assert _budget_spent(cfg, final_counters)
    assert ("online" in phases) == (budget > 0)

    # round trip: same counters, parameters and optimiser states, and nothing left to do
    # (a replay buffer restored mid-episode may mark that episode as cut off, so buffers are
    # compared by the resume check below, whose checkpoints fall between episodes)
    clone = build_agent(method, cfg, hopper_random, make_hopper, score, progress=False)
    try:
        clone.load_state_dict(copy.deepcopy(final))
        assert _counters(clone) == final_counters
        _assert_same(clone.state_dict(), final, skip=("wall_time", "cpu_time", "buffer"))
        assert clone.pretrain() is None and clone.finetune() is None
        assert _counters(clone) == final_counters
    finally:
        clone.close()

    # resume from the first checkpoint (mid-pretraining) and from the last one taken online:
    # both reach exactly the final state of the uninterrupted run
    assert saved, "no checkpoint was taken"
    starts = [saved[0]] + [s for s in saved if s["counters"]["online_samples"] > 0][:1]
    for start in starts:
        resumed = build_agent(method, cfg, hopper_random, make_hopper, score, progress=False)
        try:
            resumed.load_state_dict(copy.deepcopy(start))
            resumed.pretrain()
            resumed.finetune()
            _assert_same(resumed.state_dict(), final)
        finally:
            resumed.close()


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown method 'ppo'.*iql.*odt"):
        method_config("ppo", "hopper-medium", "smoke")
    with pytest.raises(ConfigError, match="known: .*dt"):
        build_agent("ppo", None, None, make_hopper)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_bad_dataset_preset_and_override_name_the_field(method):
    with pytest.raises(ConfigError, match="unknown dataset 'nonsense-v0'"):
        method_config(method, "nonsense-v0", "smoke")
    with pytest.raises(ConfigError, match="unknown preset 'gpu'"):
        method_config(method, "hopper-medium", "gpu")
    with pytest.raises(ConfigError, match="no_such_field"):
        method_config(method, "hopper-medium", "smoke", overrides={"no_such_field": 1})
