"""Train ODT on one environment: offline pretraining, then online finetuning.

    python -m odt --env Hopper-v5 --dataset random --preset smoke
    python -m odt --dataset hopper-medium --preset cpu --checkpoint-dir runs/hm-0

Prints the evaluation return and lambda as it goes. With --checkpoint-dir the run saves
checkpoints there and resumes from the newest good one when started again. For whole
experiments (many seeds and methods, records, tables) use ``python -m benchmarks.run``.

Named datasets come from a loader, found through the ``odt_bench.dataset_loaders`` entry
point group (the harness registers ``benchmarks``) or passed to ``main``: odt imports no
harness.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from odt.config import PROTOCOLS, make_config
from odt.train import ODTTrainer, describe_row
from rlbase.checkpoint import CheckpointManager
from rlbase.config import ConfigError, parse_assignments, to_dict
from rlbase.envs import random_policy_episodes
from rlbase.presets import PRESETS
from rlbase.protocol import known_datasets
from rlbase.runtime import keep_freed_memory_in_heap
from rlbase.training import TrainingDiverged
from rlbase.trajectories import Trajectories

LOADER_GROUP = "odt_bench.dataset_loaders"
# name -> (trajectories, make_env, score_fn or None, the paper's table row its hyperparameters come from)
DatasetLoader = Callable[[str], tuple[Trajectories, Callable[[], gym.Env],
                                      Callable[[np.ndarray], np.ndarray] | None, str]]

EXIT_CODES = ("exit codes: 0 finished; 1 the run failed (e.g. diverged); 2 usage or configuration error "
              "(unknown name, out-of-range value, missing dataset); 130 interrupted (Ctrl-C)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m odt", description=__doc__, epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="random",
                   help="'random' (a random-policy dataset made on the fly, needs --env) or a dataset name "
                        "the installed loader knows (the harness's: benchmarks.datasets), e.g. hopper-medium "
                        "(default: random)")
    p.add_argument("--loader", default=None,
                   help=f"which installed dataset loader (entry point of {LOADER_GROUP}) reads --dataset; "
                        "needed only when several are installed")
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


def installed_loaders() -> dict[str, importlib.metadata.EntryPoint]:
    """The dataset loaders registered under ``LOADER_GROUP``, by entry point name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=LOADER_GROUP)}


def find_loader(dataset: str, name: str | None = None) -> DatasetLoader:
    """The installed loader ``name`` (or the only one); a ConfigError naming ``dataset`` if none fits."""
    found = installed_loaders()
    if not found:
        raise ConfigError(f"--dataset {dataset!r}: no dataset loader is installed (entry point group "
                          f"{LOADER_GROUP!r}); install the harness with `pip install -e .`, or train on "
                          "--dataset random --env ENV_ID")
    if name is None and len(found) > 1:
        raise ConfigError(f"--dataset {dataset!r}: several dataset loaders are installed "
                          f"({', '.join(sorted(found))}); choose one with --loader")
    if name is not None and name not in found:
        raise ConfigError(f"--loader {name!r}: not installed; installed: {', '.join(sorted(found))}")
    return found[name if name is not None else next(iter(found))].load()


def _random_data(args: argparse.Namespace):
    """(trajectories, make_env, score_fn) of a random-policy dataset on ``--env``."""
    if not args.env:
        raise ConfigError("--dataset random needs --env (e.g. --env Hopper-v5)")
    make_env = _env_factory(args.env)
    data = Trajectories.from_episodes(random_policy_episodes(make_env, args.random_steps, args.seed))
    return data, make_env, None


def _config_and_data(args: argparse.Namespace, loader: DatasetLoader | None):
    """The run's config and (trajectories, make_env, score_fn). The config comes first where its
    row is known without the data (random data, a table's own dataset, --table-row), so bad values
    fail before any work; other names (``minari:<id>``) take the row their loader gives."""
    overrides = {"seed": args.seed, **parse_assignments(args.set)}
    own_row = "hopper-medium" if args.dataset == "random" else args.dataset if args.dataset in known_datasets() else None
    row = args.table_row or own_row
    cfg = make_config(row, args.protocol, args.preset, overrides) if row else None
    if args.dataset == "random":
        return cfg, _random_data(args)
    loader = loader or find_loader(args.dataset, args.loader)
    data, make_env, score_fn, dataset_row = loader(args.dataset)
    cfg = cfg or make_config(dataset_row, args.protocol, args.preset, overrides)
    return cfg, (data, make_env, score_fn)


def main(argv: list[str] | None = None, loader: DatasetLoader | None = None) -> int:
    """Run the CLI; ``loader`` reads named datasets (default: the installed one, see LOADER_GROUP)."""
    args = parse_args(argv)
    keep_freed_memory_in_heap()
    try:
        cfg, (data, make_env, score_fn) = _config_and_data(args, loader)
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
