"""Numbers unchanged: every method's short seeded run reproduces its golden record (tests/golden/).

Bit for bit on the machine that made the records (same CPU model, kernel level, library versions
and threads: ``scripts/golden.py``'s IDENTITY), elsewhere within its measured TOLERANCE; a changed
formula or seed stream fails either way. Regenerating a record
(``python -m scripts.golden write METHOD --force --reason '...'``) is legitimate only in a commit
of its own that must change a number and says which and why; a refactor never regenerates one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from scripts import golden as G


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("golden")  # one smoke dataset, made by the first run, for all


def test_every_method_has_its_record_and_every_record_its_method():
    assert sorted(p.stem for p in G.GOLDEN_DIR.glob("*.json")) == sorted(G.METHODS)


@pytest.mark.parametrize("method", G.METHODS)
def test_the_golden_run_reproduces_its_record(method, workdir):
    golden = G.read_golden(method)
    fresh = G.run_record(method, workdir)
    mode, problems = G.verdict(golden, fresh)
    assert not problems, G.explain(method, golden, fresh, mode, problems)


# ----- the comparison itself, on records made up here (no runs) ----------------------------------
def _record(scale: float = 1.0, made_by: dict | None = None, last_parameter: float | None = None) -> dict:
    rows = [{"phase": "pretrain", "updates": 40, "loss": 0.5 * scale, "returns": [10.0, 12.0 * scale],
             "advantage_mean": -0.02 * scale, "wall_time": 1.0},
            {"phase": "online", "updates": 80, "loss": 0.25, "returns": [20.0, 22.0], "advantage_mean": 0.01}]
    last = 3.0 * scale if last_parameter is None else last_parameter
    params = G.parameter_summary({"w": torch.tensor([1.0, -2.0, last])})
    return {"rows": G._rows(rows), "parameters": params, "config": {"a": 1}, "data": "d",
            "made_by": made_by or {k: "here" for k in G.IDENTITY}}


def test_on_the_same_machine_one_ulp_fails():
    golden = _record()
    assert G.verdict(golden, _record()) == ("exact", [])
    mode, problems = G.verdict(golden, _record(float(np.nextafter(1.0, 2.0)),
                                               last_parameter=float(np.nextafter(np.float32(3), np.float32(4)))))
    assert mode == "exact" and any("loss" in p for p in problems) and any("parameters" in p for p in problems)


def test_elsewhere_within_tolerance_passes_and_beyond_it_fails():
    golden = _record()
    elsewhere = {**golden["made_by"], "cpu_model": "another"}
    assert G.verdict(golden, _record(1 + G.TOLERANCE / 10, elsewhere)) == ("tolerance", [])
    mode, problems = G.verdict(golden, _record(1 + G.TOLERANCE * 10, elsewhere))
    assert mode == "tolerance" and any(p.startswith("loss:") for p in problems)
    # a near-zero field is judged on its field's scale, not on its own value
    assert G.distance(golden, _record(1.5))["advantage_mean"] == pytest.approx(0.01 / 0.02)


def test_structure_must_match_even_within_tolerance():
    golden, fresh = _record(), _record(made_by={k: "elsewhere" for k in G.IDENTITY})
    fresh["rows"] = fresh["rows"][:1]
    fresh["rows"][0].pop("loss")
    fresh["rows"][0]["phase"] = "online"
    problems = G.verdict(golden, fresh)[1]
    assert "2 curve rows recorded, 1 now" in problems
    assert any("'loss' no longer recorded" in p for p in problems) and any("row 0 phase" in p for p in problems)


def test_clock_fields_are_left_out_and_new_fields_allowed():
    golden = _record()
    assert "wall_time" not in golden["rows"][0]
    fresh = _record()
    fresh["rows"][0]["new_diagnostic"] = 1.0
    assert G.verdict(golden, fresh) == ("exact", [])


def test_the_parameter_digest_ignores_names_order_layout_and_optimizer_state():
    a, b = torch.arange(6.0).reshape(2, 3), torch.tensor([-1.5, 0.0])
    adam = torch.optim.Adam([torch.nn.Parameter(torch.ones(2))]).state_dict()
    one = G.parameter_summary({"net": {"w": a, "b": b}, "opt": adam, "step": torch.tensor(3.0, dtype=torch.float64)})
    other = G.parameter_summary({"x": [b.flip(0), a.reshape(-1)], "y": -0.0 * torch.ones(0)})
    assert one == other and one["elements"] == 8
    assert G.parameter_summary({"w": a + 1e-6})["digest"] != G.parameter_summary({"w": a})["digest"]


def test_a_record_is_not_overwritten_unless_told(tmp_path):
    record = {**_record(), "method": "m"}
    path = G.write_golden(record, "first records", directory=tmp_path)
    assert json.loads(path.read_text())["reason"] == "first records"
    with pytest.raises(G.GoldenError, match="--force"):
        G.write_golden(record, "again", directory=tmp_path)
    with pytest.raises(G.GoldenError, match="--reason"):
        G.write_golden(record, " ", force=True, directory=tmp_path)
    G.write_golden(record, "a formula had to change", force=True, directory=tmp_path)
    with pytest.raises(G.GoldenError, match="write nope"):
        G.read_golden("nope", tmp_path)
