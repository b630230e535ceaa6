"""Stand-in for CORL's offline IQL script (tests only): its entry points, a linear BC actor."""
import random
from dataclasses import dataclass

import d4rl
import gym
import numpy as np
import pyrallis
import torch
import wandb


@dataclass
class TrainConfig:
    project: str = "CORL"
    group: str = "IQL-D4RL"
    name: str = "IQL"
    env: str = "corridor-short-v2"
    discount: float = 0.99
    tau: float = 0.005
    beta: float = 3.0
    iql_tau: float = 0.7
    iql_deterministic: bool = False
    max_timesteps: int = 100
    buffer_size: int = 1000
    batch_size: int = 8
    normalize: bool = True
    normalize_reward: bool = False
    vf_lr: float = 3e-4
    qf_lr: float = 3e-4
    actor_lr: float = 3e-4
    actor_dropout: float | None = None
    eval_freq: int = 10
    n_episodes: int = 2
    checkpoints_path: str | None = None
    load_model: str = ""
    seed: int = 0
    device: str = "cpu"


class Actor(torch.nn.Module):
    def __init__(self, state_dim: int, action_dim: int):
        super().__init__()
        self.net = torch.nn.Linear(state_dim, action_dim)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(state))

    @torch.no_grad()
    def act(self, state: np.ndarray, device: str) -> np.ndarray:
        return self(torch.tensor(state.reshape(1, -1), dtype=torch.float32, device=device)).numpy().flatten()


@torch.no_grad()
def eval_actor(env, actor, device: str, n_episodes: int, seed: int) -> np.ndarray:
    env.seed(seed)
    returns = []
    for _ in range(n_episodes):
        state, done, total = env.reset(), False, 0.0
        while not done:
            state, reward, done, _ = env.step(actor.act(state, device))
            total += reward
        returns.append(total)
    return np.asarray(returns)


def prepare(config: TrainConfig):
    env = gym.make(config.env)
    dataset = d4rl.qlearning_dataset(env)
    mean, std = (dataset["observations"].mean(0), dataset["observations"].std(0) + 1e-3) if config.normalize else (0, 1)
    env = gym.wrappers.TransformObservation(env, lambda s: (s - mean) / std)
    env.seed(config.seed)
    env.action_space.seed(config.seed)
    np.random.seed(config.seed)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    obs = torch.tensor((dataset["observations"] - mean) / std, dtype=torch.float32)
    act = torch.tensor(dataset["actions"], dtype=torch.float32)
    actor = Actor(obs.shape[1], act.shape[1])
    return env, obs, act, actor, torch.optim.SGD(actor.parameters(), lr=config.actor_lr)


def update(actor, optimizer, obs, act, batch_size: int) -> dict:
    idx = np.random.randint(0, len(obs), size=batch_size)
    loss = ((actor(obs[idx]) - act[idx]) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"value_loss": 0.0, "q_loss": 0.0, "actor_loss": loss.item()}


@pyrallis.wrap()
def train(config: TrainConfig):
    env, obs, act, actor, optimizer = prepare(config)
    wandb.init(config=vars(config), project=config.project)
    for t in range(config.max_timesteps):
        wandb.log(update(actor, optimizer, obs, act, config.batch_size), step=t + 1)
        if (t + 1) % config.eval_freq == 0:
            scores = eval_actor(env, actor, config.device, config.n_episodes, config.seed)
            print(f"score {env.get_normalized_score(scores.mean()) * 100.0:.1f}")
