"""The trajectory replay buffer: top-N initialisation, FIFO, relabeling, checkpoint state."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import toy_trajectories

from odt.buffer import TrajectoryBuffer
from rlbase.trajectories import DatasetError, Trajectories


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


# ----- found by mutation testing (tests/MUTATION.md) ------------------------------------------
def _unit_episodes(returns):
    """One-step trajectories whose observation is their index in the dataset."""
    return Trajectories.from_episodes([dict(observations=np.full((1, 3), i, np.float32),
                                            actions=np.zeros((1, 2), np.float32),
                                            rewards=np.array([r], np.float32), terminated=True)
                                       for i, r in enumerate(returns)])


def test_capacity_must_be_at_least_one_trajectory():
    data = toy_trajectories([3, 4])
    assert TrajectoryBuffer(1, data).capacity == 1  # one is a valid capacity
    assert len(TrajectoryBuffer.from_offline(data, capacity=1)) == 1
    with pytest.raises(ValueError, match="^capacity=0 must be >= 1$"):
        TrajectoryBuffer(0, data)


def test_default_initialisation_is_the_papers_top_n():
    data = toy_trajectories([5, 7, 3, 9, 4, 6])
    default = TrajectoryBuffer.from_offline(data, capacity=2)
    np.testing.assert_array_equal(default.returns(), TrajectoryBuffer.from_offline(data, 2, "top").returns())


def test_top_n_breaks_ties_by_position_so_reruns_agree():
    """Among trajectories with equal returns at the cut-off, the later ones in the dataset are
    kept (a fixed rule; an unstable sort keeps an arbitrary subset). Reference: sort by
    (return, index) and keep the last n, in that order."""
    returns = np.random.default_rng(7).integers(0, 3, size=3000).astype(float)
    buf = TrajectoryBuffer.from_offline(_unit_episodes(returns), capacity=1500)
    expected = sorted(range(len(returns)), key=lambda i: (returns[i], i))[-1500:]
    np.testing.assert_array_equal(buf.data.observations[:, 0].astype(int), expected)


def test_random_initialisation_never_repeats_a_trajectory_and_needs_an_rng():
    data = _unit_episodes(np.arange(20.0))
    for seed in range(5):
        buf = TrajectoryBuffer.from_offline(data, 18, "random", np.random.default_rng(seed))
        assert len(set(buf.data.observations[:, 0].tolist())) == 18
    with pytest.raises(ValueError, match="^random buffer initialisation needs an rng$"):
        TrajectoryBuffer.from_offline(data, 5, "random")
    with pytest.raises(ValueError, match="^unknown buffer initialisation 'best'; known: top, random$"):
        TrajectoryBuffer.from_offline(data, 5, "best")


def test_given_rtg_is_stored_as_the_float32_the_model_reads():
    data = toy_trajectories([2, 3])
    buf = TrajectoryBuffer(2, data, rtg=np.arange(5, dtype=np.float64))
    assert buf.rtg.dtype == np.float32
    with pytest.raises(ValueError, match="^without relabeling the rollout's initial RTG is needed$"):
        buf.add(_episode(2, 1.0, obs_dim=3, act_dim=2), relabel=False)


def test_buffer_samples_trajectories_in_proportion_to_length_or_to_return():
    """Alg. 2 line 2 through the buffer: a 9-step and a 1-step trajectory are drawn 9:1 by
    length; by return (appendix F) in proportion to their returns (here 1:3)."""
    data = Trajectories.from_episodes([
        dict(observations=np.zeros((9, 3), np.float32), actions=np.zeros((9, 2), np.float32),
             rewards=np.full(9, 1 / 9, np.float32), terminated=True),
        dict(observations=np.ones((1, 3), np.float32), actions=np.zeros((1, 2), np.float32),
             rewards=np.array([3.0], np.float32), terminated=True)])
    buf = TrajectoryBuffer(2, data)
    np.testing.assert_allclose(buf.probabilities("length"), [0.9, 0.1])
    np.testing.assert_allclose(buf.probabilities("return"), [0.25, 0.75], rtol=1e-5)
    _, batch = buf.sample(np.random.default_rng(0), 4000, 1)
    assert abs((batch["observations"][:, 0, 0] == 0).mean() - 0.9) < 0.03  # uniform would give 0.5
    _, batch = buf.sample(np.random.default_rng(1), 4000, 1, strategy="return")
    assert abs((batch["observations"][:, 0, 0] == 1).mean() - 0.75) < 0.03
