"""Stand-in evaluation: each env of a vector env runs one episode of the linear policy."""
import numpy as np
import torch


def create_vec_eval_episodes_fn(vec_env, eval_rtg, state_dim, act_dim, state_mean, state_std, device,
                                use_mean=False, reward_scale=0.001):
    def eval_episodes_fn(model):
        returns, lengths, _ = vec_evaluate_episode_rtg(
            vec_env, state_dim, act_dim, model, target_return=[eval_rtg * reward_scale] * vec_env.num_envs,
            reward_scale=reward_scale, state_mean=state_mean, state_std=state_std, device=device,
            use_mean=use_mean)
        return {"evaluation/return_mean_gm": np.mean(returns), "evaluation/length_mean_gm": np.mean(lengths)}

    return eval_episodes_fn


@torch.no_grad()
def vec_evaluate_episode_rtg(vec_env, state_dim, act_dim, model, target_return, max_ep_len=1000,
                             reward_scale=0.001, state_mean=0.0, state_std=1.0, device="cpu",
                             mode="normal", use_mean=False):
    n = vec_env.num_envs
    state = vec_env.reset()
    returns, lengths = np.zeros(n), np.full(n, np.inf)
    running = np.ones(n, dtype=bool)
    trajectories = [{"observations": [], "actions": [], "rewards": []} for _ in range(n)]
    for t in range(max_ep_len):
        obs = torch.as_tensor((state - state_mean) / state_std, dtype=torch.float32)
        action = model(obs).clamp(-1, 1)
        if not use_mean:
            action = (action + 0.1 * torch.randn_like(action)).clamp(-1, 1)
        action = action.numpy()
        next_state, reward, done, _ = vec_env.step(action)
        for i in np.flatnonzero(running):
            for key, value in (("observations", state[i]), ("actions", action[i]), ("rewards", reward[i])):
                trajectories[i][key].append(value)
        returns[running] += reward[running]
        ended = running & (done | (t == max_ep_len - 1))
        lengths[ended] = t + 1
        running &= ~ended
        state = next_state
        if not running.any():
            break
    for traj in trajectories:
        for key in list(traj):
            traj[key] = np.asarray(traj[key], dtype=np.float32)
        traj["terminals"] = np.zeros(len(traj["rewards"]), dtype=bool)
    return returns, lengths, trajectories
