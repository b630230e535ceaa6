"""What the ``official-odt`` driver maps that differs by dataset, side by side for our ODT and the
official run, and each dataset's values checked against the paper's appendix tables.

``python -m benchmarks.official.settings walker2d-medium hopper-medium [--preset cpu] [--out PATH]``

Three tables:

1. **settings**: for each dataset, our ``odt`` config (``odt.config.make_config``, protocol
   ``online``) against what the official ``main.py`` runs with: the ``variant`` the driver builds
   (``driver.official_variant``) and the constants of the official code the driver states
   (reward scale 0.001, 1000-step episodes, target entropy -|A|, lambda learning rate 1e-4, clip
   0.25). Where ``ODT_OFFICIAL_SRC`` names the official code and the dataset is on disk, the
   official column is read from an official ``Experiment`` built on the dataset instead (its
   reward scale, target entropy, state statistics, pretraining set, replay buffer, optimizers),
   and ours from an ``ODTTrainer``; rows marked ``(data)`` need the dataset.
2. **paper**: each dataset's finetuning values in the paper (Table C.3, ``tbl:odt_common_online``;
   Table C.4, ``tbl:odt_hp_online``; the appendix's text for the dual variable's optimizer), the
   value the preset's rule gives from them (``rlbase.presets.scale_to_cpu``: the rules restated here,
   so a preset that drifts from its own rule shows), and the value both codes run.
3. **state statistics**: the normalisation mean and std of each dataset, ours and official.

The official code is CC-BY-NC: it is imported from ``ODT_OFFICIAL_SRC`` (as the driver does),
never copied here. Without it, the official column is the driver's mapping alone.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.official.driver import (
    OFFICIAL_GRAD_CLIP,
    OFFICIAL_LAMBDA_LR,
    OFFICIAL_LOG_STD,
    OFFICIAL_MAX_EP_LEN,
    locate_source,
    official_variant,
)
from odt.config import PAPER_ONLINE_TABLE, ODTConfig, make_config
from rlbase.config import ConfigError
from rlbase.presets import (
    CPU_BATCH,
    CPU_COUNT_DIVISOR,
    CPU_EMBED_DIM,
    CPU_LAYERS,
    CPU_MIN_LAMB_LR,
    CPU_PRETRAIN_DIVISOR,
    CPU_WARMUP,
)

# Table C.3 (tbl:odt_common_online), the common finetuning values, and the appendix's text (Adam
# on log lambda at 1e-4, target entropy -dim(A)); the online budget is Table 1's "0.2m" column.
PAPER_COMMON = {"n_layers": 4, "n_heads": 4, "context_len": 20, "dropout": 0.1, "batch_size": 256,
                "updates_per_round": 300, "grad_clip": 0.25, "warmup_steps": 10_000, "lambda_lr": 1e-4,
                "online_samples": 200_000}
TABLE_C4 = "Table C.4 (tbl:odt_hp_online)"
TABLE_C3 = "Table C.3 (tbl:odt_common_online)"


# ----- one dataset's two columns ---------------------------------------------------------------

@dataclass
class Side:
    """One code's values for one dataset, by row key (``None``: not known without the data)."""

    values: dict[str, Any] = field(default_factory=dict)


def act_dim_of(dataset: str) -> int:
    """The action dimension of the dataset's environment (the registry's)."""
    from benchmarks.datasets.registry import get_spec

    env = get_spec(dataset).make_env()
    try:
        return int(env.action_space.shape[0])
    finally:
        env.close()


def ours_from_config(cfg: ODTConfig, act_dim: int) -> dict[str, Any]:
    """Our run's values that the config alone decides."""
    m, o, on = cfg.model, cfg.optim, cfg.online
    return {
        "g_eval": cfg.g_eval, "g_online": on.g_online, "reward_scale": 1.0 / cfg.rtg_scale,
        "pretrain_updates": cfg.pretrain_updates, "pretrain_eval_every": cfg.eval_every_updates,
        "lr": o.lr, "warmup": o.warmup_steps, "online_lr": o.lr if on.lr is None else on.lr,
        "weight_decay": o.weight_decay, "max_ep_len": m.max_ep_len, "context_len": m.context_len,
        "eval_context_len": m.eval_context_len, "positional": m.positional_embedding,
        "buffer_size": on.buffer_size, "updates_per_round": on.updates_per_round,
        "online_samples": on.online_samples, "eval_every_rounds": on.eval_every_rounds,
        "init_lambda": o.init_lambda,
        "target_entropy": -float(act_dim) if o.target_entropy is None else o.target_entropy,
        "lambda_lr": o.lambda_lr, "batch_size": o.batch_size, "grad_clip": o.grad_clip,
        "embed_dim": m.embed_dim, "n_layers": m.n_layers, "n_heads": m.n_heads, "dropout": m.dropout,
        "embed_dropout": m.dropout, "log_std_bounds": (m.log_std_min, m.log_std_max),
        "eval_episodes": cfg.eval_episodes,
    }


def official_from_variant(variant: dict[str, Any], dataset: str, act_dim: int) -> dict[str, Any]:
    """What the official run gets: the driver's variant and the official code's constants
    (``main.py``: reward scale, episode cap, target entropy, Adam on log lambda; ``trainer.py``:
    the clip; GPT-2's config: embedding dropout at its default 0.1, which main.py does not set)."""
    v = variant
    online_lr = v["learning_rate"] if v["driver_online_lr"] is None else v["driver_online_lr"]
    return {
        "g_eval": float(v["eval_rtg"]), "g_online": float(v["online_rtg"]),
        "reward_scale": 1.0 if "antmaze" in dataset else 0.001,
        "pretrain_updates": v["max_pretrain_iters"] * v["num_updates_per_pretrain_iter"],
        "pretrain_eval_every": v["num_updates_per_pretrain_iter"],
        "lr": v["learning_rate"], "warmup": v["warmup_steps"], "online_lr": online_lr,
        "weight_decay": v["weight_decay"], "max_ep_len": OFFICIAL_MAX_EP_LEN, "context_len": v["K"],
        "eval_context_len": v["eval_context_length"], "positional": bool(v["ordering"]),
        "buffer_size": v["replay_size"], "updates_per_round": v["num_updates_per_online_iter"],
        "online_samples": v["driver_online_samples"], "eval_every_rounds": v["eval_interval"],
        "init_lambda": v["init_temperature"], "target_entropy": -float(act_dim),
        "lambda_lr": OFFICIAL_LAMBDA_LR, "batch_size": v["batch_size"], "grad_clip": OFFICIAL_GRAD_CLIP,
        "embed_dim": v["embed_dim"], "n_layers": v["n_layer"], "n_heads": v["n_head"], "dropout": v["dropout"],
        "embed_dropout": 0.1, "log_std_bounds": OFFICIAL_LOG_STD, "eval_episodes": v["num_eval_episodes"],
    }


# ----- with the data (and the official code, where it is set up) ---------------------------------

@dataclass
class DataView:
    """The dataset-dependent quantities of one side."""

    state_mean: np.ndarray
    state_std: np.ndarray
    pretrain_trajectories: int
    pretrain_steps: int
    buffer_returns: np.ndarray  # the initial online buffer's trajectory returns, ascending
    buffer_lengths: np.ndarray
    pretrain_lengths: np.ndarray

    def rows(self, k: int) -> dict[str, Any]:
        from benchmarks.official.online_components import padding_share

        return {
            "pretrain_set": f"{self.pretrain_trajectories} traj., {self.pretrain_steps} steps",
            "buffer_init": (f"{len(self.buffer_returns)} traj., returns {self.buffer_returns.min():.0f}-"
                            f"{self.buffer_returns.max():.0f}, mean length {self.buffer_lengths.mean():.0f}"),
            "padding_pretrain": f"{padding_share(self.pretrain_lengths, k):.2%}",
            "padding_buffer": f"{padding_share(self.buffer_lengths, k):.2%}",
        }


def ours_from_data(cfg: ODTConfig, data) -> DataView:
    """Our run's data-dependent values: the trainer's statistics, pretraining on every
    trajectory, the initial online buffer (top-N by return)."""
    from odt.buffer import TrajectoryBuffer

    mean, std = data.state_statistics()
    buf = TrajectoryBuffer.from_offline(data, cfg.online.buffer_size, cfg.online.buffer_init)
    return DataView(state_mean=np.asarray(mean, np.float64), state_std=np.asarray(std, np.float64),
                    pretrain_trajectories=len(data), pretrain_steps=int(data.lengths.sum()),
                    buffer_returns=np.sort(buf.data.returns()), buffer_lengths=buf.data.lengths[
                        np.argsort(buf.data.returns(), kind="stable")],
                    pretrain_lengths=np.asarray(data.lengths))


@contextlib.contextmanager
def official_experiment(source: Path, cfg: ODTConfig, dataset: str, data, make_env: Callable) -> Iterator[Any]:
    """An official ``Experiment`` built, as the driver builds it, on ``data`` and the dataset's
    environment (``components.official_session``)."""
    from benchmarks.official import components as C

    variant = {k: v for k, v in official_variant(cfg, dataset).items() if not k.startswith("driver_")}
    with C.official_session(source, data, dataset, make_env=make_env) as session:
        variant["save_dir"] = str(session.work / "exp")
        yield session.main.Experiment(variant)


def official_from_experiment(exp: Any) -> tuple[dict[str, Any], DataView]:
    """The official values read from a built Experiment: its constants and optimizers, and its
    data-dependent quantities."""
    lam_lr = exp.log_temperature_optimizer.param_groups[0]["lr"]
    warmup = round(1.0 / exp.scheduler.lr_lambdas[0](0))
    values = {"reward_scale": exp.reward_scale, "target_entropy": float(exp.target_entropy),
              "lambda_lr": lam_lr, "init_lambda": float(exp.model.temperature().detach()),
              "eval_context_len": exp.model.eval_context_length, "context_len": exp.model.max_length,
              "lr": exp.optimizer.defaults["lr"], "weight_decay": exp.optimizer.defaults["weight_decay"],
              "warmup": warmup, "buffer_size": exp.replay_buffer.capacity,
              "log_std_bounds": tuple(exp.model.predict_action.log_std_bounds),
              "embed_dropout": exp.model.transformer.drop.p}
    trajs = exp.offline_trajs
    buf = sorted(exp.replay_buffer.trajectories, key=lambda t: float(t["rewards"].sum()))
    view = DataView(state_mean=np.asarray(exp.state_mean, np.float64), state_std=np.asarray(exp.state_std, np.float64),
                    pretrain_trajectories=len(trajs), pretrain_steps=int(sum(len(t["rewards"]) for t in trajs)),
                    buffer_returns=np.array([float(t["rewards"].sum()) for t in buf]),
                    buffer_lengths=np.array([len(t["rewards"]) for t in buf]),
                    pretrain_lengths=np.array([len(t["rewards"]) for t in trajs]))
    return values, view


# ----- the table ---------------------------------------------------------------------------------

# key -> (what, ours: where, official: where)
ROWS: dict[str, tuple[str, str, str]] = {
    "g_eval": ("evaluation return target g_eval (raw)", "g_eval", "eval_rtg"),
    "g_online": ("exploration return target g_online (raw)", "online.g_online", "online_rtg"),
    "reward_scale": ("reward scale of the RTG tokens", "1 / rtg_scale", "main.py reward_scale"),
    "pretrain_updates": ("pretraining updates", "pretrain_updates", "max_pretrain_iters x num_updates_per_pretrain_iter"),
    "pretrain_eval_every": ("evaluation every (pretraining updates)", "eval_every_updates",
                            "num_updates_per_pretrain_iter (one per iteration)"),
    "lr": ("learning rate (pretraining)", "optim.lr", "learning_rate"),
    "warmup": ("linear warmup (updates)", "optim.warmup_steps", "warmup_steps"),
    "online_lr": ("learning rate (online)", "online.lr, else optim.lr", "driver switch to online.lr, else learning_rate"),
    "weight_decay": ("weight decay", "optim.weight_decay", "weight_decay"),
    "max_ep_len": ("max episode length", "model.max_ep_len", "MAX_EPISODE_LEN"),
    "context_len": ("training context K", "model.context_len", "K"),
    "eval_context_len": ("rollout context", "model.eval_context_len", "eval_context_length"),
    "positional": ("timestep embedding", "model.positional_embedding", "ordering"),
    "buffer_size": ("replay buffer (trajectories)", "online.buffer_size", "replay_size"),
    "updates_per_round": ("updates per online round", "online.updates_per_round", "num_updates_per_online_iter"),
    "online_samples": ("online budget (samples)", "online.online_samples", "driver stop at the budget"),
    "eval_every_rounds": ("evaluation every (online rounds)", "online.eval_every_rounds", "eval_interval"),
    "init_lambda": ("initial lambda", "optim.init_lambda", "init_temperature"),
    "target_entropy": ("target entropy", "optim.target_entropy (None: -dim A)", "main.py -act_dim"),
    "lambda_lr": ("lambda learning rate (Adam on log lambda)", "optim.lambda_lr", "main.py 1e-4"),
    "batch_size": ("batch size", "optim.batch_size", "batch_size"),
    "grad_clip": ("gradient clip", "optim.grad_clip", "trainer.py 0.25"),
    "embed_dim": ("embedding width", "model.embed_dim", "embed_dim"),
    "n_layers": ("layers", "model.n_layers", "n_layer"),
    "n_heads": ("heads", "model.n_heads", "n_head"),
    "dropout": ("dropout (attention, residual)", "model.dropout", "dropout"),
    "embed_dropout": ("dropout (embeddings)", "model.dropout", "GPT-2 embd_pdrop (default 0.1)"),
    "log_std_bounds": ("log std bounds", "model.log_std_min/max", "DiagGaussianActor"),
    "eval_episodes": ("evaluation episodes", "eval_episodes", "num_eval_episodes"),
    "state_stats": ("state mean / std (data): max relative difference", "Trajectories.state_statistics",
                    "Experiment._load_dataset"),
    "pretrain_set": ("pretraining set (data)", "every trajectory", "all but the lowest-return one"),
    "buffer_init": ("initial online buffer (data)", "top-N by return", "ReplayBuffer: top-N of the pretraining set"),
    "padding_pretrain": ("padded share of pretraining windows (data)", "odt.sampling", "data.py"),
    "padding_buffer": ("padded share of windows over the initial buffer (data)", "odt.sampling", "data.py"),
}
DATA_ROWS = ("state_stats", "pretrain_set", "buffer_init", "padding_pretrain", "padding_buffer")


@dataclass
class DatasetSettings:
    dataset: str
    ours: dict[str, Any]
    official: dict[str, Any]
    official_read: str  # "variant" (the driver's mapping and stated constants) or "Experiment"
    data_note: str = ""  # why the data rows are empty, or the file they were read from
    ours_stats: tuple[np.ndarray, np.ndarray] | None = None
    official_stats: tuple[np.ndarray, np.ndarray] | None = None


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(fmt(v) for v in value) + ")"
    return str(value)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-12)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def max_rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-12)))


def dataset_settings(dataset: str, preset: str, source: Path | None, with_data: bool = True) -> DatasetSettings:
    """Both columns of one dataset (see the module docstring)."""
    cfg = make_config(dataset, "online", preset, {"seed": 0, "device": "cpu"})
    act_dim = act_dim_of(dataset)
    ours = ours_from_config(cfg, act_dim)
    official = official_from_variant(official_variant(cfg, dataset, act_dim), dataset, act_dim)
    out = DatasetSettings(dataset, ours, official, official_read="variant")
    if not with_data:
        out.data_note = "data rows not read (--no-data)"
        return out
    from benchmarks.datasets.loading import load_dataset, make_command

    try:
        loaded = load_dataset(dataset)
    except Exception as exc:  # noqa: BLE001 - any reason the data is not usable is reported
        out.data_note = f"{dataset} is not on disk ({type(exc).__name__}): {make_command(dataset)}"
        return out
    data = loaded.trajectories
    out.data_note = f"content {loaded.provenance.get('content_sha256', '?')[:16]}"
    mine = ours_from_data(cfg, data)
    out.ours_stats = (mine.state_mean, mine.state_std)
    ours.update(mine.rows(cfg.model.context_len))
    if source is None:
        return out
    with official_experiment(source, cfg, dataset, data, loaded.make_env) as exp:
        read, theirs = official_from_experiment(exp)
    official.update(read)
    official.update(theirs.rows(cfg.model.context_len))
    out.official_read = "Experiment"
    out.official_stats = (theirs.state_mean, theirs.state_std)
    diff = max(max_rel(mine.state_mean, theirs.state_mean), max_rel(mine.state_std, theirs.state_std))
    ours["state_stats"] = official["state_stats"] = f"{diff:.1e}"
    return out


def agreement(key: str, all_settings: Sequence[DatasetSettings]) -> str:
    """'yes', '**no** (the datasets where the two codes differ)', or 'not read' (a data row
    without the official Experiment); the state statistics row holds their difference."""
    read = [s for s in all_settings if s.official.get(key) is not None and s.ours.get(key) is not None]
    if not read:
        return "not read"
    if key == "state_stats":
        return "yes (to float rounding)" if all(float(s.ours[key]) < 1e-6 for s in read) else "**no**"
    differ = [s.dataset for s in read if not same(s.ours[key], s.official[key])]
    return f"**no** ({', '.join(differ)})" if differ else "yes"


def settings_table(all_settings: Sequence[DatasetSettings]) -> list[str]:
    names = [s.dataset for s in all_settings]
    head = ["setting", "ours: field", "official: where"]
    for n in names:
        head += [f"{n} ours", f"{n} official"]
    head += ["codes agree", "differs by dataset"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, (what, ours_where, off_where) in ROWS.items():
        cells, per_dataset = [], []
        for s in all_settings:
            cells += [fmt(s.ours.get(key)), fmt(s.official.get(key))]
            per_dataset.append(fmt(s.ours.get(key)))
        known = [c for c in per_dataset if c != "-"]
        agree_cell = agreement(key, all_settings)
        lines.append("| " + " | ".join([what, f"`{ours_where}`", off_where, *cells, agree_cell,
                                        "yes" if len(set(known)) > 1 else ""]) + " |")
    return lines


# ----- the paper's values, and the preset's rule from them ----------------------------------------

def expected_from_paper(dataset: str, preset: str) -> dict[str, tuple[Any, Any, str]]:
    """key -> (the paper's value, the value the preset's rule gives, the rule in words)."""
    row = PAPER_ONLINE_TABLE[dataset]
    c = PAPER_COMMON
    cpu = preset in ("cpu", "cpu-200k")
    if preset not in ("paper", "cpu", "cpu-200k"):
        raise ConfigError(f"the paper check knows the presets paper, cpu and cpu-200k, not {preset!r}")
    lr_cpu = max(row["lr"], CPU_MIN_LAMB_LR)
    out: dict[str, tuple[Any, Any, str]] = {
        "pretrain_updates": (row["pretrain_updates"], row["pretrain_updates"] // CPU_PRETRAIN_DIVISOR if cpu
                             else row["pretrain_updates"], f"/{CPU_PRETRAIN_DIVISOR}" if cpu else "="),
        "buffer_size": (row["buffer_size"], max(1, row["buffer_size"] // CPU_COUNT_DIVISOR) if preset == "cpu"
                        else row["buffer_size"], f"/{CPU_COUNT_DIVISOR}" if preset == "cpu" else "="),
        "embed_dim": (row["embed_dim"], (CPU_EMBED_DIM if row["embed_dim"] <= 512 else 2 * CPU_EMBED_DIM) if cpu
                      else row["embed_dim"], f"{CPU_EMBED_DIM} (x2 above 512)" if cpu else "="),
        "lr": (row["lr"], lr_cpu if cpu else row["lr"], f"max(paper, {CPU_MIN_LAMB_LR:g})" if cpu else "="),
        "online_lr": (row["lr"], row["lr"], "= paper (the preset finetunes at the paper's rate)"),
        "weight_decay": (row["weight_decay"], row["weight_decay"], "="),
        "eval_context_len": (row["eval_context_len"], row["eval_context_len"], "="),
        "g_eval": (float(row["g_eval"]), float(row["g_eval"]), "="),
        "g_online": (float(row["g_online"]), float(row["g_online"]), "="),
        "positional": (row["positional_embedding"], row["positional_embedding"], "="),
        "n_layers": (c["n_layers"], CPU_LAYERS if cpu else c["n_layers"], f"{CPU_LAYERS}" if cpu else "="),
        "n_heads": (c["n_heads"], c["n_heads"], "="),
        "context_len": (c["context_len"], c["context_len"], "="),
        "dropout": (c["dropout"], c["dropout"], "="),
        "batch_size": (c["batch_size"], CPU_BATCH if cpu else c["batch_size"], f"{CPU_BATCH}" if cpu else "="),
        "updates_per_round": (c["updates_per_round"], c["updates_per_round"], "="),
        "grad_clip": (c["grad_clip"], c["grad_clip"], "="),
        "warmup": (c["warmup_steps"], CPU_WARMUP if cpu else c["warmup_steps"], f"{CPU_WARMUP}" if cpu else "="),
        "lambda_lr": (c["lambda_lr"], c["lambda_lr"], "="),
        "online_samples": (c["online_samples"], c["online_samples"] // CPU_COUNT_DIVISOR if preset == "cpu"
                           else c["online_samples"], f"/{CPU_COUNT_DIVISOR}" if preset == "cpu" else "="),
    }
    return out


def paper_table(all_settings: Sequence[DatasetSettings], preset: str) -> list[str]:
    lines = ["| dataset | setting | source | paper | preset rule | rule gives | ours | official | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    per_dataset = ("pretrain_updates", "buffer_size", "embed_dim", "lr", "online_lr", "weight_decay",
                   "eval_context_len", "g_eval", "g_online", "positional")
    for s in all_settings:
        for key, (paper, rule_gives, rule) in expected_from_paper(s.dataset, preset).items():
            if key == "online_samples":
                source = "Table 1 (0.2m)"
            elif key == "lambda_lr":
                source = "appendix C text"
            else:
                source = TABLE_C4 if key in per_dataset else TABLE_C3
            ours, official = s.ours.get(key), s.official.get(key)
            ok = same(ours, rule_gives) and same(official, rule_gives)
            lines.append(f"| {s.dataset} | {ROWS[key][0]} | {source} | {fmt(paper)} | {rule} | {fmt(rule_gives)} | "
                         f"{fmt(ours)} | {fmt(official)} | {'as the rule' if ok else '**DIFFERS**'} |")
    return lines


def stats_table(s: DatasetSettings) -> list[str]:
    if s.ours_stats is None:
        return [f"{s.dataset}: {s.data_note}"]
    lines = [f"{s.dataset} ({s.data_note}; official read from the {s.official_read})", "",
             "| dim | mean ours | mean official | std ours | std official |", "|---|---|---|---|---|"]
    theirs = s.official_stats or (None, None)
    for i in range(len(s.ours_stats[0])):
        om = "-" if theirs[0] is None else f"{theirs[0][i]:.6g}"
        osd = "-" if theirs[1] is None else f"{theirs[1][i]:.6g}"
        lines.append(f"| {i} | {s.ours_stats[0][i]:.6g} | {om} | {s.ours_stats[1][i]:.6g} | {osd} |")
    return lines


def render(all_settings: Sequence[DatasetSettings], preset: str) -> str:
    read = ", ".join(f"{s.dataset}: {s.official_read}" + (f" ({s.data_note})" if s.data_note else "")
                     for s in all_settings)
    lines = [f"# What the official-odt driver maps, by dataset (preset `{preset}`)", "",
             f"Official column read from: {read}.", "", "## Settings, ours and official", ""]
    lines += settings_table(all_settings)
    lines += ["", "## Each value against the paper", "",
              f"The paper's finetuning values ({TABLE_C3}, {TABLE_C4}), the `{preset}` preset's rule "
              "(`rlbase.presets.scale_to_cpu`), and what each code runs.", ""]
    lines += paper_table(all_settings, preset)
    lines += ["", "## State normalisation", ""]
    for s in all_settings:
        lines += stats_table(s) + [""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.official.settings",
                                     description="What the official-odt driver maps that differs by dataset, ours "
                                                 "and official side by side, checked against the paper's tables.")
    parser.add_argument("datasets", nargs="+", help="e.g. walker2d-medium hopper-medium")
    parser.add_argument("--preset", default="cpu", help="paper | cpu | cpu-200k (default %(default)s)")
    parser.add_argument("--no-data", action="store_true", help="the config rows only (no dataset is read)")
    parser.add_argument("--out", type=Path, help="also write the markdown to this file")
    args = parser.parse_args(argv)
    try:
        source = locate_source().path
    except ConfigError:
        source = None
    try:
        all_settings = [dataset_settings(d, args.preset, source, with_data=not args.no_data) for d in args.datasets]
        text = render(all_settings, args.preset)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
