"""Stand-in for the official main.py: the same entry points and order of calls, a linear model."""
import pickle

import d4rl  # noqa: F401  (the official script imports it for its dataset registrations)
import gym
import numpy as np
import torch
import utils
from data import create_dataloader
from evaluation import create_vec_eval_episodes_fn, vec_evaluate_episode_rtg
from stable_baselines3.common.vec_env import SubprocVecEnv
from torch.utils.tensorboard import SummaryWriter  # noqa: F401


class Logger:
    def log_metrics(self, outputs, iter_num, total_transitions_sampled, writer):
        pass


class Experiment:
    def __init__(self, variant):
        env = gym.make(variant["env"])
        self.state_dim, self.act_dim = env.observation_space.shape[0], env.action_space.shape[0]
        env.close()
        with open(f"./data/{variant['env']}.pkl", "rb") as f:
            self.offline_trajs = pickle.load(f)
        states = np.concatenate([t["observations"] for t in self.offline_trajs])
        self.state_mean, self.state_std = states.mean(0), states.std(0) + 1e-6
        self.model = torch.nn.Linear(self.state_dim, self.act_dim)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=variant["learning_rate"])
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda steps: min((steps + 1) / variant["warmup_steps"], 1))
        self.variant, self.device, self.reward_scale = variant, variant.get("device", "cpu"), 0.001
        self.pretrain_iter = self.online_iter = self.total_transitions_sampled = 0
        self.logger = Logger()
        self.rates = []  # the learning rate of each update, for the tests

    def _augment_trajectories(self, online_envs, target_explore, n, randomized=False):
        returns, lengths, _ = vec_evaluate_episode_rtg(
            online_envs, self.state_dim, self.act_dim, self.model,
            target_return=[target_explore * self.reward_scale] * online_envs.num_envs,
            state_mean=self.state_mean, state_std=self.state_std, use_mean=False)
        self.total_transitions_sampled += np.sum(lengths)
        return {"aug_traj/return": np.mean(returns), "aug_traj/length": np.mean(lengths)}

    def _train(self, loader):
        losses = []
        for states, actions in loader:
            loss = ((self.model(states) - actions) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.rates.append(self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            self.scheduler.step()
            losses.append(loss.item())
        return {"training/train_loss_mean": np.mean(losses), "training/nll": losses[-1],
                "training/entropy": 0.0, "training/temp_value": 0.1}

    def _loader(self, num_iters):
        v = self.variant
        return create_dataloader(self.offline_trajs, num_iters, v["batch_size"], v["K"], self.state_dim,
                                 self.act_dim, self.state_mean, self.state_std, self.reward_scale, [-1, 1])

    def evaluate(self, eval_fns):
        outputs = {}
        for fn in eval_fns:
            outputs.update(fn(self.model))
        return outputs, outputs["evaluation/return_mean_gm"]

    def _eval_fns(self, eval_envs):
        return [create_vec_eval_episodes_fn(eval_envs, self.variant["eval_rtg"], self.state_dim, self.act_dim,
                                            self.state_mean, self.state_std, self.device, use_mean=True)]

    def pretrain(self, eval_envs, loss_fn):
        while self.pretrain_iter < self.variant["max_pretrain_iters"]:
            outputs = self._train(self._loader(self.variant["num_updates_per_pretrain_iter"]))
            outputs.update(self.evaluate(self._eval_fns(eval_envs))[0])
            self.logger.log_metrics(outputs, iter_num=self.pretrain_iter,
                                    total_transitions_sampled=self.total_transitions_sampled, writer=None)
            self.pretrain_iter += 1

    def online_tuning(self, online_envs, eval_envs, loss_fn):
        while self.online_iter < self.variant["max_online_iters"]:
            outputs = self._augment_trajectories(online_envs, self.variant["online_rtg"], n=1)
            is_last_iter = self.online_iter == self.variant["max_online_iters"] - 1
            evaluation = (self.online_iter + 1) % self.variant["eval_interval"] == 0 or is_last_iter
            outputs.update(self._train(self._loader(self.variant["num_updates_per_online_iter"])))
            if evaluation:
                outputs.update(self.evaluate(self._eval_fns(eval_envs))[0])
            self.logger.log_metrics(outputs, iter_num=self.pretrain_iter + self.online_iter,
                                    total_transitions_sampled=self.total_transitions_sampled, writer=None)
            self.online_iter += 1

    def __call__(self):
        utils.set_seed_everywhere(args.seed)  # noqa: F821  (the script's global, as in the official main.py)

        def builder(seed):
            def make():
                env = gym.make(self.variant["env"])
                env.seed(seed)
                return env
            return make

        eval_envs = SubprocVecEnv([builder(i) for i in range(self.variant["num_eval_episodes"])])
        if self.variant["max_pretrain_iters"]:
            self.pretrain(eval_envs, None)
        if self.variant["max_online_iters"]:
            online_envs = SubprocVecEnv([builder(100)])
            self.online_tuning(online_envs, eval_envs, None)
            online_envs.close()
        eval_envs.close()
