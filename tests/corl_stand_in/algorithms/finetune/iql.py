"""Stand-in for CORL's finetuning IQL script (tests only): its entry points, a linear BC actor
trained offline, then one update per online step."""
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
    device: str = "cpu"
    env: str = "corridor-short-v2"
    seed: int = 0
    eval_seed: int = 0
    eval_freq: int = 10
    n_episodes: int = 2
    offline_iterations: int = 100
    online_iterations: int = 100
    checkpoints_path: str | None = None
    load_model: str = ""
    actor_dropout: float = 0.0
    buffer_size: int = 1000
    batch_size: int = 8
    discount: float = 0.99
    tau: float = 0.005
    beta: float = 3.0
    iql_tau: float = 0.7
    iql_deterministic: bool = False
    normalize: bool = True
    normalize_reward: bool = False
    vf_lr: float = 3e-4
    qf_lr: float = 3e-4
    actor_lr: float = 3e-4
    project: str = "CORL"
    group: str = "IQL-D4RL"
    name: str = "IQL"


@torch.no_grad()
def eval_actor(env, actor, device: str, n_episodes: int, seed: int):
    env.seed(seed)
    returns, successes = [], []
    for _ in range(n_episodes):
        state, done, total, reached = env.reset(), False, 0.0, False
        while not done:
            state, reward, done, _ = env.step(actor.act(state, device))
            total += reward
            reached = reached or reward > 0
        returns.append(total)
        successes.append(float(reached))
    return np.asarray(returns), np.mean(successes)


class Actor(torch.nn.Module):
    def __init__(self, state_dim: int, action_dim: int):
        super().__init__()
        self.net = torch.nn.Linear(state_dim, action_dim)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(state))

    @torch.no_grad()
    def act(self, state: np.ndarray, device: str) -> np.ndarray:
        return self(torch.tensor(state.reshape(1, -1), dtype=torch.float32, device=device)).numpy().flatten()


@pyrallis.wrap()
def train(config: TrainConfig):
    env, eval_env = gym.make(config.env), gym.make(config.env)
    max_steps = env._max_episode_steps
    dataset = d4rl.qlearning_dataset(env)
    mean, std = (dataset["observations"].mean(0), dataset["observations"].std(0) + 1e-3) if config.normalize else (0, 1)
    env = gym.wrappers.TransformObservation(env, lambda s: (s - mean) / std)
    eval_env = gym.wrappers.TransformObservation(eval_env, lambda s: (s - mean) / std)
    env.seed(config.seed)
    np.random.seed(config.seed)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    obs = torch.tensor((dataset["observations"] - mean) / std, dtype=torch.float32)
    act = torch.tensor(dataset["actions"], dtype=torch.float32)
    actor = Actor(obs.shape[1], act.shape[1])
    optimizer = torch.optim.SGD(actor.parameters(), lr=config.actor_lr)
    state, episode_return, episode_step = env.reset(), 0.0, 0
    for t in range(config.offline_iterations + config.online_iterations):
        online = {}
        if t >= config.offline_iterations:
            action = actor.act(state, config.device) + np.random.normal(0, 0.1, act.shape[1])
            state, reward, done, _ = env.step(np.clip(action, -1, 1))
            episode_return, episode_step = episode_return + reward, episode_step + 1
            if done:
                online["train/episode_return"] = episode_return
                online["train/real_done"] = float(episode_step < max_steps)
                state, episode_return, episode_step = env.reset(), 0.0, 0
        idx = np.random.randint(0, len(obs), size=config.batch_size)
        loss = ((actor(obs[idx]) - act[idx]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        wandb.log({"value_loss": 0.0, "q_loss": 0.0, "actor_loss": loss.item(), **online}, step=t + 1)
        if (t + 1) % config.eval_freq == 0:
            scores, success = eval_actor(eval_env, actor, config.device, config.n_episodes, config.seed)
            wandb.log({"eval/success_rate": success}, step=t + 1)
