"""rlbase/trajectories.py, the one dataset type: what it stores, the views it gives, and the
errors that name the bad field, each on data small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.trajectories import DatasetError, Trajectories


def _episode(obs, act, rew, terminated):
    return dict(observations=np.asarray(obs, dtype=np.float64), actions=np.asarray(act, dtype=np.float64),
                rewards=np.asarray(rew, dtype=np.float64), terminated=terminated)


def _two_episodes() -> Trajectories:
    return Trajectories.from_episodes([
        _episode([[0, 1], [2, 3], [4, 5]], [[0.5], [-0.5], [0.25]], [1, 2, 3], True),
        _episode([[6, 7], [8, 9]], [[1.0], [-1.0]], [10, 20], False),
    ])


def test_episodes_are_stored_flat_in_float32_with_one_length_and_flag_each():
    data = _two_episodes()
    assert data.observations.dtype == np.float32 and data.actions.dtype == np.float32
    assert data.rewards.dtype == np.float32
    assert data.lengths.dtype == np.int64 and data.terminated.dtype == np.bool_
    np.testing.assert_array_equal(data.lengths, [3, 2])
    np.testing.assert_array_equal(data.starts, [0, 3])
    np.testing.assert_array_equal(data.terminated, [True, False])
    np.testing.assert_array_equal(data.rewards, [1, 2, 3, 10, 20])
    assert (len(data), data.num_steps, data.obs_dim, data.act_dim) == (2, 5, 2, 1)


def test_episode_gives_back_what_was_stored_with_its_terminal_flag():
    data = _two_episodes()
    first, second = data.episode(0), data.episode(1)
    np.testing.assert_array_equal(first["observations"], [[0, 1], [2, 3], [4, 5]])
    np.testing.assert_array_equal(second["actions"], [[1.0], [-1.0]])
    np.testing.assert_array_equal(second["rewards"], [10, 20])
    assert first["terminated"] is True and second["terminated"] is False


def test_returns_are_summed_in_float64():
    # in float32, 2^24 + 1 + 1 rounds back to 2^24; the return is 2^24 + 2
    data = Trajectories.from_episodes([_episode([[0]] * 3, [[0]] * 3, [2.0**24, 1.0, 1.0], False),
                                       _episode([[0]], [[0]], [5.0], True)])
    returns = data.returns()
    assert returns.dtype == np.float64
    assert returns.tolist() == [2.0**24 + 2, 5.0]


def test_select_keeps_the_given_trajectories_in_the_given_order():
    data = _two_episodes()
    picked = data.select([1, 0, 1])
    np.testing.assert_array_equal(picked.lengths, [2, 3, 2])
    np.testing.assert_array_equal(picked.returns(), [30.0, 6.0, 30.0])
    np.testing.assert_array_equal(picked.terminated, [False, True, False])


def test_state_statistics_are_float32_with_eps_added_to_the_std():
    data = Trajectories.from_episodes([_episode([[1.0, 5.0], [3.0, 5.0]], [[0], [0]], [0, 0], False)])
    mean, std = data.state_statistics(eps=1e-3)
    assert mean.dtype == np.float32 and std.dtype == np.float32
    np.testing.assert_allclose(mean, [2.0, 5.0])
    np.testing.assert_allclose(std, [1.0 + 1e-3, 1e-3], rtol=1e-6)  # a constant dimension keeps std = eps > 0


def _raw(**fields) -> dict:
    base = dict(observations=np.zeros((3, 2), np.float32), actions=np.zeros((3, 1), np.float32),
                rewards=np.zeros(3, np.float32), lengths=np.array([2, 1]), terminated=np.array([False, True]))
    return {**base, **fields}


@pytest.mark.parametrize("fields, message", [
    (dict(lengths=np.array([], np.int64), terminated=np.array([], bool)), "no trajectories: the dataset is empty"),
    (dict(rewards=np.zeros((3, 1), np.float32)), "rewards: shape (3, 1), expected (3,)"),
    (dict(lengths=np.array([3, 0])), "lengths: every trajectory needs at least one step"),
    (dict(lengths=np.array([1, 1])), "lengths sum to 2, but there are 3 steps"),
    (dict(terminated=np.array([False])), "terminated: one flag per trajectory expected"),
    (dict(observations=np.array([[0, 0], [0, 0], [0, np.nan]], np.float32)), "observations: NaN or inf at step 2"),
    (dict(actions=np.array([[0], [np.inf], [0]], np.float32)), "actions: NaN or inf at step 1"),
])
def test_malformed_data_is_refused_with_the_field_named(fields, message):
    with pytest.raises(DatasetError) as err:
        Trajectories(**_raw(**fields))
    assert str(err.value) == message


def test_no_episodes_is_refused():
    with pytest.raises(DatasetError) as err:
        Trajectories.from_episodes([])
    assert str(err.value) == "no trajectories: the dataset is empty"
