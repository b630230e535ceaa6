"""python -m benchmarks.datasets make <name> | list

    make hopper-medium                  train SAC to the medium level (resumable), collect 1M steps
    make hopper-medium-replay           SAC's replay buffer up to the medium level
    make hopper-random --size 100000    uniformly random actions
    make antmaze-umaze                  train the ant walker (resumable), then 1M steps of walker + waypoint
                                        planner (antmaze-umaze-diverse: random starts and commanded goals;
                                        --sac-max-steps / --target-score: the walker's budget / success %)
    list                                what is on disk, with provenance

The data directory is $ODT_DATA_DIR (default ~/.cache/odt-bench/datasets) or --data-dir.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.datasets.registry import DATASETS, data_dir


def _make(args: argparse.Namespace) -> int:
    from benchmarks.datasets.forge import forge_config, make

    overrides = {"seed": args.seed}
    for key in ("size", "target_fraction", "target_score", "sac_max_steps", "eval_every", "eval_episodes",
                "checkpoint_every"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    if args.train:
        overrides["packaged_policy"] = False
    if args.sac:
        overrides["sac_overrides"] = dict(kv.split("=", 1) for kv in args.sac)
    fc = forge_config(args.name, overrides)
    card = make(args.name, fc, root=args.data_dir, force=args.force, progress=not args.quiet)
    norm = card.get("normalized_returns") or {}
    print(f"{args.name}: {card.get('steps_in_file')} steps, {card.get('trajectories')} trajectories, "
          f"normalized return min/mean/max "
          f"{norm.get('min', float('nan')):.1f} / {norm.get('mean', float('nan')):.1f} / {norm.get('max', float('nan')):.1f}"
          f" -> {data_dir(args.data_dir) / (args.name + '.hdf5')}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from benchmarks.datasets.loading import card_path, d4rl_candidates, generated_path, smoke_path

    root = data_dir(args.data_dir)
    print(f"data directory: {root}")
    rows = []
    for name, spec in DATASETS.items():
        found = []
        for path in d4rl_candidates(spec, args.data_dir):
            if path.exists():
                found.append(("d4rl", path, "real D4RL file"))
        gen = generated_path(name, args.data_dir)
        if gen.exists():
            desc = ""
            if card_path(name, args.data_dir).exists():
                card = json.loads(card_path(name, args.data_dir).read_text())
                n = card.get("normalized_returns") or {}
                desc = (f"{card.get('steps_in_file')} steps, {card.get('trajectories')} traj, normalized mean "
                        f"{n.get('mean', float('nan')):.1f}, seed {card.get('seed')}, {card.get('env_id')}, "
                        f"made {card.get('created')}")
            found.append(("generated", gen, desc))
        if smoke_path(name, args.data_dir).exists():
            found.append(("generated-smoke", smoke_path(name, args.data_dir), "random-policy smoke data (tests only)"))
        for source, path, desc in found:
            rows.append((name, source, str(path), desc))
        if not found and args.all:
            rows.append((name, "-", "not on disk", f"make it: python -m benchmarks.datasets make {name}"))
    if not rows:
        print("nothing on disk yet; make a dataset with: python -m benchmarks.datasets make hopper-medium")
    for name, source, path, desc in rows:
        print(f"{name:28s} {source:16s} {path}\n{'':45s}{desc}" if desc else f"{name:28s} {source:16s} {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.datasets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    mk = sub.add_parser("make", help="make a D4RL-style dataset with the forge")
    mk.add_argument("name", choices=list(DATASETS), metavar="name", help=f"one of: {', '.join(DATASETS)}")
    mk.add_argument("--size", type=int, help="transitions for medium/random (default 1000000)")
    mk.add_argument("--seed", type=int, default=0)
    mk.add_argument("--data-dir", help="default: $ODT_DATA_DIR or ~/.cache/odt-bench/datasets")
    mk.add_argument("--target-fraction", type=float, help="medium level as a fraction of expert (default 1/3)")
    mk.add_argument("--target-score", type=float, help="medium level as an explicit normalized score")
    mk.add_argument("--sac-max-steps", type=int, help="give up if SAC has not reached the level (default 1e6)")
    mk.add_argument("--eval-every", type=int, help="SAC steps between evaluations (default 5000)")
    mk.add_argument("--eval-episodes", type=int, help="episodes per evaluation (default 10)")
    mk.add_argument("--checkpoint-every", type=int, help="SAC steps between checkpoints (default 20000)")
    mk.add_argument("--sac", action="append", metavar="KEY=VALUE", help="SAC config override, e.g. hidden_dim=64")
    mk.add_argument("--train", action="store_true",
                    help="train SAC even if a packaged medium policy exists (benchmarks/datasets/policies/)")
    mk.add_argument("--force", action="store_true", help="rebuild even if the dataset exists")
    mk.add_argument("--quiet", action="store_true", help="no progress bars")
    mk.set_defaults(func=_make)
    ls = sub.add_parser("list", help="show datasets on disk and their provenance")
    ls.add_argument("--data-dir")
    ls.add_argument("--all", action="store_true", help="also list registered datasets that are not on disk")
    ls.set_defaults(func=_list)
    args = parser.parse_args(argv)
    from benchmarks.datasets.forge import ForgeError
    from benchmarks.datasets.registry import DatasetUnavailable
    from odt.config import ConfigError
    from odt.trajectories import DatasetError

    try:
        return args.func(args)
    except (ForgeError, DatasetUnavailable, DatasetError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
