"""TensorBoard and W&B views of a run's curve.jsonl (``pytest -k "tensorboard or wandb"``): the live
``--log`` option of the runner and the exporter of existing results, read back with TensorBoard's
own event reader and by parsing the W&B offline run's records, and checked name by name, step by
step and value by value against curve.jsonl. The expected names are built here from the rows
(``<phase>/<key>``, ``<phase>/g_eval=<m>x/<key>`` for a sweep row, at step ``updates``), not by
the code under test."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks.experiments import RunSpec, expand
from benchmarks.trackers.export import main as export_main
from benchmarks.trackers.loggers import open_loggers, require_loggers
from rlbase.config import ConfigError

ROWS = [
    {"phase": "pretrain", "updates": 10, "online_samples": 0, "score_mean": 12.5, "return_mean": 400.25,
     "returns": [399.0, 401.5], "lambda": 0.1, "rounds": 0},
    {"phase": "pretrain", "updates": 20, "online_samples": 0, "score_mean": 20.0, "return_mean": 640.5,
     "returns": [640.5], "lambda": 0.09, "rounds": 0},
    {"phase": "sweep-pretrained", "g_eval_multiple": 2.0, "updates": 20, "online_samples": 0,
     "score_mean": 18.0, "return_mean": 580.0, "g_eval": 7200.0},
    {"phase": "online", "updates": 35, "online_samples": 300, "score_mean": 30.5, "return_mean": 980.0,
     "exploration_rtg": 7200.0, "lambda": 0.05, "rounds": 2},
]


def expected(rows: list[dict]) -> dict[str, dict[int, float]]:
    """{name: {step: value}} that a faithful view of ``rows`` shows."""
    out: dict[str, dict[int, float]] = {}
    for row in rows:
        prefix = row["phase"] + (f"/g_eval={row['g_eval_multiple']:g}x" if "g_eval_multiple" in row else "")
        for key, value in row.items():
            if key in ("phase", "g_eval_multiple", "updates") or isinstance(value, (list, str, bool)):
                continue
            out.setdefault(f"{prefix}/{key}", {})[row["updates"]] = float(value)
    return out


def read_tensorboard(directory: Path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def read_wandb(directory: Path) -> tuple[dict[str, dict[int, float]], str]:
    """({name: {step: value}}, run name) from the one offline run under ``directory``: its .wandb
    file is a LevelDB-style log (32 KiB blocks of checksum, length, type chunks) of protobuf Records."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = directory.glob("wandb/offline-run-*/run-*.wandb")
    data, pos, buf, block = path.read_bytes(), 7, b"", 32768
    assert data[:4] == b":W&B"
    out: dict[str, dict[int, float]] = {}
    name, ended = "", False
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        buf += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind not in (1, 4):  # FULL or LAST chunk ends a record
            continue
        record = pb.Record()
        record.ParseFromString(buf)
        buf = b""
        if record.WhichOneof("record_type") == "run":
            name = record.run.display_name
        ended = ended or record.WhichOneof("record_type") == "exit"
        if record.WhichOneof("record_type") == "history":
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            for key, value in items.items():
                if not key.startswith("_") and key != "updates":
                    out.setdefault(key, {})[record.history.step.num] = float(value)
    assert ended, f"{path}: no exit record; the logger returned before W&B closed the file"
    return out, name


def assert_same(seen: dict[str, dict[int, float]], want: dict[str, dict[int, float]]) -> None:
    assert sorted(seen) == sorted(want)
    for name, points in want.items():
        assert sorted(seen[name]) == sorted(points), name
        for step, value in points.items():
            assert seen[name][step] == pytest.approx(value, rel=1e-6), (name, step)


def _fake_results(root: Path) -> list[Path]:
    runs = []
    for seed, rows in ((0, ROWS), (1, ROWS[:2])):
        spec = RunSpec("table1", "odt", "hopper-medium", seed, "cpu")
        directory = rec.run_dir(root, spec)
        directory.mkdir(parents=True)
        rec.write_json(directory / rec.SPEC, spec.to_dict())
        rec.write_curve(directory / rec.CURVE, rows)
        runs.append(directory)
    return runs


def test_tensorboard_export_replays_every_run_of_a_results_tree(tmp_path, capsys):
    runs = _fake_results(tmp_path / "results")
    source = tmp_path / "results" / "cpu" / "table1"
    assert export_main(["--results", str(source), "--to", "tensorboard", "--out", str(tmp_path / "tb")]) == 0
    assert "tensorboard --logdir" in capsys.readouterr().out
    for run in runs:
        assert_same(read_tensorboard(tmp_path / "tb" / run.name), expected(rec.read_curve(run / rec.CURVE)))
    assert rec.read_curve(runs[0] / rec.CURVE) == ROWS  # the records are only read


def test_wandb_export_writes_offline_runs_matching_the_curve(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline is the default
    monkeypatch.setenv("WANDB_SILENT", "true")
    runs = _fake_results(tmp_path / "results")
    assert export_main(["--results", str(tmp_path / "results"), "--to", "wandb", "--out", str(tmp_path / "wb")]) == 0
    for run in runs:
        seen, name = read_wandb(tmp_path / "wb" / run.relative_to(tmp_path / "results"))
        assert name == run.name
        assert_same(seen, expected(rec.read_curve(run / rec.CURVE)))


def test_tensorboard_resumed_run_shows_the_checkpointed_curve_once(tmp_path):
    live = open_loggers(["tensorboard"], tmp_path, "run", ROWS[:1])
    for row in ROWS[1:]:
        live.log(row)
    live.close()
    resumed = open_loggers(["tensorboard"], tmp_path, "run", ROWS[:2])  # resumed from an earlier checkpoint
    resumed.log(ROWS[3])
    resumed.close()
    assert_same(read_tensorboard(tmp_path / "tensorboard"), expected([*ROWS[:2], ROWS[3]]))


def test_tensorboard_and_wandb_log_live_through_the_runner(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    argv = ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium", "--methods", "odt",
            "--executor", "debug", "--quiet", "--results", str(tmp_path / "results"),
            "--tables-dir", str(tmp_path / "tables"), "--log", "tensorboard", "--log", "wandb"]
    assert run_cli.main(argv) == 0, capsys.readouterr()
    (spec,) = expand("table1", "smoke", seeds=1, datasets=["hopper-medium"], methods=["odt"])
    directory = rec.run_dir(tmp_path / "results", spec)
    want = expected(rec.read_curve(directory / rec.CURVE))
    assert "pretrain/score_mean" in want and "online/score_mean" in want
    assert_same(read_tensorboard(directory / "tensorboard"), want)
    seen, name = read_wandb(directory / "wandb")
    assert name == spec.run_id
    assert_same(seen, want)


def test_tensorboard_or_wandb_missing_or_unknown_is_a_clear_error(monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "wandb" else real(n, *a))
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[wandb\]'"):
        require_loggers(["wandb"])
    with pytest.raises(ConfigError, match="tensorboard, wandb"):
        require_loggers(["mlflow"])
    assert export_main(["--results", str(tmp_path), "--to", "tensorboard", "--out", str(tmp_path / "o")]) == 2
    assert "no run directory" in capsys.readouterr().err


def test_closing_the_wandb_logger_leaves_a_callers_own_run_working(tmp_path, monkeypatch):
    """A user's own W&B run, open in the same process, still logs and finishes after our logger
    closes (a service teardown would end it with AlreadyJoinedError); once the caller finishes and
    tears down, our run's offline file is complete."""
    import wandb

    from benchmarks.trackers.loggers import WandbLogger, WandbSettings

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "user").mkdir()
    user = wandb.init(project="user", mode="offline", dir=str(tmp_path / "user"), reinit="create_new",
                      settings=wandb.Settings(silent=True, console="off"))
    ours = WandbLogger(WandbSettings(tmp_path / "ours", "ours-run"))
    ours.log(ROWS[0])
    ours.close()
    user.log({"user/x": 1.0})
    user.finish()
    wandb.teardown()
    seen, name = read_wandb(tmp_path / "ours")
    assert name == "ours-run"
    assert seen["pretrain/score_mean"] == {10: 12.5}
