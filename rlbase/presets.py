"""Every method's preset scaling, in one place.

A preset turns a method's published (``paper``) configuration into one of another size: ``cpu``
keeps the paper's structure at a size a 2-core CPU finishes, ``cpu-200k`` is ``cpu`` with the
paper's online phase, ``smoke`` runs in seconds for tests (not a result), ``paper`` changes
nothing. Each method's config builder (``odt.config.make_config``, ``baselines.dt.dt_config``,
``baselines.iql.iql_config``, ``baselines.sac.sac_config``, ``baselines.bc.bc_config``) builds
the paper's config and calls its function here.

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
# The ``cpu`` preset's scale (tuned once on hopper-medium with seed 100, which no table reports).
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

# AntMaze's offline budgets at the cpu preset, sized on antmaze-umaze by
# paper_tables/PROTOCOL-antmaze-sizing-cpu.md (tuning seeds 100-101; decision in its results):
# no method reached its "learned" bar (both seeds >= 30% success at two evaluations in a row)
# within 2500 / 3500 updates, and ODT's offline protocol and its pretraining gained >= 10 points
# by 2e4 updates, so both move to 2e4 (IQL keeps the preset's 1.8e5; DT shares ODT offline's).
CPU_ANTMAZE_UPDATES = 20_000  # DT, ODT's offline protocol, ODT's pretraining before finetuning
CPU_ANTMAZE_EVAL_EVERY = 2500  # as in the sizing runs: 8 evaluations of 100 700-step episodes, not 20
# the evaluations that do not end a phase run 20 episodes, those that do keep AntMaze's 100
# (PROTOCOL-table1-rows-cpu.md, amendment of 2026-11-29: evaluation was a fifth to a third of an AntMaze run's cost)
CPU_ANTMAZE_EVAL_EPISODES_INTERIM = 20

# The ``cpu-200k`` preset's online phase (see scale_to_cpu_200k).
CPU_200K_EVAL_EVERY_ROUNDS = 10  # >= 20 evaluations however long the episodes (200k / 1000 steps = 200 rounds)
CPU_200K_CHECKPOINT_EVERY_UPDATES = 3000  # every 10 rounds: a checkpoint holds the 1000-trajectory buffer

# The cpu preset's AdamW rate for DT (the paper's 1e-4 at 40x fewer updates left DT still rising
# at its last update): chosen on tuning seeds 100-101 by PROTOCOL-dt-sizing-cpu.md (2026-11-26).
CPU_DT_LR = 3e-4

# ----- IQL and BC (offline phase), IQL and SAC (online phase) --------------------------------
CPU_IQL_OFFLINE_UPDATES = 180_000  # the protocol's plateau rule on iql_offline_curve (seed 100)
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

    Sized so that the Hopper block of Table 1 (9 cells x 5 seeds) fits about two and a half
    hours of a 2-core machine. Measured here with one thread per run and two runs at once: a
    width-64, 3-layer, batch-64 update costs about 0.1 s of one core (the paper's size: about
    8 s of both cores), and with 10k online samples an ODT run took about 23 min, most of it
    in the 300-update rounds after short early episodes. What changes, and why:

    * model 512 wide x 4 layers -> 64 x 3 (the head count is kept), batch 256 -> 64; K stays 20;
    * offline-only runs (ODT's offline protocol; DT): 1e5 updates -> 2500 (/40); the online
      budget 200k -> 5k samples (/40) and the replay buffer 1000 -> 25 trajectories (/40, so
      it holds the same share of the online data); warmup 1e4 -> 1000;
    * pretraining before finetuning is only halved (5000 -> 2500; it scored 40 on hopper-medium
      and 23 on -medium-replay at seed 100): with a quarter of the batch, a tenth of the
      paper's pretraining left a policy that falls within 20-200 steps, and the online phase
      then spends its budget on hundreds of tiny rounds (hours, not minutes, and not the
      paper's regime of finetuning a competent pretrained policy);
    * LAMB learning rates below 1e-3 are raised to 1e-3 for pretraining. LAMB steps are
      relative to each weight's norm, so a narrow model moves its function more slowly at the
      same rate: on hopper-medium (seed 100) the paper's 1e-4 scored 6 after 2500 updates where
      1e-3 scored 41. 1e-3 is inside the paper's own range (Table C.4: 1e-4 to 2e-3). AdamW
      (DT) keeps its rate;
    * finetuning runs at the paper's rate (``online.lr``) where the floor raised it. Finetuned
      at 1e-3, hopper-medium lost its first online gain by 5k samples (Table 1's ODT 37.9 from
      44.2 offline, 5 seeds), and pretraining continued at 1e-3 without online data drifted
      down too (seed 100: 40 -> 33 over 4500 more updates); finetuned at 1e-4 the same
      pretrained policies ended at 50.8 (experiment ``finetune_lr``, 5 seeds);
    * kept as in the paper: the per-dataset weight decays, RTGs and context lengths, 300
      updates per round, one trajectory per round, dropout, clipping, the entropy target.
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
    paper's online phase, the data budget of Table 1's "0.2m" column at the cpu model size.

    What differs from ``cpu`` (offline-only configs, DT's and ODT's offline protocol, are the cpu
    preset's unchanged):

    * the online budget is the paper's 200k samples (cpu: 5k) and the replay buffer the paper's
      Table C.4 size, 1000 trajectories (1500 on AntMaze; cpu: /40), 300 updates per round as in
      both;
    * an evaluation every ``CPU_200K_EVAL_EVERY_ROUNDS`` = 10 rounds (cpu: 5, the paper preset's
      10). A round takes one exploration episode of at most 1000 steps, so 200k samples take at
      least 200 rounds and give at least ceil(200 / 10) = 20 online evaluations, the one ending
      the budget included. On hopper-medium the cpu runs' exploration episodes averaged 367 steps
      (Table 1, 10 seeds, 5k samples), so a typical run is ~545 rounds and ~55 evaluations. Cost
      per evaluation: 10 episodes of ~670 steps (those runs' online evaluations; ~2.7 ms of a core
      per step with its batch-10 forward pass: ~18 s); per round: 300 updates of ~0.11 s and one
      exploration episode (~34 s). Evaluating every 10 rounds is ~5% of the online phase (~7% if
      every episode ran 1000 steps); every 5 rounds would double that;
    * a checkpoint every ``CPU_200K_CHECKPOINT_EVERY_UPDATES`` = 3000 updates (cpu: 500): each
      one writes the buffer, the ~447k steps of hopper-medium's top 1000 trajectories (42 MB), and
      150k online updates at the cpu interval would write ~13 GB per run. A kill loses at most 10
      rounds (~6 min); a stop request still checkpoints at the end of its round. Checkpoints do
      not change what a run computes.
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
    """DT's original gym config scaled to ``preset``.

    ``cpu`` and ``smoke`` are ODT's own scalings (odt/config.py): at ``cpu`` DT gets the same
    network width (64), depth and batch as ODT, keeps its single head, and runs 2500 updates
    (1e5 / 40) with a 1000-update warmup at AdamW rate ``CPU_DT_LR`` (3e-4). The paper's 1e-4
    left DT still rising at 2500 updates; on the protocol's tuning seeds (100-101; hopper-,
    walker2d-, halfcheetah-medium) the mean final score over the three datasets was 17.9 at
    1e-4, 32.9 at 3e-4 and 29.2 at 1e-3 (``paper_tables/dt_sizing_cpu.md``). The same 40x cut of
    updates is why the preset raises ODT's LAMB rates; DT and ODT offline keep one budget.
    ``cpu-200k`` changes only the online phase, which DT has none of: DT there is DT at ``cpu``.
    """
    cfg = scale_odt(cfg, preset, antmaze)
    if preset in CPU_PRESETS:
        cfg = _replace(cfg, optim=_replace(cfg.optim, lr=CPU_DT_LR))
    return cfg


# ============================================================================ the baselines
def scale_iql(cfg: C, preset: str, antmaze: bool) -> C:
    """IQL's published config scaled to ``preset``.

    ``cpu`` (the protocol paper_tables/PROTOCOL-table1-cpu.md): 1e6 offline updates ->
    ``CPU_IQL_OFFLINE_UPDATES`` = 1.8e5, the protocol's plateau rule applied to the tuning curve
    of experiment ``iql_offline_curve`` (seed 100, hopper-medium); the cosine actor schedule is
    spread over that length. About 40-55 min of one core per run. (Before: 2e4, which left IQL
    below the generated dataset's own mean; those runs are in results/archive/.) 200k online
    samples -> 5k (/40, ODT's and SAC's budget at that preset), still one update per sample,
    and online batches come from the newest ``CPU_IQL_ONLINE_WINDOW`` = 25k transitions, so
    online data ends at 20% of what is sampled, as 200k of a 1M buffer in the paper's setting
    (ODT's buffer at the preset keeps the same share; ``online_window=0`` is the published
    buffer, the protocol's second variant). The networks, batch and learning rates are kept.
    On AntMaze the evaluations between the ends of the two phases run 20 episodes instead of 100
    (``CPU_ANTMAZE_EVAL_EPISODES_INTERIM``, as ODT's and DT's there).
    ``cpu-200k`` (ODT's preset of that name: the cpu model size with the paper's online budget):
    the cpu preset's offline phase (1.8e5 updates, evaluated every 1e4) and the published online
    phase at Table 1's budget, as the ``paper`` preset runs it: 200k samples, one update per
    sample, the published buffer (1M transitions, 2M on AntMaze; offline data then online samples, FIFO;
    ``online_window=0``, batches from all of it: the 200k online samples end at 20% of it, the
    share the cpu preset's 25k window imitates) and an evaluation every 5000 samples (40 points
    on the curve; the paper preset's cadence, not a published value).
    ``smoke`` runs in seconds and is not a result.
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
    """SAC's config scaled to ``preset``.

    * ``paper``: the SAC paper's hyperparameters, 200k online samples (Table 1's budget).
    * ``cpu``: the same networks and rates; the counts divided by 40 as the ODT ``cpu`` preset
      divides its online budget (5k samples, 125 random warm-up steps, evaluation every 1000
      steps), so SAC, IQL and ODT are compared at the same number of online samples.
    * ``cpu-200k``: as ``paper`` (SAC has nothing for the cpu preset to shrink but its counts,
      and this preset keeps the paper's 200k samples), labelled with its own preset.
    * ``smoke``: seconds, for tests and CI (tiny networks, 300 samples). Not a result.
    """
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
    """BC's config (CORL's settings) scaled to ``preset``.

    ``paper``: CORL's (1e6 updates, evaluated every 5000; 10 episodes, 100 on AntMaze).
    ``cpu``: the network, batch and rate kept, 1e6 updates -> ``CPU_IQL_OFFLINE_UPDATES`` (1.8e5),
    IQL's offline budget at that preset, which scales the same published 1e6 the same way: BC and
    IQL's offline phase are compared at the same updates of the same batch. Evaluated every 1e4
    updates as IQL; on AntMaze the evaluations before the last run 20 episodes
    (``CPU_ANTMAZE_EVAL_EPISODES_INTERIM``), the last one 100, as every method there.
    ``cpu-200k`` changes only online phases, which BC has none of: BC there is BC at ``cpu``.
    ``smoke`` runs in seconds and is not a result.
    """
    if preset in CPU_PRESETS:
        cfg = _replace(cfg, updates=CPU_IQL_OFFLINE_UPDATES, eval_every_updates=CPU_OFFLINE_EVAL_EVERY_UPDATES)
        if antmaze:
            cfg = _replace(cfg, eval_episodes_interim=CPU_ANTMAZE_EVAL_EPISODES_INTERIM)
    elif preset == "smoke":
        cfg = _replace(cfg, hidden_dim=SMOKE_WIDTH, batch_size=SMOKE_BATCH, updates=SMOKE_UPDATES,
                       eval_episodes=SMOKE_EVAL_EPISODES, eval_every_updates=SMOKE_EVAL_EVERY_UPDATES,
                       checkpoint_every_updates=SMOKE_CHECKPOINT_EVERY_UPDATES)
    return cfg
