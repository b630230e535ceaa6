"""Train ODT on one environment: offline pretraining, then online finetuning.

    python -m odt --env Hopper-v5 --dataset random --preset smoke
    python -m odt --dataset hopper-medium --preset cpu --checkpoint-dir runs/hm-0

Prints the evaluation return and lambda as it goes. With --checkpoint-dir the run saves
checkpoints there and resumes from the newest good one when started again. For whole
experiments (many seeds and methods, records, tables) use ``python -m benchmarks.run``.
"""

from __future__ import annotations

import argparse
import json
import sys

import gymnasium as gym

from odt.config import PROTOCOLS, make_config
from odt.train import ODTTrainer, describe_row
from rlbase.checkpoint import CheckpointManager
from rlbase.config import ConfigError, parse_assignments, to_dict
from rlbase.envs import random_policy_episodes
from rlbase.protocol import PRESETS, known_datasets
from rlbase.runtime import keep_freed_memory_in_heap
from rlbase.training import TrainingDiverged
from rlbase.trajectories import Trajectories

EXIT_CODES = ("exit codes: 0 finished; 1 the run failed (e.g. diverged); 2 usage or configuration error "
              "(unknown name, out-of-range value, missing dataset); 130 interrupted (Ctrl-C)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m odt", description=__doc__, epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="random",
                   help="'random' (a random-policy dataset made on the fly, needs --env) or a dataset name "
                        "known to benchmarks.datasets, e.g. hopper-medium (default: random)")
    p.add_argument("--env", help="gymnasium environment id, e.g. Hopper-v5 (needed with --dataset random)")
    p.add_argument("--random-steps", type=int, default=5000, help="size of the random dataset (default 5000)")
    p.add_argument("--table-row", default=None,
                   help=f"which row of the paper's tables sets the hyperparameters (default: the dataset's "
                        f"name, or hopper-medium for random data); one of {', '.join(known_datasets())}")
    p.add_argument("--preset", choices=PRESETS, default="smoke", help=f"{' | '.join(PRESETS)} (default smoke)")
    p.add_argument("--protocol", choices=PROTOCOLS, default="online",
                   help="online: short pretraining then finetuning (default); offline: pretraining only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field, e.g. --set model.embed_dim=64 --set online.online_samples=5000")
    p.add_argument("--checkpoint-dir", help="save checkpoints here and resume from the newest good one")
    p.add_argument("--quiet", action="store_true", help="no progress bars (evaluations are still printed, a line each)")
    return p.parse_args(argv)


def _env_factory(env_id: str):
    """``make_env`` for a gymnasium id, refusing an unregistered id up front (named, one line)."""
    try:
        gym.spec(env_id)
    except gym.error.Error as exc:
        raise ConfigError(f"--env {env_id!r}: {exc}") from None
    return lambda: gym.make(env_id)


def _table_row(args: argparse.Namespace) -> str:
    """The paper's hyperparameter row: --table-row, else the dataset's own (a Minari dataset uses
    the row of its environment family and level, e.g. minari:mujoco/hopper/medium-v0 -> hopper-medium)."""
    if args.table_row:
        return args.table_row
    if args.dataset == "random":
        return "hopper-medium"
    from benchmarks.datasets.minari_spec import hyperparameter_dataset
    return hyperparameter_dataset(args.dataset)


def _load_data(args: argparse.Namespace):
    """(trajectories, make_env, score_fn) for the requested dataset."""
    if args.dataset == "random":
        if not args.env:
            raise ConfigError("--dataset random needs --env (e.g. --env Hopper-v5)")
        make_env = _env_factory(args.env)
        data = Trajectories.from_episodes(random_policy_episodes(make_env, args.random_steps, args.seed))
        return data, make_env, None
    from benchmarks.datasets import load_dataset  # the dataset registry and loaders

    loaded = load_dataset(args.dataset)
    return loaded.trajectories, loaded.spec.make_env, loaded.score_fn


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    keep_freed_memory_in_heap()
    try:
        overrides = {"seed": args.seed, **parse_assignments(args.set)}
        cfg = make_config(_table_row(args), args.protocol, args.preset, overrides)  # bad values before any work
        data, make_env, score_fn = _load_data(args)
    except (ConfigError, ValueError, FileNotFoundError, gym.error.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted while making the dataset; nothing to resume", file=sys.stderr)
        return 130
    print(f"dataset: {len(data)} trajectories, {data.num_steps} steps, "
          f"return mean {data.returns().mean():.1f} max {data.returns().max():.1f}")
    print("config:", json.dumps(to_dict(cfg)))
    trainer = ODTTrainer(cfg, data, make_env, score_fn=score_fn, progress=not args.quiet)
    try:
        return _train(trainer, args)
    except TrainingDiverged as exc:
        print(f"error: the run diverged: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        resume = ("run the same command again to resume from the newest checkpoint" if args.checkpoint_dir
                  else "no --checkpoint-dir, so nothing to resume")
        print(f"interrupted at update {trainer.counters.updates}; {resume}", file=sys.stderr)
        return 130
    finally:
        trainer.close()


def _train(trainer: ODTTrainer, args: argparse.Namespace) -> int:
    save = None
    if args.checkpoint_dir:
        manager = CheckpointManager(args.checkpoint_dir)
        loaded = manager.load_latest()
        for skipped in loaded.skipped:
            print(f"skipped bad checkpoint {skipped}")
        if loaded.state is not None:
            trainer.load_state_dict(loaded.state)
            print(f"resumed from {loaded.path} at update {trainer.counters.updates}")
        save = lambda: manager.save(trainer.state_dict(), trainer.counters.updates)  # noqa: E731
    # with progress bars the trainer prints each evaluation above its bar; without, print them here
    report = (lambda row: print(describe_row(row), flush=True)) if args.quiet else None
    pretrained = trainer.pretrain(log=report, checkpoint=save)
    final = trainer.finetune(log=report, checkpoint=save) or pretrained
    if final is not None:
        print(f"final: return {final['return_mean']:.1f} +- {final['return_std']:.1f} "
              f"after {trainer.counters.updates} updates and {trainer.counters.online_samples} online samples, "
              f"lambda {trainer.lam:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
