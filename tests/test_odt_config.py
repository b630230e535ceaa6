"""Configs: the paper's tables, presets, overrides and range checks."""

from __future__ import annotations

import pytest

from odt.__main__ import main as odt_main
from odt.config import from_dict, make_config
from rlbase.config import ConfigError, to_dict
from rlbase.protocol import known_datasets


def test_paper_preset_is_the_paper():
    cfg = make_config("hopper-medium", "online", "paper")
    assert (cfg.model.n_layers, cfg.model.n_heads, cfg.model.embed_dim, cfg.model.context_len) == (4, 4, 512, 20)
    assert (cfg.optim.batch_size, cfg.optim.warmup_steps, cfg.optim.grad_clip) == (256, 10_000, 0.25)
    assert (cfg.optim.lr, cfg.optim.weight_decay, cfg.pretrain_updates) == (1e-4, 5e-4, 5000)
    assert (cfg.online.online_samples, cfg.online.updates_per_round, cfg.online.buffer_size) == (200_000, 300, 1000)
    assert (cfg.g_eval, cfg.online.g_online, cfg.model.eval_context_len) == (3600, 7200, 5)
    assert not cfg.model.positional_embedding and cfg.model.dropout == 0.1 and cfg.model.activation == "relu"
    off = make_config("hopper-medium", "offline", "paper")
    assert off.pretrain_updates == 100_000 and off.model.eval_context_len == 20 and off.model.positional_embedding
    diverse = make_config("antmaze-umaze-diverse", "online", "paper")
    assert diverse.model.embed_dim == 1024 and diverse.online.buffer_size == 1500 and diverse.rtg_scale == 1.0


def test_cpu_and_smoke_presets_are_smaller_and_keep_the_algorithm():
    paper, cpu, smoke = (make_config("walker2d-medium", "online", p) for p in ("paper", "cpu", "smoke"))
    assert cpu.model.embed_dim < paper.model.embed_dim and smoke.model.embed_dim < cpu.model.embed_dim
    assert cpu.online.online_samples == paper.online.online_samples // 40
    assert cpu.online.buffer_size == paper.online.buffer_size // 40
    assert cpu.pretrain_updates == paper.pretrain_updates // 2
    assert cpu.optim.lr == paper.optim.lr and cpu.online.g_online == paper.online.g_online
    assert cpu.online.updates_per_round == paper.online.updates_per_round
    assert cpu.model.n_heads == paper.model.n_heads and cpu.model.context_len == paper.model.context_len


def test_cpu_preset_raises_small_lamb_rates_for_pretraining_and_shortens_offline_only_runs():
    online, offline = make_config("hopper-medium", "online", "cpu"), make_config("hopper-medium", "offline", "cpu")
    assert make_config("hopper-medium", "online", "paper").optim.lr == 1e-4 and online.optim.lr == 1e-3
    assert make_config("hopper-medium-replay", "online", "cpu").optim.lr == 2e-3  # above the floor: kept
    # finetuning runs at the paper's rate where the floor raised the pretraining rate, nowhere else
    assert online.online.lr == 1e-4 and offline.online.lr is None
    assert make_config("hopper-medium-replay", "online", "cpu").online.lr is None
    assert make_config("hopper-medium", "online", "paper").online.lr is None
    assert make_config("hopper-medium", "online", "cpu", {"online.lr": 5e-4}).online.lr == 5e-4
    assert (online.pretrain_updates, offline.pretrain_updates, offline.online.online_samples) == (2500, 2500, 0)
    assert make_config("antmaze-umaze-diverse", "online", "cpu").model.embed_dim == 2 * online.model.embed_dim


def test_cpu_antmaze_budgets_are_the_sizing_protocols_and_locomotion_keeps_its_own():
    """PROTOCOL-antmaze-sizing-cpu.md's decision: on both AntMaze rows DT, ODT's offline protocol
    and ODT's pretraining run 2e4 updates (8x the preset's 2500; ODT's pretraining was 7000 / 2),
    evaluated every 2500; the cpu preset elsewhere, and the paper preset, are unchanged."""
    from baselines.dt import dt_config
    for d in ("antmaze-umaze", "antmaze-umaze-diverse"):
        configs = (make_config(d, "offline", "cpu"), make_config(d, "online", "cpu"), dt_config(d, "cpu"))
        assert [(c.pretrain_updates, c.eval_every_updates) for c in configs] == [(20_000, 2500)] * 3
        assert configs[1].online.online_samples == 5000 and configs[0].online.online_samples == 0
        assert make_config(d, "online", "paper").pretrain_updates == 7000
        assert make_config(d, "offline", "paper").pretrain_updates == 100_000
        # the amendment of 2026-11-29: 20 episodes at the evaluations that do not end a phase
        assert [(c.eval_episodes, c.eval_episodes_interim) for c in configs] == [(100, 20)] * 3
        assert make_config(d, "online", "paper").eval_episodes_interim == 0
    expected = {"hopper-medium": (2500, 2500), "walker2d-medium": (2500, 5000), "ant-medium-replay": (2500, 5000)}
    for d, (offline, online) in expected.items():
        assert make_config(d, "offline", "cpu").pretrain_updates == offline == dt_config(d, "cpu").pretrain_updates
        assert make_config(d, "online", "cpu").pretrain_updates == online
        assert make_config(d, "online", "cpu").eval_every_updates == 1000
        assert make_config(d, "online", "cpu").eval_episodes_interim == 0 == dt_config(d, "cpu").eval_episodes_interim


def test_cpu_200k_preset_is_cpu_with_the_papers_online_phase():
    """The cpu model, batch, rates and pretraining; the paper's 200k samples and buffer; an
    evaluation every 10 rounds, so >= 20 points even if every episode ran 1000 steps. Offline-only
    runs (DT, ODT's offline protocol) are the cpu preset's; IQL keeps the cpu offline phase and
    runs the published online one; SAC runs the paper's counts."""
    import dataclasses

    from baselines.dt import dt_config
    from baselines.iql import iql_config
    from baselines.sac import sac_config
    from rlbase.config import to_dict
    from rlbase.presets import CPU_200K_EVAL_EVERY_ROUNDS
    from rlbase.protocol import phase_evaluations
    for d in ("hopper-medium", "walker2d-medium", "antmaze-umaze-diverse"):
        cpu, big, paper = (make_config(d, "online", p) for p in ("cpu", "cpu-200k", "paper"))
        assert (big.online.online_samples, big.online.buffer_size) == (paper.online.online_samples, paper.online.buffer_size)
        assert big.online.updates_per_round == paper.online.updates_per_round == 300
        assert big.online.eval_every_rounds == CPU_200K_EVAL_EVERY_ROUNDS
        same = dict(to_dict(big), online=to_dict(cpu)["online"], checkpoint_every_updates=cpu.checkpoint_every_updates)
        assert same == to_dict(cpu)  # nothing else differs from the cpu preset
        fewest_rounds = big.online.online_samples // big.model.max_ep_len  # every episode as long as it can be
        assert phase_evaluations(fewest_rounds, big.online.eval_every_rounds) >= 20
        assert make_config(d, "offline", "cpu-200k") == make_config(d, "offline", "cpu")
        assert dt_config(d, "cpu-200k") == dt_config(d, "cpu")
    iql, iql_cpu = iql_config("hopper-medium", "cpu-200k"), iql_config("hopper-medium", "cpu")
    assert (iql.offline_updates, iql.online_samples, iql.online_window) == (iql_cpu.offline_updates, 200_000, 0)
    assert iql.online_samples // iql.eval_every_samples >= 20
    sac = sac_config("hopper-medium", "cpu-200k")
    assert dataclasses.replace(sac, preset="paper") == sac_config("hopper-medium", "paper")


def test_overrides_and_errors_name_the_field():
    cfg = make_config("hopper-medium", "online", "smoke", {"model.embed_dim": "64", "online.hindsight_relabel": "off"})
    assert cfg.model.embed_dim == 64 and cfg.online.hindsight_relabel is False
    with pytest.raises(ConfigError, match="model.embed_dimm"):
        make_config("hopper-medium", "online", "smoke", {"model.embed_dimm": 3})
    with pytest.raises(ConfigError, match="optim.lr=-1"):
        make_config("hopper-medium", "online", "smoke", {"optim.lr": -1})
    with pytest.raises(ConfigError, match="model.n_heads"):
        make_config("hopper-medium", "online", "smoke", {"model.n_heads": 3})
    with pytest.raises(ConfigError, match="known: .*hopper-medium"):
        make_config("hopper-easy", "online", "smoke")
    with pytest.raises(ConfigError, match="unknown preset 'gpu'"):
        make_config("hopper-medium", "online", "gpu")
    assert len(known_datasets()) == 10


def test_config_dict_round_trip():
    cfg = make_config("ant-medium", "online", "cpu")
    assert from_dict(to_dict(cfg)) == cfg


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert odt_main(["--dataset", "random"]) == 2
    assert "needs --env" in capsys.readouterr().err
    assert odt_main(["--env", "Hopper-v5", "--set", "optim.lr=abc"]) == 2
    assert "optim.lr" in capsys.readouterr().err


def test_cli_prints_every_evaluation_and_the_final_one_when_quiet(capsys):
    # --quiet drops the progress bars, not the results (an offline run used to print nothing at all)
    assert odt_main(["--env", "Hopper-v5", "--preset", "smoke", "--protocol", "offline", "--quiet",
                     "--random-steps", "300", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    evals = [line for line in out.splitlines() if line.startswith("[pretrain] updates")]
    assert len(evals) == 2 and "updates 20 " in evals[0] and "updates 40 " in evals[1]
    assert "final: return" in out and "after 40 updates and 0 online samples" in out
