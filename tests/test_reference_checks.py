"""The reference checks (benchmarks/reference_checks): they refuse clearly without their source,
write only their own section of the report, and, where the reference code is configured
(``ODT_CLEANRL_SRC``, ``ODT_CORL_SRC``; skipped otherwise), find the components that should match
the same and the known differences different."""

from __future__ import annotations

import os
import re

import pytest

from benchmarks.reference_checks import common, dt_corl, sac_cleanrl
from rlbase.config import ConfigError


@pytest.mark.parametrize("loader, var, script", [
    (sac_cleanrl.load_cleanrl, "ODT_CLEANRL_SRC", "cleanrl/sac_continuous_action.py"),
    (dt_corl.load_corl_dt, "ODT_CORL_SRC", "algorithms/offline/dt.py"),
])
def test_a_check_without_its_source_names_the_variable_and_the_file(loader, var, script, tmp_path):
    with pytest.raises(ConfigError, match=f"{var} is not set.*{script}"):
        loader(environ={})
    with pytest.raises(ConfigError, match=re.escape(f"{var}={tmp_path}: no {script} there")):
        loader(environ={var: str(tmp_path)})


@pytest.mark.parametrize("module", [sac_cleanrl, dt_corl])
def test_the_command_line_refuses_with_exit_2_and_the_variable(module, monkeypatch, capsys):
    monkeypatch.delenv(module.SOURCE_ENV, raising=False)
    assert module.main([]) == 2
    assert module.SOURCE_ENV in capsys.readouterr().out


def test_write_section_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("# Title\n\nintro\n\n## IQL against CORL\n\niql text\n\n## SAC against CleanRL\n\n(to come)\n\n"
                    "## DT against CORL\n\n(to come)\n")
    common.write_section(path, "## SAC against CleanRL", "sac table")
    text = path.read_text()
    assert "iql text" in text and "sac table" in text and "(to come)" in text  # DT's placeholder stays
    assert text.index("## IQL against CORL") < text.index("sac table") < text.index("## DT against CORL")
    common.write_section(path, "## SAC against CleanRL", "sac table")
    assert path.read_text() == text  # idempotent
    common.write_section(path, "## DT against CORL", "dt table")
    assert path.read_text().rstrip().endswith("dt table") and "(to come)" not in path.read_text()


def test_write_section_creates_the_file_and_appends_a_missing_section(tmp_path):
    path = tmp_path / "new" / "report.md"
    common.write_section(path, "## DT against CORL", "dt table")
    common.write_section(path, "## SAC against CleanRL", "sac table")
    text = path.read_text()
    assert text.startswith(common.TITLE) and text.index("dt table") < text.index("## SAC against CleanRL")


def test_findings_table_escapes_pipes():
    table = common.findings_table([common.Finding("a | b", False, "|x|", "why")])
    assert "a \\| b" in table and "**differs**" in table


def _by_component(findings):
    return {f.component: f for f in findings}


def _source(module) -> str | None:
    """Why the check of ``module`` cannot run here (its variable unset, or its file not under it), or None."""
    where = os.environ.get(module.SOURCE_ENV)
    if not where:
        return f"{module.SOURCE_ENV} not set"
    if not os.path.isfile(os.path.join(where, module.SCRIPT)):
        return f"no {module.SCRIPT} under {module.SOURCE_ENV}={where}"
    return None


@pytest.mark.skipif(_source(sac_cleanrl) is not None, reason=str(_source(sac_cleanrl)))
def test_sac_against_cleanrl():
    found = _by_component(sac_cleanrl.run_checks(sac_cleanrl.load_cleanrl()))
    for name in ("networks: actor (mean, bounded log-std)", "networks: twin critics Q(s, a)",
                 "action scaling (tanh onto [low, high]), sampled and mean action",
                 "critic target: min of twin targets, entropy term, (1 - terminated)",
                 "actor loss: mean(alpha log pi - min Q)", "target network update (tau every step)",
                 "initialisation (CleanRL: PyTorch defaults)", "terminals vs truncation"):
        assert found[name].same, found[name]
    for name in ("setting: critic learning rate", "setting: initial temperature", "critic loss",
                 "temperature loss (autotune to target entropy -|A|)"):
        assert not found[name].same and found[name].note, found[name]
    assert "0.500000" in found["critic loss"].measured


@pytest.mark.skipif(_source(dt_corl) is not None, reason=str(_source(dt_corl)))
def test_dt_against_corl():
    found = _by_component(dt_corl.run_checks(dt_corl.load_corl_dt()))
    same = [k for k in found if k.startswith(("windows:", "padding:", "state normalisation", "sampling law",
                                              "forward:", "learning-rate warmup", "AdamW", "three whole updates",
                                              "evaluation rollout"))]
    assert len(same) == 9
    for name in same:
        assert found[name].same, found[name]
    for name in ("activation in the MLPs", "loss: MSE on actions, padding masked", "initialisation",
                 "setting: batch size"):
        assert not found[name].same and found[name].note, found[name]
