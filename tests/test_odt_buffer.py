"""The trajectory replay buffer: top-N initialisation, FIFO, relabeling, checkpoint state."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import toy_trajectories

from odt.buffer import TrajectoryBuffer
from odt.trajectories import DatasetError, Trajectories


def _episode(n, reward, obs_dim=3, act_dim=2):
    return dict(observations=np.full((n, obs_dim), reward, np.float32), actions=np.zeros((n, act_dim), np.float32),
                rewards=np.full(n, reward, np.float32), terminated=True)


def test_top_n_initialisation_keeps_the_best_returns():
    data = toy_trajectories([5, 7, 3, 9, 4, 6])
    buf = TrajectoryBuffer.from_offline(data, capacity=3, init="top")
    best = np.sort(data.returns())[-3:]
    np.testing.assert_allclose(np.sort(buf.returns()), best, rtol=1e-6)
    assert list(buf.returns()) == sorted(buf.returns())  # worst of the top-N is oldest


def test_random_initialisation_draws_n_distinct_trajectories():
    data = toy_trajectories(list(range(1, 21)))
    buf = TrajectoryBuffer.from_offline(data, 5, "random", np.random.default_rng(0))
    assert len(buf) == 5 and len(set(buf.data.lengths)) == 5


def test_fifo_evicts_oldest_whole_trajectories():
    buf = TrajectoryBuffer(3, Trajectories.from_episodes([_episode(2, 1.0), _episode(3, 2.0), _episode(4, 3.0)]))
    buf.add(_episode(5, 4.0))
    np.testing.assert_array_equal(buf.data.lengths, [3, 4, 5])
    buf.add(_episode(1, 5.0))
    np.testing.assert_array_equal(buf.data.lengths, [4, 5, 1])
    np.testing.assert_allclose(buf.returns(), [12.0, 20.0, 5.0])
    assert buf.data.observations.shape[0] == buf.data.num_steps == 10
    assert len(buf.rtg) == 10 and (buf.data.observations[:4] == 3.0).all()


def test_relabeled_rtg_equals_suffix_sums_of_received_rewards():
    buf = TrajectoryBuffer(2, Trajectories.from_episodes([_episode(2, 1.0)]))
    ep = dict(_episode(4, 0.0), rewards=np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    buf.add(ep, relabel=True)
    np.testing.assert_allclose(buf.rtg[-4:], [10, 9, 7, 4])
    buf.add(ep, relabel=False, initial_rtg=100.0)
    np.testing.assert_allclose(buf.rtg[-4:], [100, 99, 97, 94])
    with pytest.raises(ValueError, match="initial RTG"):
        buf.add(ep, relabel=False)


def test_sampled_batches_carry_the_buffer_rtg():
    buf = TrajectoryBuffer(4, toy_trajectories([6, 9, 2]))
    idx, batch = buf.sample(np.random.default_rng(0), 64, 4)
    np.testing.assert_array_equal(batch["rtg"], buf.rtg[idx.flat])
    assert batch["observations"].shape == (64, 4, 3) and batch["actions"].shape == (64, 4, 2)


def test_state_dict_round_trip():
    buf = TrajectoryBuffer(4, toy_trajectories([6, 9, 2]))
    buf.add(_episode(3, 1.0), relabel=False, initial_rtg=5.0)
    clone = TrajectoryBuffer.from_state_dict(buf.state_dict())
    a = buf.sample(np.random.default_rng(7), 32, 5)[1]
    b = clone.sample(np.random.default_rng(7), 32, 5)[1]
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_dataset_validation_names_the_problem():
    good = _episode(3, 1.0)
    with pytest.raises(DatasetError, match="empty"):
        Trajectories.from_episodes([])
    bad = dict(good, rewards=np.array([1.0, np.nan, 1.0], np.float32))
    with pytest.raises(DatasetError, match="rewards: NaN or inf at step 1"):
        Trajectories.from_episodes([bad])
    with pytest.raises(DatasetError, match="actions"):
        Trajectories.from_episodes([dict(good, actions=np.zeros((2, 2), np.float32))])
