"""``python -m odt`` reads named datasets through a loader it is given or finds installed (entry
point group ``odt_bench.dataset_loaders``), so odt imports no harness; the harness registers its
own loader in pyproject.toml."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import gymnasium as gym
import pytest

import odt.__main__ as cli
from benchmarks.datasets.for_odt import load_for_odt
from rlbase.config import ConfigError
from rlbase.envs import random_policy_episodes
from rlbase.trajectories import Trajectories

REPO = Path(__file__).resolve().parent.parent


def _entry_point(name: str, value: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=value, group=cli.LOADER_GROUP)


def test_an_injected_loader_reads_the_dataset_and_gives_the_row(capsys):
    asked = []

    def loader(name):
        asked.append(name)
        make_env = lambda: gym.make("Hopper-v5")  # noqa: E731
        data = Trajectories.from_episodes(random_policy_episodes(make_env, 200, seed=1))
        return data, make_env, None, "walker2d-medium"

    argv = ["--dataset", "my-own-data", "--preset", "smoke", "--protocol", "offline", "--quiet",
            "--set", "pretrain_updates=2", "--set", "eval_every_updates=2", "--set", "eval_episodes=1"]
    assert cli.main(argv, loader=loader) == 0
    assert asked == ["my-own-data"]
    out = capsys.readouterr().out
    assert '"g_eval": 5000.0' in out  # walker2d-medium's row (Table C.4), not hopper-medium's 3600


def test_without_a_loader_the_error_names_the_dataset_and_the_group(monkeypatch, capsys):
    monkeypatch.setattr(cli, "installed_loaders", lambda: {})
    assert cli.main(["--dataset", "hopper-medium", "--preset", "smoke"]) == 2
    err = capsys.readouterr().err
    assert "'hopper-medium'" in err and cli.LOADER_GROUP in err and "pip install -e ." in err


def test_bad_values_fail_before_the_loader_reads_anything(capsys):
    def loader(name):
        raise AssertionError("the config should have failed first")

    assert cli.main(["--dataset", "hopper-medium", "--set", "optim.lr=abc"], loader=loader) == 2
    assert "optim.lr" in capsys.readouterr().err


def test_the_installed_loader_is_found_by_its_entry_point(monkeypatch):
    one = {"bench": _entry_point("bench", "benchmarks.datasets.for_odt:load_for_odt")}
    monkeypatch.setattr(cli, "installed_loaders", lambda: one)
    assert cli.find_loader("hopper-medium") is load_for_odt
    two = {**one, "other": _entry_point("other", "rlbase.envs:random_policy_episodes")}
    monkeypatch.setattr(cli, "installed_loaders", lambda: two)
    with pytest.raises(ConfigError, match="--loader"):
        cli.find_loader("hopper-medium")
    assert cli.find_loader("hopper-medium", "bench") is load_for_odt
    with pytest.raises(ConfigError, match="'nosuch': not installed"):
        cli.find_loader("hopper-medium", "nosuch")


def test_pyproject_registers_the_harness_loader():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (value,) = project["entry-points"][cli.LOADER_GROUP].values()
    assert _entry_point("benchmarks", value).load() is load_for_odt
