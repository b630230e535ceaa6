"""The experiment registry: each experiment of the paper expands into a list of run specs.

A run spec is (method, dataset, seed, preset, overrides) plus a variant label for plots and an
optional g_eval sweep. Its ``run_id`` is derived from exactly those fields, so the same spec
always maps to the same results directory; that is what makes a second launch skip finished
runs and a requeued job find its checkpoints.

Experiments (paper section in brackets):

* ``table1``: Table 1, every dataset row x method column (DT, ODT offline, ODT 0.2m, IQL, SAC),
  10 seeds, plus ``odt-control`` (ODT without new data; not in the paper) and ``bc`` (behaviour
  cloning, a sanity column; not in the paper) in every preset. SAC only on the four ``-medium`` locomotion datasets, as in the paper.
* ``table_rtg``: appendix D, g_online = 2 g* (the paper's choice) against g_online = g*.
* ``stoch_vs_det``: Fig. 4, stochastic ODT against DT's deterministic head, small and large model.
* ``g_eval``: Fig. 5 (L) and Fig. 3, return against g_eval after pretraining and after finetuning.
* ``g_online``: Fig. 5 (R), final return against g_online.
* ``curriculum``: Fig. 6, curriculum exploration RTG (several percentiles q) against fixed.
* ``hindsight``: Fig. 7, hindsight return relabeling on and off.
* ``buffer_init``: Fig. 8, replay buffer initialised from the top-N trajectories or randomly.
* ``eval_context``: Fig. 9, evaluation context length 1 against 5, over a lr x wd grid.
* ``pos_embedding``: Fig. 10, positional embedding on and off, over a lr x wd grid.
* ``lambda``: Fig. 12, entropy and lambda from several initial lambdas.
* ``sampling``: appendix F, trajectory sampling by length against by return.
* ``stability``: Fig. 11, online curves of ODT, IQL and SAC on hopper-medium.
* ``iql_offline_curve`` (tuning, seeds from 100, never reported as a result): IQL's offline
  score over 2e5 offline updates (cosine actor schedule over that length), evaluated every 1e4,
  to choose the ``cpu`` preset's offline length where the curve levels off.
* ``dt_sizing`` (tuning, seeds from 100, never reported as a result): DT's AdamW rate at the
  ``cpu`` preset's 2500 updates (``paper_tables/PROTOCOL-dt-sizing-cpu.md``), on the three
  -medium rows whose DT cells ran with the official initialisation.
* ``antmaze_sizing`` (tuning, seeds from 100, never reported as a result;
  ``PROTOCOL-antmaze-sizing-cpu.md``): offline learning curves on antmaze-umaze, IQL over the
  preset's 1.8e5 updates, ODT (its pretraining alone, the online table), ODT's offline protocol
  and DT over 2e4 updates, to find the budget at which an offline method learns the maze.
* ``iql_buffer`` (the protocol's variant S4): IQL with the published buffer, where 5k online
  samples end at 0.5% of it, against Table 1's IQL, whose online batches come from the newest
  25k transitions (the paper's 20% share).
* ``control_pretraining`` (protocol P1m, ``PROTOCOL-control-pretraining-cpu.md``; not in the
  paper): ``odt`` and ``odt-control`` on hopper-medium with 20k pretraining updates at the
  ``cpu`` preset, the paper's 5000 x 256 sequences at batch 64, else Table 1's configuration.
* ``finetune_lr`` (not in the paper): ODT finetuned at the paper's learning rate of Table C.4
  (``online.lr`` set explicitly), the diagnostic that changed the ``cpu`` preset: it used to
  raise LAMB rates below 1e-3 to 1e-3 for pretraining and finetuning alike, and now finetunes
  at the paper's rate. Its runs have the configuration of ``table1``'s hopper-medium ``odt``
  runs since then, so the two repeat each other.
* ``offline_length`` (``PROTOCOL-offline-length-cpu.md``; not in the paper): ODT's offline
  protocol trained as many updates as ODT's pretraining at the preset, on the rows where the
  ``cpu`` preset's two lengths differ (walker2d, ant: 5000 against 2500), so Table 1's delta ODT
  can be read without crediting finetuning with the extra offline updates.
* ``offline_length_c3`` (the same protocol's amendment of 2026-11-29; not in the paper): DT and
  ODT's offline protocol both trained four times the preset's offline length (cpu: 1e4, the
  paper's 1e5 / 10) on hopper-medium-replay, the row where C3 (ODT offline against DT) differs
  from the paper, to see whether that difference belongs to the short budget.
* ``official`` (``PROTOCOL-official-cpu.md``; not in the paper): the unmodified official
  online-dt code (method ``official-odt``, ``benchmarks/official/``) with the config of
  ``table1``'s ``odt`` cells, on the same generated data and environment, seeds 0-9: its set of
  scores against ours. Needs ``ODT_OFFICIAL_SRC`` (``docs/official-odt.md``).
* ``official_more`` and ``official_replay`` (the same protocol's amendments): seeds 10-19 of both
  arms on hopper-medium; both arms on hopper-medium-replay, seeds 0-4, on a data file both share
  (a new one, not Table 1's), the row the comparison reads from this experiment only.
* ``online_200k`` (``PROTOCOL-online-200k-cpu.md``; not in the paper): at preset ``cpu-200k``
  (the paper's 200k online samples), ODT against ``odt-control-matched`` (no new data, as many
  online updates as its ODT twin) on hopper-medium, seeds 0-9, and IQL, seeds 0-4
  (``Experiment.method_seeds``). A control reads its twin's complete record, so the launcher
  starts it only once its twin has ended (``benchmarks.launch``).
  ODT and its control run at bf16 (variant ``bf16``; the protocol's amendment A1), IQL at fp32.
* ``online_200k_sizing`` (tuning, seed 100, never reported as a result): ``odt`` at fp32 and at
  bf16 and the bf16 run's matched control at ``cpu-200k``: the cost of a whole run at each
  precision (amendment A3: beside the reported runs, not before them).
* ``corl_iql`` (``PROTOCOL-corl-iql-cpu.md``; not in the paper): CORL's IQL, unmodified (method
  ``corl-iql``, ``benchmarks/corl/``), at the ``cpu`` preset's IQL budget on antmaze-umaze and
  hopper-medium, seeds 0-4 (AntMaze: 0-2 first, 3-4 by the protocol's rule), set against
  ``table1``'s ``iql`` cells of those rows: does our IQL give CORL's results on our data. Needs
  ``ODT_CORL_SRC`` (``docs/corl.md``).
* ``antmaze_labels`` (``PROTOCOL-antmaze-labels-cpu.md``; not in the paper): ``iql`` (seeds 0-2,
  3-4 by the protocol's rule) and ``bc`` (0-4) at the ``cpu`` preset on ``antmaze-umaze-d4rlstyle``,
  ``antmaze-umaze``'s collection with D4RL's episode and label conventions: is the file's labelling
  why IQL scores ~0 on the generated U-maze.
* ``antmaze_actor`` (``PROTOCOL-antmaze-actor-cpu.md``; not in the paper): ``iql`` on
  ``antmaze-umaze`` with uniform advantage weights (temperature 0.001) and no online phase,
  seeds 0-4: can IQL's own actor imitate the file where BC's network does.
* ``antmaze_budget`` (``PROTOCOL-antmaze-budget-cpu.md``; not in the paper): ``iql`` on
  ``antmaze-umaze`` at the paper's 1e6 offline updates (Table 1's cpu cell has 1.8e5), no online
  phase, seeds 0-4: do IQL's values keep the goal-reaching its actor can imitate, given the budget.

Ablations that change ODT's internals (overrides of ``odt.config`` fields) use the ``odt``
method; the methods of ``table1``/``stability`` are taken from ``benchmarks.methods.METHODS``
at expansion time, so a method that is not registered yet is reported and left out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from odt.config import make_config, paper_config
from rlbase.config import ConfigError
from rlbase.presets import PRESETS
from rlbase.protocol import is_antmaze, known_datasets

MINARI_PREFIX = "minari:"  # a local Minari dataset by its own id (benchmarks.datasets.minari_spec),
# accepted by every experiment through --datasets; configured with its family's paper row
LOCOMOTION = [d for d in known_datasets() if not is_antmaze(d)]
ANTMAZE = [d for d in known_datasets() if is_antmaze(d)]
# |A| of the Gymnasium v5 locomotion tasks: the target entropy beta = -|A| (the paper's default),
# drawn in the entropy panels and used by the entropy comparisons
ACTION_DIMS = {"hopper": 3, "walker2d": 6, "halfcheetah": 6, "ant": 8}


def target_entropy(dataset: str) -> float | None:
    """beta = -|A|, the entropy ODT's temperature drives the policy to (the paper's default);
    None for a dataset outside the four locomotion families."""
    dims = ACTION_DIMS.get(dataset.split("-")[0])
    return None if dims is None else -float(dims)
# The paper's row order of Table 1.
TABLE1_DATASETS = [
    "hopper-medium", "hopper-medium-replay", "walker2d-medium", "walker2d-medium-replay",
    "halfcheetah-medium", "halfcheetah-medium-replay", "ant-medium", "ant-medium-replay",
    "antmaze-umaze", "antmaze-umaze-diverse",
]
SAC_DATASETS = ["hopper-medium", "walker2d-medium", "halfcheetah-medium", "ant-medium"]
TABLE1_METHODS = ["dt", "odt-offline", "odt", "odt-control", "iql", "sac", "bc"]
TABLE1_MIN_SEEDS = 5  # complete seeds a Table 1 cell needs before it is read (PROTOCOL-table1-rows-cpu.md)


@dataclass(frozen=True)
class RunSpec:
    experiment: str
    method: str
    dataset: str
    seed: int
    preset: str
    overrides: tuple[tuple[str, Any], ...] = ()
    variant: str = "default"  # label for tables and plots, e.g. "q=50" or "ctx=1,lr=1e-4"
    g_eval_sweep: tuple[float, ...] = ()  # multiples of the config's g_eval, evaluated after each phase

    @property
    def overrides_dict(self) -> dict[str, Any]:
        return dict(self.overrides)

    @property
    def key(self) -> dict[str, Any]:
        """The fields that define what the run computes (the experiment name does not)."""
        return {"method": self.method, "dataset": self.dataset, "seed": self.seed,
                "preset": self.preset, "overrides": [list(kv) for kv in self.overrides],
                "g_eval_sweep": list(self.g_eval_sweep)}

    @property
    def run_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:8]
        return f"{self.method}__{_slug(self.dataset)}__{_slug(self.variant)}__s{self.seed}__{digest}"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["overrides"] = [list(kv) for kv in self.overrides]
        d["g_eval_sweep"] = list(self.g_eval_sweep)
        d["run_id"] = self.run_id
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        return cls(experiment=d["experiment"], method=d["method"], dataset=d["dataset"],
                   seed=int(d["seed"]), preset=d["preset"],
                   overrides=tuple((k, v) for k, v in d.get("overrides", [])),
                   variant=d.get("variant", "default"),
                   g_eval_sweep=tuple(d.get("g_eval_sweep", ())))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", text).strip("_") or "default"


def _ov(**kv: Any) -> tuple[tuple[str, Any], ...]:
    """Overrides from keyword arguments; ``model__embed_dim`` means ``model.embed_dim``."""
    return tuple(sorted((k.replace("__", "."), v) for k, v in kv.items()))


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    seeds: int  # the paper's number of seeds
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    # (method, dataset, preset) -> [(variant, overrides, g_eval_sweep)]
    variants: Callable[[str, str, str], list[tuple[str, tuple, tuple]]] = field(
        default=lambda m, d, p: [("default", (), ())])
    applies: Callable[[str, str], bool] = field(default=lambda m, d: True)
    first_seed: int = 0  # tuning experiments start at 100: reported seeds (0-99) are never tuned on;
    # a protocol may start its reported seeds later (buffer_size: 10) to use seeds no earlier run used
    method_seeds: tuple[tuple[str, int], ...] = ()  # (method, seeds) where a method runs fewer or more
    # than ``seeds`` (online_200k: IQL 5 of ODT's 10); every method starts at first_seed

    def seeds_of(self, method: str) -> int:
        """The number of seeds ``method`` runs in this experiment (``method_seeds``, else ``seeds``)."""
        return dict(self.method_seeds).get(method, self.seeds)


def _base(dataset: str, preset: str, method: str = "odt"):
    """The seed-0 config a variant is built on: DT's own for ``dt``, else ODT's (``odt-offline``: its
    offline protocol), as ``benchmarks.methods`` builds them (this module sits below the registry)."""
    if method == "dt":
        from baselines.dt import dt_config
        return dt_config(dataset, preset, 0, {})
    if method not in ("odt", "odt-offline"):
        raise ConfigError(f"no base config for method {method!r} here: odt, odt-offline or dt")
    return make_config(dataset, "offline" if method == "odt-offline" else "online", preset, {"seed": 0})


def _g_online_variants(m: str, d: str, p: str):
    g = _base(d, p).g_eval  # the expert return g* of Table C.4
    return [(f"g_online={mult:g}x", _ov(online__g_online=mult * g), ()) for mult in (1, 2, 3, 5, 10)]


def _online_200k_variants(m: str, d: str, p: str):
    """The study's arms: ODT and its control at the registered precision, IQL at its own."""
    if m == "iql":
        return [("default", (), ())]
    return [(ONLINE_200K_PRECISION, _ov(precision=ONLINE_200K_PRECISION), ())]


def _online_200k_sizing_variants(m: str, d: str, p: str):
    """Sizing: ODT at fp32 (the paper's precision, cost only) and at the study's; the control at the study's."""
    study = _online_200k_variants(m, d, p)
    return study if m == "odt-control-matched" else [("default", (), ()), *study]


def _table_rtg_variants(m: str, d: str, p: str):
    g = _base(d, p).g_eval
    return [("g_online=2g*", _ov(online__g_online=2 * g), ()), ("g_online=g*", _ov(online__g_online=g), ())]


def _stoch_variants(m: str, d: str, p: str):
    cfg = _base(d, p)
    small = dict(model__embed_dim=cfg.model.embed_dim, model__n_layers=cfg.model.n_layers)
    large = dict(model__embed_dim=2 * cfg.model.embed_dim, model__n_layers=2 * cfg.model.n_layers)
    out = []
    for size, arch in (("small", small), ("large", large)):
        for stochastic in (True, False):
            label = f"{size},{'stochastic' if stochastic else 'deterministic'}"
            out.append((label, _ov(model__stochastic=stochastic, **arch), ()))
    return out


# PROTOCOL-antmaze-sizing-cpu.md: DT's and ODT's curves run to 8x the cpu preset's 2500 offline
# updates, evaluated every 2500 (ODT's seed 100: 51 min of one core with its 100-episode
# evaluations; the issue's ~30 min bound is read at the budget the rule picks, not at the curve's
# end); IQL runs the preset's own offline phase (1.8e5 updates at cpu), evaluated every 1e4, with
# no online phase
ANTMAZE_SIZING_UPDATES = 20_000
ANTMAZE_BUDGET_UPDATES = 1_000_000  # IQL's published AntMaze offline budget (PROTOCOL-antmaze-budget-cpu.md)
ANTMAZE_SIZING_EVERY = 2500


def _antmaze_sizing_variants(m: str, d: str, p: str):
    if m == "iql":
        return [("offline=preset", _ov(online_samples=0), ())]
    if p != "cpu":  # the sizing is the cpu preset's; elsewhere the preset's own length
        return [("offline=preset", _ov(online__online_samples=0), ())]
    return [(f"updates={ANTMAZE_SIZING_UPDATES}", _ov(pretrain_updates=ANTMAZE_SIZING_UPDATES, online__online_samples=0,
                                                     eval_every_updates=ANTMAZE_SIZING_EVERY), ())]


def _control_pretraining_variants(m: str, d: str, p: str):
    """PROTOCOL-control-pretraining-cpu.md: the cpu preset's ODT and control with as many
    pretraining sequences as the paper's (Table C.4's updates x its batch of 256, at the preset's
    batch); other presets keep their own pretraining (smoke: a test of the wiring)."""
    if p != "cpu":
        return [("pretrain=preset", (), ())]
    paper, preset = paper_config(d, "online"), _base(d, p)
    updates = paper.pretrain_updates * paper.optim.batch_size // preset.optim.batch_size
    return [(f"pretrain={updates}", _ov(pretrain_updates=updates), ())]


def _offline_length_variants(m: str, d: str, p: str):
    """PROTOCOL-offline-length-cpu.md: the offline protocol (its own hyperparameters) with ODT's
    pretraining length at the same preset."""
    updates = _base(d, p).pretrain_updates
    return [(f"updates={updates}", _ov(pretrain_updates=updates), ())]


OFFLINE_LENGTH_DATASETS = ("walker2d-medium", "walker2d-medium-replay", "ant-medium", "ant-medium-replay")
OFFLINE_LENGTH_C3_FACTOR = 4  # the C3 arm: 4 x the cpu preset's 2500 offline updates = 1e4 (the paper's 1e5 / 10)


def _offline_length_c3_variants(m: str, d: str, p: str):
    """PROTOCOL-offline-length-cpu.md, amendment of 2026-11-29: DT and ODT's offline protocol, each
    with its own hyperparameters, trained OFFLINE_LENGTH_C3_FACTOR times the cpu preset's offline
    length; other presets keep their own length (smoke: a test of the wiring)."""
    if p != "cpu":
        return [("updates=preset", (), ())]
    updates = OFFLINE_LENGTH_C3_FACTOR * _base(d, p, m).pretrain_updates
    return [(f"updates={updates}", _ov(pretrain_updates=updates), ())]


# PROTOCOL-online-200k-cpu.md: ODT and its update-matched control 10 seeds each, IQL 5 (more only
# with --seeds, in seed order); the control's method follows its twin's (benchmarks.methods.UPDATE_TWINS)
ONLINE_200K_METHODS = ("odt", "odt-control-matched", "iql")
ONLINE_200K_IQL_SEEDS = 5
# PROTOCOL-online-200k-cpu.md, amendment A1: ODT and its control autocast to bf16; IQL has no
# precision setting and runs at fp32
ONLINE_200K_PRECISION = "bf16"
ABLATION_FIRST_SEED = 20  # PROTOCOL-ablations-cpu.md: fresh seeds 20-24 (two-arm figures), 20-22 (sweeps)
DT_SIZING_RATES = (1e-4, 3e-4, 1e-3)  # PROTOCOL-dt-sizing-cpu.md: the preset's 1e-4 and two raised rates
G_EVAL_MULTIPLES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)


def _lr_wd_grid(extra_name: str, values: Sequence[Any], label: Callable[[Any], str]):
    """Figs. 9-10's grid: learning rate {1e-4, 1e-3} x weight decay {1e-4, the dataset's Table C.4
    value}, so the paper's own finetuning cell (ant-medium-replay 1e-4 / 5e-4, walker2d-medium
    1e-3 / 1e-3) is always in it. The paper's text does not list the grid (its figures do)."""
    def variants(m: str, d: str, p: str):
        out = []
        for lr in (1e-4, 1e-3):
            for wd in sorted({1e-4, _paper_wd(d)}):
                for v in values:
                    # one rate for pretraining and finetuning, as in the paper (the cpu preset
                    # would otherwise finetune at its own online.lr)
                    out.append((f"{label(v)},lr={lr:g},wd={wd:g}",
                                _ov(optim__lr=lr, online__lr=lr, optim__weight_decay=wd, **{extra_name: v}), ()))
        return out
    return variants


def _registered(methods: Sequence[str]) -> tuple[str, ...]:
    return tuple(methods)


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("table1", "Table 1: DT, ODT offline/0.2m, IQL offline/0.2m, SAC 0.2m on 10 datasets",
               10, tuple(TABLE1_DATASETS), tuple(TABLE1_METHODS),
               applies=lambda m, d: m != "sac" or d in SAC_DATASETS),
    Experiment("quickstart", "The README's first job: ODT and its no-new-data control on hopper-medium, one seed "
               "(a Table 1 slice: ~20 min on 2 CPU cores at the cpu preset, dataset included; a demo, not a result)",
               1, ("hopper-medium",), ("odt", "odt-control")),
    Experiment("table_rtg", "Appendix D: exploration RTG g_online = 2 g* against g*",
               10, tuple(TABLE1_DATASETS), ("odt",), variants=_table_rtg_variants,
               first_seed=ABLATION_FIRST_SEED),
    Experiment("stoch_vs_det", "Fig. 4: stochastic ODT against a deterministic head, small and large model",
               5, ("hopper-medium",), ("odt",), variants=_stoch_variants,
               first_seed=ABLATION_FIRST_SEED),
    Experiment("g_eval", "Fig. 3/5 (L): return against g_eval after pretraining and after finetuning",
               5, ("hopper-medium",), ("odt",),
               variants=lambda m, d, p: [("default", (), G_EVAL_MULTIPLES)],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("g_online", "Fig. 5 (R): return after finetuning against g_online",
               5, ("hopper-medium",), ("odt",), variants=_g_online_variants,
               first_seed=ABLATION_FIRST_SEED),
    Experiment("curriculum", "Fig. 6: curriculum exploration RTG (percentile q) against fixed g_online",
               5, ("hopper-medium",), ("odt",),
               variants=lambda m, d, p: [("fixed", (), ())] + [
                   (f"q={q}", _ov(online__exploration_rtg="curriculum", online__curriculum_q=float(q)), ())
                   for q in (10, 30, 50, 70, 90)],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("hindsight", "Fig. 7: hindsight return relabeling on and off",
               5, ("hopper-medium",), ("odt",),
               variants=lambda m, d, p: [(f"relabel={on}", _ov(online__hindsight_relabel=on), ())
                                         for on in (True, False)],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("buffer_init", "Fig. 8: replay buffer initialised with the top-N or random trajectories",
               10, tuple(SAC_DATASETS), ("odt",),
               variants=lambda m, d, p: [(f"init={b}", _ov(online__buffer_init=b), ()) for b in ("top", "random")],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("eval_context", "Fig. 9: evaluation context length 1 against 5 (ant-medium-replay)",
               10, ("ant-medium-replay",), ("odt",),
               variants=_lr_wd_grid("model.eval_context_len", (1, 5), lambda v: f"ctx={v}"),
               first_seed=ABLATION_FIRST_SEED),
    Experiment("pos_embedding", "Fig. 10: positional embedding on and off (walker2d-medium)",
               10, ("walker2d-medium",), ("odt",),
               variants=_lr_wd_grid("model.positional_embedding", (False, True), lambda v: f"pos={v}"),
               first_seed=ABLATION_FIRST_SEED),
    Experiment("lambda", "Fig. 12: entropy and lambda from initial lambda 1, 2, 5, 10, 100 (walker2d-medium)",
               1, ("walker2d-medium",), ("odt",),
               variants=lambda m, d, p: [(f"lambda0={lam:g}", _ov(optim__init_lambda=float(lam)), ())
                                         for lam in (1, 2, 5, 10, 100)],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("sampling", "Appendix F: trajectory sampling proportional to length or to return",
               5, ("hopper-medium",), ("odt",),
               variants=lambda m, d, p: [(f"sampling={s}", _ov(online__sampling=s), ()) for s in ("length", "return")],
               first_seed=ABLATION_FIRST_SEED),
    Experiment("stability", "Fig. 11: stability of ODT, IQL and SAC during online training (hopper-medium)",
               5, ("hopper-medium",), ("odt", "iql", "sac")),
    Experiment("iql_offline_curve", "Tuning (seeds 100+): IQL's offline score over 2e5 updates, to size the cpu preset",
               1, ("hopper-medium", "hopper-medium-replay"), ("iql",), first_seed=100,
               variants=lambda m, d, p: [("offline=2e5", _ov(offline_updates=200_000, online_samples=0,
                                                            eval_every_updates=10_000), ())]),
    Experiment("dt_sizing", "Tuning (seeds 100+): DT's AdamW learning rate at the cpu preset's 2500 updates",
               2, ("hopper-medium", "walker2d-medium", "halfcheetah-medium"), ("dt",), first_seed=100,
               variants=lambda m, d, p: [(f"lr={lr:g}", _ov(optim__lr=lr), ()) for lr in DT_SIZING_RATES]),
    Experiment("antmaze_sizing", "Tuning (seeds 100+): learning curves on antmaze-umaze, to size the cpu preset's AntMaze budgets",
               2, ("antmaze-umaze",), ("iql", "odt", "odt-offline", "dt"), first_seed=100,
               variants=_antmaze_sizing_variants),
    Experiment("iql_buffer", "Protocol S4: IQL finetuned with the published buffer (online data 0.5% of it) instead of Table 1's 25k window",
               10, ("hopper-medium", "hopper-medium-replay"), ("iql",),
               variants=lambda m, d, p: [("published-buffer", _ov(online_window=0), ())]),
    Experiment("buffer_size", "Protocol PROTOCOL-buffer-cpu.md: ODT and its no-new-data control at three replay-buffer sizes",
               5, ("hopper-medium",), ("odt", "odt-control"), first_seed=10,
               variants=lambda m, d, p: [(f"buffer={n}", _ov(online__buffer_size=n), ()) for n in _buffer_sizes(p)]),
    Experiment("control_pretraining", "Protocol P1m: ODT and its no-new-data control after the paper's amount of "
               "pretraining (20k updates of 64 = 5000 of 256)",
               10, ("hopper-medium",), ("odt", "odt-control"), variants=_control_pretraining_variants),
    Experiment("finetune_lr", "Diagnostic: ODT finetuned at the paper's learning rate (the cpu preset floors it at 1e-3)",
               5, ("hopper-medium",), ("odt",),
               variants=lambda m, d, p: [("online.lr=paper", _ov(online__lr=_paper_lr(d)), ())]),
    Experiment("official", "Protocol PROTOCOL-official-cpu.md: the unmodified official online-dt code on the same "
               "data, environment and config as Table 1's odt cells (needs ODT_OFFICIAL_SRC)",
               10, ("hopper-medium", "hopper-medium-replay", "walker2d-medium"), ("official-odt",)),
    Experiment("official_more", "PROTOCOL-official-cpu.md, amendment of 2026-12-04: 10 more seeds (10-19) of both "
               "arms on hopper-medium, after the registered reading at 10 seeds was inconclusive (needs ODT_OFFICIAL_SRC)",
               10, ("hopper-medium",), ("odt", "official-odt"), first_seed=10),
    Experiment("official_replay", "PROTOCOL-official-cpu.md, amendment of 2026-12-06: both arms on hopper-medium-replay, "
               "seeds 0-4, on a new file both share (Table 1's file cannot be remade on other CPU models; needs "
               "ODT_OFFICIAL_SRC)",
               5, ("hopper-medium-replay",), ("odt", "official-odt")),
    Experiment("offline_length", "Protocol PROTOCOL-offline-length-cpu.md: ODT's offline protocol trained as many "
               "updates as ODT's pretraining (walker2d, ant: the cpu preset's 5000, not 2500)",
               5, OFFLINE_LENGTH_DATASETS, ("odt-offline",), variants=_offline_length_variants),
    Experiment("offline_length_c3", "PROTOCOL-offline-length-cpu.md, amendment of 2026-11-29: DT and ODT's offline "
               "protocol both trained 4x the cpu preset's offline length (1e4 updates) on hopper-medium-replay, "
               "where C3 differs from the paper",
               5, ("hopper-medium-replay",), ("dt", "odt-offline"), variants=_offline_length_c3_variants),
    Experiment("online_200k", "Protocol PROTOCOL-online-200k-cpu.md: ODT against its update-matched no-new-data "
               "control (seeds 0-9) and IQL (seeds 0-4) at the paper's 200k online samples on hopper-medium "
               "(preset cpu-200k); each control runs after its ODT twin",
               10, ("hopper-medium",), ONLINE_200K_METHODS, method_seeds=(("iql", ONLINE_200K_IQL_SEEDS),),
               variants=_online_200k_variants),
    Experiment("online_200k_sizing", "Tuning (seed 100, never reported as a result): one ODT run at fp32 and "
               "at bf16, and the bf16 one's update-matched control, at preset cpu-200k: the cost of a whole "
               "run at each precision (PROTOCOL-online-200k-cpu.md, amendment A3)",
               1, ("hopper-medium",), ("odt", "odt-control-matched"), first_seed=100,
               variants=_online_200k_sizing_variants),
    Experiment("corl_iql", "Protocol PROTOCOL-corl-iql-cpu.md: CORL's IQL, unmodified, at our IQL's budget on "
               "antmaze-umaze and hopper-medium, against table1's iql cells (needs ODT_CORL_SRC)",
               5, ("antmaze-umaze", "hopper-medium"), ("corl-iql",)),
    Experiment("antmaze_labels", "Protocol PROTOCOL-antmaze-labels-cpu.md: IQL and BC on antmaze-umaze-d4rlstyle "
               "(D4RL's episode and label conventions), against table1's cells on antmaze-umaze",
               5, ("antmaze-umaze-d4rlstyle",), ("iql", "bc")),
    Experiment("antmaze_actor", "Protocol PROTOCOL-antmaze-actor-cpu.md: IQL on antmaze-umaze with uniform advantage "
               "weights (temperature 0.001), against table1's IQL and BC",
               5, ("antmaze-umaze",), ("iql",),
               variants=lambda m, d, p: [("temperature=0.001", _ov(temperature=0.001, online_samples=0), ())]),
    Experiment("antmaze_budget", "Protocol PROTOCOL-antmaze-budget-cpu.md: IQL on antmaze-umaze at the paper's 1e6 "
               "offline updates, against table1's IQL and antmaze_actor's uniform weights",
               5, ("antmaze-umaze",), ("iql",),
               variants=lambda m, d, p: [(f"offline_updates={ANTMAZE_BUDGET_UPDATES}",
                                          _ov(offline_updates=ANTMAZE_BUDGET_UPDATES, online_samples=0), ())]),
]}


def _buffer_sizes(preset: str) -> tuple[int, ...]:
    """The buffer protocol's sizes: the preset's own (cpu: 25, the paper's 1000 / 40), the batch's
    /4 (250), and the paper's share of the data (1000 of D4RL hopper-medium's 2186 trajectories,
    46%: 1200 of the generated data's 2665); the paper preset keeps its 1000 and brackets it."""
    return (25, 250, 1200) if preset != "paper" else (250, 1000, 2000)


def _paper_lr(dataset: str) -> float:
    from benchmarks.datasets.registry import hyperparameter_dataset
    from odt.config import make_config
    return make_config(hyperparameter_dataset(dataset), "online", "paper").optim.lr


def _paper_wd(dataset: str) -> float:
    from benchmarks.datasets.registry import hyperparameter_dataset
    from odt.config import make_config
    return make_config(hyperparameter_dataset(dataset), "online", "paper").optim.weight_decay


def _check_names(kind: str, given: Sequence[str] | None, valid: Sequence[str]) -> None:
    for name in given or ():
        if name not in valid and not (kind == "dataset" and name.startswith(MINARI_PREFIX)):
            raise ConfigError(f"unknown {kind} {name!r}; known: {', '.join(valid)}")


def expand(experiment: str, preset: str = "paper", seeds: int | None = None,
           datasets: Sequence[str] | None = None, methods: Sequence[str] | None = None,
           registered: Sequence[str] | None = None, warn: Callable[[str], None] | None = None) -> list[RunSpec]:
    """The run specs of an experiment, in a stable order (dataset, method, variant, seed).

    ``seeds`` (default: each method's ``Experiment.seeds_of``) is, when given, every method's
    number of seeds, those of ``method_seeds`` included.

    ``registered`` is the list of available methods (the runner passes ``benchmarks.methods.METHODS``;
    default: every method the experiment names); methods of the experiment that are not registered
    are skipped and reported via ``warn``.
    """
    if experiment not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {experiment!r}; known: {', '.join(EXPERIMENTS)}")
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    if seeds is not None and seeds < 1:
        raise ConfigError(f"seeds={seeds} is out of range: >= 1")
    exp = EXPERIMENTS[experiment]
    if registered is None:
        registered = list(exp.methods)
    _check_names("dataset", datasets, exp.datasets)
    _check_names("method", methods, exp.methods)
    chosen_methods = [m for m in exp.methods if not methods or m in methods]
    missing = [m for m in chosen_methods if m not in registered]
    if missing and warn is not None:
        warn(f"{experiment}: method(s) {', '.join(missing)} not registered in benchmarks.methods; "
             f"their cells stay missing (registered: {', '.join(registered)})")
    chosen_methods = [m for m in chosen_methods if m in registered]
    chosen_datasets = [d for d in exp.datasets if not datasets or d in datasets]
    chosen_datasets += [d for d in datasets or () if d.startswith(MINARI_PREFIX) and d not in chosen_datasets]
    specs = []
    for d in chosen_datasets:
        for m in chosen_methods:
            if not exp.applies(m, d):
                continue
            n_seeds = exp.seeds_of(m) if seeds is None else seeds  # an explicit count is every method's
            for variant, overrides, sweep in exp.variants(m, d, preset):
                for s in range(exp.first_seed, exp.first_seed + n_seeds):
                    specs.append(RunSpec(experiment, m, d, s, preset, tuple(overrides), variant, tuple(sweep)))
    ids = [s.run_id for s in specs]
    assert len(set(ids)) == len(ids), "run ids must be unique within an experiment"
    return specs
