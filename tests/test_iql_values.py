"""The pure pieces of studies/iql_values/analysis.py: steps to the next goal step within a
trajectory, the value of reaching it under IQL's AntMaze rewards (r - 1, terminal goal step), the
effective sample size of weights, and the fraction of steps along which V rises. Expectations are
written out by hand or summed term by term."""

from __future__ import annotations

import numpy as np
import pytest

from rlbase.trajectories import Trajectories
from studies.iql_values.analysis import (
    action_mse,
    effective_sample_size,
    ideal_value,
    steps_to_goal,
    value_rises,
)


def test_steps_to_goal_stays_inside_each_trajectory():
    # two trajectories: [. . G . G] and [. .] (no goal: inf), then [G]
    goal = np.array([0, 0, 1, 0, 1, 0, 0, 1], dtype=bool)
    k = steps_to_goal(goal, np.array([5, 2, 1]))
    assert k.tolist() == [2, 1, 0, 1, 0, np.inf, np.inf, 0]


def test_ideal_value_is_the_discounted_sum_of_minus_ones():
    discount = 0.99
    for k in (0, 1, 7, 300):
        by_hand = -sum(discount ** i for i in range(k))  # k rewards of -1, then the goal step's 0
        assert ideal_value(np.array([k]), discount)[0] == pytest.approx(by_hand)


def test_effective_sample_size():
    assert effective_sample_size(np.full(256, 3.0)) == pytest.approx(256)
    assert effective_sample_size(np.r_[100.0, np.zeros(255)]) == pytest.approx(1)
    assert effective_sample_size(np.array([1.0, 1.0, 2.0])) == pytest.approx(16 / 6)


def test_value_rises_skips_goal_steps_unreached_steps_and_trajectory_seams():
    lengths = np.array([3, 3])
    k = np.array([2, 1, 0, np.inf, np.inf, np.inf])
    v = np.array([-2.0, -1.0, 0.0, -5.0, -9.0, -1.0])
    # only the pairs (0, 1) and (1, 2) count: both rise
    assert value_rises(v, k, lengths) == 1.0
    v2 = np.array([-1.0, -2.0, 0.0, -5.0, -9.0, -1.0])
    assert value_rises(v2, k, lengths) == 0.5


def test_action_mse_is_per_dimension_over_all_states():
    obs = np.zeros((4, 3), dtype=np.float32)
    acts = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0], [0.0, 0.0]], dtype=np.float32)
    data = Trajectories(obs, acts, np.zeros(4, dtype=np.float32), np.array([4]), np.array([False]))
    assert action_mse(lambda o: np.zeros((len(o), 2)), data) == pytest.approx((1 + 4) / 8)
