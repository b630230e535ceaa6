"""Every method's preset scaling, in one place.

A preset turns a method's published (``paper``) configuration into one of another size: ``cpu``
keeps the paper's structure at a size a 2-core CPU finishes, ``cpu-200k`` is ``cpu`` with the
paper's online phase, ``smoke`` runs in seconds for tests (not a result), ``paper`` changes
nothing. Each method's config builder (``odt.config.make_config``, ``baselines.dt.dt_config``,
``baselines.iql.iql_config``, ``baselines.sac.sac_config``, ``baselines.bc.bc_config``) builds
the paper's config and calls its function here.

Why each value is what it is (runs, measurements, protocols): paper_tables/settings_history.md.
The functions work on the config dataclasses field by field (``dataclasses.replace``) and import
none of the methods, so this module sits below them; the one dataset fact they need (AntMaze or
not) is passed in. Callers check the preset's name first and raise their own config error.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

C = TypeVar("C")

PRESETS = ("paper", "cpu", "cpu-200k", "smoke")
CPU_PRESETS = ("cpu", "cpu-200k")  # the presets sized for a CPU: cpu-200k is cpu's offline phase

# The counts the cpu preset divides, for every method alike: ODT's offline-only updates
# (1e5 -> 2500), every online budget (200k samples -> 5k), ODT's replay buffer, SAC's warm-up.
CPU_COUNT_DIVISOR = 40

# ----- ODT (and DT, which is ODT's trainer with DT's settings) --------------------------------
# The ``cpu`` preset's scale (why each value: paper_tables/settings_history.md).
PAPER_EMBED_DIM = 512  # the paper's width (1024 for antmaze-umaze-diverse, which cpu doubles too)
CPU_EMBED_DIM = 64  # the paper's 512 (1024 for antmaze-umaze-diverse: 2x this)
CPU_LAYERS = 3  # the paper's 4
CPU_BATCH = 64  # the paper's 256
CPU_WARMUP = 1000  # the paper's 1e4
CPU_PRETRAIN_DIVISOR = 2  # pretraining before finetuning (5000 -> 2500, 10000 -> 5000)
CPU_MIN_LAMB_LR = 1e-3  # LAMB learning rates below this are raised to it (the paper's range: 1e-4 to 2e-3)
CPU_EVAL_EVERY_ROUNDS = 5  # online evaluations (the paper preset's 10)
CPU_EVAL_EVERY_UPDATES = 1000  # pretraining evaluations
CPU_CHECKPOINT_EVERY_UPDATES = 500

# AntMaze's offline budgets at the cpu presets (sized by PROTOCOL-antmaze-sizing-cpu.md).
CPU_ANTMAZE_UPDATES = 20_000  # DT, ODT's offline protocol, ODT's pretraining before finetuning
CPU_ANTMAZE_EVAL_EVERY = 2500  # as in the sizing runs: 8 evaluations of 100 700-step episodes, not 20
# the evaluations that do not end a phase run 20 episodes, those that do keep AntMaze's 100
CPU_ANTMAZE_EVAL_EPISODES_INTERIM = 20

# The ``cpu-200k`` preset's online phase (see scale_to_cpu_200k).
CPU_200K_EVAL_EVERY_ROUNDS = 10  # >= 20 evaluations however long the episodes (200k / 1000 steps = 200 rounds)
CPU_200K_CHECKPOINT_EVERY_UPDATES = 3000  # every 10 rounds: a checkpoint holds the 1000-trajectory buffer

# The cpu preset's AdamW rate for DT (chosen by PROTOCOL-dt-sizing-cpu.md).
CPU_DT_LR = 3e-4

# ----- IQL and BC (offline phase), IQL and SAC (online phase) --------------------------------
CPU_IQL_OFFLINE_UPDATES = 180_000  # PROTOCOL-table1-cpu.md's plateau rule on a tuning curve
CPU_IQL_ONLINE_WINDOW = 25_000  # 5k online samples end at 20% of it, as 200k of 1M in the paper
CPU_OFFLINE_EVAL_EVERY_UPDATES = 10_000  # IQL's and BC's offline evaluations at the cpu presets
CPU_OFFLINE_CHECKPOINT_EVERY_UPDATES = 5000  # IQL's at the cpu presets
CPU_ONLINE_EVAL_EVERY_SAMPLES = 1000  # IQL's and SAC's online evaluations at the cpu preset
CPU_SAC_CHECKPOINT_EVERY_SAMPLES = 2000

# ----- smoke: seconds per run, for tests and CI ------------------------------------------------
SMOKE_WIDTH = 32  # hidden units of the baselines' networks, ODT's embedding
SMOKE_BATCH = 32  # the baselines' batch
SMOKE_UPDATES = 40  # offline updates (ODT: at most this much pretraining)
SMOKE_SAMPLES = 300  # online samples (ODT: at most this many)
SMOKE_EVAL_EPISODES = 2
SMOKE_EVAL_EVERY_UPDATES = 20
SMOKE_CHECKPOINT_EVERY_UPDATES = 20
SMOKE_EVAL_EVERY_SAMPLES = 150  # IQL's and SAC's online evaluations


def _replace(cfg: C, **changes: Any) -> C:
    return dataclasses.replace(cfg, **changes)


def _validated(cfg: C) -> C:
    validate = getattr(cfg, "validate", None)
    return validate() if validate is not None else cfg


# ============================================================================ ODT
def scale_to_cpu(cfg: C) -> C:
    """The ``cpu`` preset: the paper's structure at a size one CPU core runs in about 15 min.

    The model 512 x 4 -> 64 x 3 (heads kept), batch 256 -> 64, warmup 1e4 -> 1000; offline-only
    updates, the online budget and the replay buffer /40 (the buffer keeps its share of online
    data); pretraining before finetuning only halved, so finetuning starts from a competent
    policy; LAMB rates below 1e-3 raised to it for pretraining (a narrow model moves more slowly
    at one rate), finetuning then at the paper's rate. Everything else as in the paper. The
    measurements behind each choice: paper_tables/settings_history.md.
    """
    model, optim, online = cfg.model, cfg.optim, cfg.online
    offline_only = online.online_samples == 0
    lr = max(optim.lr, CPU_MIN_LAMB_LR) if optim.optimizer == "lamb" else optim.lr
    finetune_lr = optim.lr if lr != optim.lr and online.lr is None and not offline_only else online.lr
    cfg = _replace(
        cfg,
        model=_replace(model, embed_dim=CPU_EMBED_DIM if model.embed_dim <= PAPER_EMBED_DIM else 2 * CPU_EMBED_DIM,
                       n_layers=CPU_LAYERS),
        optim=_replace(optim, batch_size=CPU_BATCH, warmup_steps=CPU_WARMUP, lr=lr),
        online=_replace(
            online,
            online_samples=online.online_samples // CPU_COUNT_DIVISOR,
            buffer_size=max(1, online.buffer_size // CPU_COUNT_DIVISOR),
            eval_every_rounds=CPU_EVAL_EVERY_ROUNDS,
            lr=finetune_lr,
        ),
        pretrain_updates=cfg.pretrain_updates // (CPU_COUNT_DIVISOR if offline_only else CPU_PRETRAIN_DIVISOR),
        eval_every_updates=CPU_EVAL_EVERY_UPDATES,
        checkpoint_every_updates=CPU_CHECKPOINT_EVERY_UPDATES,
    )
    return _validated(cfg)


def scale_antmaze_to_cpu(cfg: C, antmaze: bool) -> C:
    """The cpu preset's AntMaze budgets (``CPU_ANTMAZE_UPDATES``) on a config already scaled by
    ``scale_to_cpu``; locomotion configs are returned unchanged."""
    if not antmaze:
        return cfg
    return _validated(_replace(cfg, pretrain_updates=CPU_ANTMAZE_UPDATES, eval_every_updates=CPU_ANTMAZE_EVAL_EVERY,
                               eval_episodes_interim=CPU_ANTMAZE_EVAL_EPISODES_INTERIM))


def scale_to_cpu_200k(cfg: C) -> C:
    """The ``cpu-200k`` preset: the ``cpu`` preset's model, batch, rates and pretraining with the
    paper's online phase (200k samples, the paper's replay buffer), Table 1's "0.2m" budget at
    the cpu model size; offline-only configs are the cpu preset's unchanged.

    Evaluations every ``CPU_200K_EVAL_EVERY_ROUNDS`` rounds give >= 20 points per curve at a few
    percent of the run's time; checkpoints every ``CPU_200K_CHECKPOINT_EVERY_UPDATES`` updates
    keep the written buffers to a few GB per run (paper_tables/settings_history.md).
    """
    scaled = scale_to_cpu(cfg)
    paper_online = cfg.online
    if paper_online.online_samples == 0:
        return scaled
    online = _replace(scaled.online, online_samples=paper_online.online_samples,
                      buffer_size=paper_online.buffer_size, eval_every_rounds=CPU_200K_EVAL_EVERY_ROUNDS)
    return _validated(_replace(scaled, online=online, checkpoint_every_updates=CPU_200K_CHECKPOINT_EVERY_UPDATES))


def scale_to_smoke(cfg: C) -> C:
    """The ``smoke`` preset: seconds per run, for tests and CI. Not a result."""
    model, optim, online = cfg.model, cfg.optim, cfg.online
    cfg = _replace(
        cfg,
        model=_replace(model, embed_dim=SMOKE_WIDTH, n_layers=1, n_heads=2, context_len=5,
                       eval_context_len=min(model.eval_context_len, 5)),
        optim=_replace(optim, batch_size=16, warmup_steps=10),
        online=_replace(online, online_samples=min(online.online_samples, SMOKE_SAMPLES), updates_per_round=5,
                        buffer_size=10, eval_every_rounds=2),
        pretrain_updates=min(cfg.pretrain_updates, SMOKE_UPDATES),
        eval_episodes=SMOKE_EVAL_EPISODES,
        eval_every_updates=SMOKE_EVAL_EVERY_UPDATES,
        checkpoint_every_updates=SMOKE_CHECKPOINT_EVERY_UPDATES,
    )
    return _validated(cfg)


def scale_odt(cfg: C, preset: str, antmaze: bool) -> C:
    """A paper-sized ODT (or DT) config scaled to ``preset``: ``cpu`` or ``cpu-200k`` (with
    AntMaze's own offline budgets), ``smoke``, or ``paper`` (unchanged)."""
    if preset == "cpu":
        return scale_antmaze_to_cpu(scale_to_cpu(cfg), antmaze)
    if preset == "cpu-200k":
        return scale_antmaze_to_cpu(scale_to_cpu_200k(cfg), antmaze)
    if preset == "smoke":
        return scale_to_smoke(cfg)
    return cfg


def scale_dt(cfg: C, preset: str, antmaze: bool) -> C:
    """DT's original gym config scaled to ``preset``: ODT's scaling (``scale_odt``), and at the
    cpu presets AdamW at ``CPU_DT_LR``, since the paper's rate with 40x fewer updates leaves DT
    still rising at its end (chosen on tuning seeds: paper_tables/settings_history.md)."""
    cfg = scale_odt(cfg, preset, antmaze)
    if preset in CPU_PRESETS:
        cfg = _replace(cfg, optim=_replace(cfg.optim, lr=CPU_DT_LR))
    return cfg


# ============================================================================ the baselines
def scale_iql(cfg: C, preset: str, antmaze: bool) -> C:
    """IQL's published config scaled to ``preset``.

    ``cpu``: ``CPU_IQL_OFFLINE_UPDATES`` offline updates (the cosine actor schedule spread over
    them), the online budget /40 with one update per sample, and online batches from the newest
    ``CPU_IQL_ONLINE_WINDOW`` transitions, so online data ends at the share of what is sampled it
    has in the paper's setting; networks, batch and rates kept. ``cpu-200k``: the cpu preset's
    offline phase and the published online phase. On AntMaze at both, the evaluations between
    the phases' ends run ``CPU_ANTMAZE_EVAL_EPISODES_INTERIM`` episodes, as every method's there.
    ``smoke`` runs in seconds. Why these numbers: paper_tables/settings_history.md.
    """
    if preset == "cpu":
        cfg = _replace(cfg, offline_updates=CPU_IQL_OFFLINE_UPDATES,
                       online_samples=cfg.online_samples // CPU_COUNT_DIVISOR,
                       online_window=CPU_IQL_ONLINE_WINDOW,
                       eval_every_updates=CPU_OFFLINE_EVAL_EVERY_UPDATES,
                       eval_every_samples=CPU_ONLINE_EVAL_EVERY_SAMPLES,
                       checkpoint_every_updates=CPU_OFFLINE_CHECKPOINT_EVERY_UPDATES)
    elif preset == "cpu-200k":  # the published online phase (online_samples, buffer, window 0) kept
        cfg = _replace(cfg, offline_updates=CPU_IQL_OFFLINE_UPDATES, eval_every_updates=CPU_OFFLINE_EVAL_EVERY_UPDATES,
                       checkpoint_every_updates=CPU_OFFLINE_CHECKPOINT_EVERY_UPDATES)
    elif preset == "smoke":
        cfg = _replace(cfg, hidden_dim=SMOKE_WIDTH, batch_size=SMOKE_BATCH, offline_updates=SMOKE_UPDATES,
                       online_samples=SMOKE_SAMPLES, eval_episodes=SMOKE_EVAL_EPISODES,
                       eval_every_updates=SMOKE_EVAL_EVERY_UPDATES, eval_every_samples=SMOKE_EVAL_EVERY_SAMPLES,
                       checkpoint_every_updates=SMOKE_CHECKPOINT_EVERY_UPDATES)
    if preset in CPU_PRESETS and antmaze:  # as ODT's and DT's AntMaze evaluations there
        cfg = _replace(cfg, eval_episodes_interim=CPU_ANTMAZE_EVAL_EPISODES_INTERIM)
    return cfg


def scale_sac(cfg: C, preset: str) -> C:
    """SAC's config scaled to ``preset``: at ``cpu`` its counts /40 (samples, warm-up) so SAC,
    IQL and ODT meet at the same number of online samples; ``cpu-200k`` is ``paper`` (200k
    samples) under its own label; ``smoke`` runs in seconds."""
    if preset == "cpu":
        return _replace(cfg, online_samples=cfg.online_samples // CPU_COUNT_DIVISOR,
                        warmup_steps=cfg.warmup_steps // CPU_COUNT_DIVISOR,
                        eval_every=CPU_ONLINE_EVAL_EVERY_SAMPLES, checkpoint_every=CPU_SAC_CHECKPOINT_EVERY_SAMPLES)
    if preset == "smoke":
        return _replace(cfg, online_samples=SMOKE_SAMPLES, warmup_steps=100, batch_size=SMOKE_BATCH,
                        hidden_dim=SMOKE_WIDTH, eval_every=SMOKE_EVAL_EVERY_SAMPLES, eval_episodes=SMOKE_EVAL_EPISODES,
                        checkpoint_every=100, buffer_size=10_000)
    return cfg


def scale_bc(cfg: C, preset: str, antmaze: bool) -> C:
    """BC's config (CORL's settings) scaled to ``preset``: at the cpu presets IQL's offline
    budget (``CPU_IQL_OFFLINE_UPDATES``) and evaluation period, so BC and IQL's offline phase
    meet at the same updates of the same batch (AntMaze's interim evaluations as every method's
    there); BC has no online phase for ``cpu-200k`` to change; ``smoke`` runs in seconds."""
    if preset in CPU_PRESETS:
        cfg = _replace(cfg, updates=CPU_IQL_OFFLINE_UPDATES, eval_every_updates=CPU_OFFLINE_EVAL_EVERY_UPDATES)
        if antmaze:
            cfg = _replace(cfg, eval_episodes_interim=CPU_ANTMAZE_EVAL_EPISODES_INTERIM)
    elif preset == "smoke":
        cfg = _replace(cfg, hidden_dim=SMOKE_WIDTH, batch_size=SMOKE_BATCH, updates=SMOKE_UPDATES,
                       eval_episodes=SMOKE_EVAL_EPISODES, eval_every_updates=SMOKE_EVAL_EVERY_UPDATES,
                       checkpoint_every_updates=SMOKE_CHECKPOINT_EVERY_UPDATES)
    return cfg
