"""python -m benchmarks.datasets make <name> | list | card <name>

    make hopper-medium                  train SAC to the medium level (resumable), collect 1M steps
    make hopper-medium-replay           SAC's replay buffer up to the medium level
    make hopper-random --size 100000    uniformly random actions
    make antmaze-umaze                  train the ant walker (resumable), then 1M steps of walker + waypoint
                                        planner (antmaze-umaze-diverse: random starts and commanded goals;
                                        --sac-max-steps / --target-score: the walker's budget / success %)
    list                                what is on disk, with provenance; each file is opened and checked
                                        (keys, shapes, finite values, fit to its environment) first;
                                        local Minari datasets ($MINARI_DATASETS_PATH) as minari:<id>
    card hopper-medium                  write the dataset's .card.md again from its .card.json (adds
                                        sections newer than the card, e.g. the comparison with D4RL's
                                        published statistics; AntMaze: the start-cell counts, read
                                        from the file if the card lacks them); the data is not changed

The data directory is $ODT_DATA_DIR (default ~/.cache/odt-bench/datasets) or --data-dir.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.datasets.registry import DATASETS, data_dir


def _make(args: argparse.Namespace) -> int:
    from benchmarks.datasets.forge import forge_config, make
    from rlbase.config import parse_assignments

    overrides = {"seed": args.seed}
    for key in ("size", "target_fraction", "target_score", "sac_max_steps", "eval_every", "eval_episodes",
                "checkpoint_every"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    if args.train:
        overrides["packaged_policy"] = False
    if args.sac:
        overrides["sac_overrides"] = parse_assignments(args.sac, "--sac")
    fc = forge_config(args.name, overrides)
    card = make(args.name, fc, root=args.data_dir, force=args.force, progress=not args.quiet)
    norm = card.get("normalized_returns") or {}
    print(f"{args.name}: {card.get('steps_in_file')} steps, {card.get('trajectories')} trajectories, "
          f"normalized return min/mean/max "
          f"{norm.get('min', float('nan')):.1f} / {norm.get('mean', float('nan')):.1f} / {norm.get('max', float('nan')):.1f}"
          f" -> {data_dir(args.data_dir) / (args.name + '.hdf5')}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from benchmarks.datasets.loading import d4rl_candidates, generated_path, smoke_path

    print(f"data directory: {data_dir(args.data_dir)}")
    rows = []
    for name, spec in DATASETS.items():
        found = [("d4rl", path, "real D4RL file") for path in d4rl_candidates(spec, args.data_dir) if path.exists()]
        gen = generated_path(name, args.data_dir)
        if gen.exists():
            found.append(("generated", gen, _card_summary(name, args.data_dir)))
        if smoke_path(name, args.data_dir).exists():
            found.append(("generated-smoke", smoke_path(name, args.data_dir), "random-policy smoke data (tests only)"))
        rows += [(name, source, str(path), _checked(spec, path, desc)) for source, path, desc in found]
        if not found and args.all:
            rows.append((name, "-", "not on disk", f"make it: python -m benchmarks.datasets make {name}"))
    rows += _minari_rows()
    if not rows:
        print("nothing on disk yet; make a dataset with: python -m benchmarks.datasets make hopper-medium")
    for name, source, path, desc in rows:
        print(f"{name:28s} {source:16s} {path}\n{'':45s}{desc}" if desc else f"{name:28s} {source:16s} {path}")
    return 0


def _card(args: argparse.Namespace) -> int:
    from benchmarks.datasets.forge_base import rewrite_card_markdown
    from rlbase.protocol import is_antmaze

    if is_antmaze(args.name):
        # imports torch and gymnasium-robotics: only for AntMaze's cards
        from benchmarks.datasets.antmaze_forge import add_start_cell_counts

        if add_start_cell_counts(args.name, args.data_dir):
            print(f"{args.name}: added the start-cell counts from the dataset file to its card")
    print(f"wrote {rewrite_card_markdown(args.name, args.data_dir)}")
    return 0


def _minari_rows() -> list[tuple[str, str, str, str]]:
    """The local Minari datasets (named minari:<id>), with where they came from and how they are scored."""
    from benchmarks.datasets.minari_io import local_minari_datasets

    return [(f"minari:{dataset_id}", "minari", str(path), desc) for dataset_id, path, desc in local_minari_datasets()]


def _checked(spec, path, desc: str) -> str:
    """The row's description if the file reads as a valid dataset of ``spec``, else why it does not."""
    from benchmarks.datasets.loading import validate_file

    problem = validate_file(spec, path)
    return desc if problem is None else f"INVALID: {problem}"


def _card_summary(name: str, root) -> str:
    from benchmarks.datasets.loading import card_path

    path = card_path(name, root)
    if not path.exists():
        return ""
    try:
        card = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable card {path}: {exc}"
    n = card.get("normalized_returns") or {}
    return (f"{card.get('steps_in_file')} steps, {card.get('trajectories')} traj, normalized mean "
            f"{n.get('mean', float('nan')):.1f}, seed {card.get('seed')}, {card.get('env_id')}, "
            f"made {card.get('created')}")


EXIT_CODES = ("exit codes: 0 done; 1 the forge could not make the dataset (e.g. SAC never reached the level); "
              "2 usage or configuration error (unknown name, out-of-range value); "
              "130 interrupted (Ctrl-C; make resumes from its checkpoints)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.datasets", description=__doc__, epilog=EXIT_CODES,
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
    cd = sub.add_parser("card", help="write a dataset's .card.md again from its .card.json (data not changed)")
    cd.add_argument("name", choices=list(DATASETS), metavar="name", help=f"one of: {', '.join(DATASETS)}")
    cd.add_argument("--data-dir")
    cd.set_defaults(func=_card)
    args = parser.parse_args(argv)
    from benchmarks.datasets.forge_base import ForgeError
    from benchmarks.datasets.registry import DatasetUnavailable
    from rlbase.config import ConfigError
    from rlbase.trajectories import DatasetError

    try:
        return args.func(args)
    except ForgeError as exc:  # e.g. SAC never reached the level
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (DatasetUnavailable, DatasetError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # the forge's ForgeStopped says how to resume
        print(str(exc) or "interrupted; run the same command again to resume from the forge's checkpoints",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    from benchmarks.datasets.portable_math import pin_portable_math

    # before anything computes, and only in a process of its own (never in a caller's): the
    # forge's SAC then gives the same bits on any AVX2 CPU (portable_math says why)
    pin_portable_math()
    sys.exit(main())
