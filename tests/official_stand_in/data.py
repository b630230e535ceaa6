"""Stand-in loader: ``num_iters`` batches of random states and actions (calls are recorded)."""
import numpy as np
import torch

CALLS = []  # (num_iters, num_workers) of each call, for the tests


def create_dataloader(trajectories, num_iters, batch_size, max_len, state_dim, act_dim, state_mean,
                      state_std, reward_scale, action_range, num_workers=24):
    CALLS.append((num_iters, num_workers))
    states = torch.as_tensor(np.random.standard_normal((num_iters, batch_size, state_dim)), dtype=torch.float32)
    actions = torch.as_tensor(np.random.uniform(-1, 1, (num_iters, batch_size, act_dim)), dtype=torch.float32)
    return list(zip(states, actions))
