"""The component check (benchmarks/official/components.py): its parameter map and layouts against
our code alone, and, where ``ODT_OFFICIAL_SRC`` holds the official online-dt code, the two codes
side by side on the same batch and weights (skipped without it: CI has no official code).

Tolerances are the module's: 1e-10 relative in float64 (both codes agree to ~1e-15; a wrong
operation moves results by > 1e-3), 1e-5 on float32 loss terms and 1e-4 on the norm of a float32
update (LAMB's first step turns float32 rounding of near-zero gradients into visible update noise).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.official import components as C
from odt.config import make_config
from odt.model import DecisionTransformer
from rlbase.config import ConfigError

SOURCE = os.environ.get("ODT_OFFICIAL_SRC", "")
needs_official = pytest.mark.skipif(not SOURCE or not (Path(SOURCE) / "main.py").is_file(),
                                    reason="ODT_OFFICIAL_SRC does not name the official online-dt code")


# ----- without the official code ---------------------------------------------------------------

@pytest.mark.parametrize(("n_layers", "positional"), [(1, False), (3, False), (3, True), (4, True)])
def test_parameter_map_is_a_bijection_onto_our_model(n_layers, positional):
    cfg = make_config("hopper-medium", "online", "cpu",
                      {"model.n_layers": n_layers, "model.positional_embedding": positional})
    model = DecisionTransformer(C.OBS_DIM, C.ACT_DIM, cfg.model)
    C.check_onto(C.shapes(model), C.parameter_map(n_layers, positional))


def test_map_check_names_the_unmapped_parameter():
    mapping = {"x.weight": C.Link("a.weight", transpose=True)}
    C.check_map({"x.weight": (3, 2)}, {"a.weight": (2, 3)}, mapping)
    with pytest.raises(C.MapError, match="y.bias"):
        C.check_map({"x.weight": (3, 2), "y.bias": (2,)}, {"a.weight": (2, 3)}, mapping)
    with pytest.raises(C.MapError, match="b.weight"):
        C.check_map({"x.weight": (3, 2)}, {"a.weight": (2, 3), "b.weight": (1,)}, mapping)
    with pytest.raises(C.MapError, match="shapes disagree"):
        C.check_map({"x.weight": (2, 3)}, {"a.weight": (2, 3)}, mapping)
    C.check_map({"x.weight": (3, 2), "transformer.wte.weight": (1, 2)}, {"a.weight": (2, 3)}, mapping)


def test_layouts_move_real_steps_to_real_steps():
    """Left padding -> right padding keeps the real steps in order; the noise permutation is the
    inverse on real steps (each code's step j draws the same normal)."""
    k, n = 5, torch.tensor([5, 3, 1])
    official = torch.arange(3 * k, dtype=torch.float64).view(3, k, 1)
    ours = C.to_our_layout(official, n)
    assert ours[1, :3, 0].tolist() == [7.0, 8.0, 9.0] and ours[1, 3:, 0].tolist() == [7.0, 7.0]
    eps = torch.randn(3, k, 2)
    back = C.roll_to_official(eps, n)
    real = torch.arange(k)[None, :] < n[:, None]
    assert torch.equal(C.to_our_layout(back, n)[real], eps[real])
    assert torch.equal(back.sort(dim=1).values, eps.sort(dim=1).values)  # a permutation per row


def test_cli_without_the_official_code_says_how_to_set_it_up(monkeypatch, capsys):
    monkeypatch.delenv("ODT_OFFICIAL_SRC", raising=False)
    assert C.main([]) == 2
    assert "ODT_OFFICIAL_SRC" in capsys.readouterr().err


def test_synthetic_data_takes_each_datasets_shapes():
    walker = C.synthetic_data(0, "walker2d-medium")
    assert (walker.obs_dim, walker.act_dim) == (17, 6) and list(walker.lengths) == list(C.LENGTHS)
    hopper = C.synthetic_data(0, "hopper-medium")
    assert np.array_equal(hopper.observations, C.synthetic_hopper(0).observations)
    with pytest.raises(ConfigError, match="halfcheetah-medium"):
        C.synthetic_data(0, "halfcheetah-medium")


def test_walker2d_component_config_is_the_cpu_presets_without_dropout():
    cfg = C.component_config(0, dataset="walker2d-medium")
    assert (cfg.optim.lr, cfg.optim.weight_decay, cfg.g_eval, cfg.online.g_online) == (1e-3, 1e-3, 5000.0, 10000.0)
    assert cfg.model.dropout == 0.0 and C.dropout_config(cfg).model.dropout == 0.1


def test_shared_masks_give_our_last_block_the_state_rows():
    """Our last block computes the state tokens only (rows 1, 4, 7, ... of 3K): its multipliers
    are the official ones at those rows, the attention weights' (B * heads) rows in head order."""
    b, h, t, d = 2, 2, 6, 4
    masks = C.SharedMasks(0, 0.5, b, h, t, d)
    ones = torch.ones(b, t, d, dtype=torch.float64)
    full = masks.official(("mlp output", 0), ones)
    assert torch.equal(masks.ours(("mlp output", 0), ones), full)
    assert torch.equal(masks.ours(("mlp output", 0), ones[:, 1::3]), full[:, 1::3])
    weights = masks.official(("attention weights", 2), torch.ones(b, h, t, t, dtype=torch.float64))
    ours = masks.ours(("attention weights", 2), torch.ones(b * h, t // 3, t, dtype=torch.float64))
    assert torch.equal(ours.view(b, h, t // 3, t), weights[:, :, 1::3])
    kept = set(full.unique().tolist())
    assert kept <= {0.0, 2.0} and len(kept) == 2  # inverted dropout at p = 0.5
    assert masks.used == {"official": [("mlp output", 0), ("attention weights", 2)],
                          "ours": [("mlp output", 0)] * 2 + [("attention weights", 2)]}


# ----- with the official code ------------------------------------------------------------------

@pytest.fixture(scope="module")
def report() -> C.Report:
    torch.set_num_threads(1)
    return C.compare(Path(SOURCE), seed=0)


@pytest.fixture(scope="module")
def walker_report() -> C.Report:
    torch.set_num_threads(1)
    return C.compare(Path(SOURCE), seed=0, dataset="walker2d-medium")


KNOWN = {  # the differences the check must find, and only these
    ("with padding", "data: actions"),
    *(("with padding", check) for check in (
        "entropy term", "loss at the same temperature", "gradients of every mapped parameter",
        "gradients of the entropy term alone", "trainer step: entropy term", "trainer step: loss",
        "trainer step: update (delta parameters)", "trainer step: parameters after",
        "trainer step: temperature gradient lambda*(H - target)")),
}


@needs_official
def test_every_judged_comparison_is_within_its_tolerance(report):
    failing = [f"{d.batch} / {d.check}: {d.judged} {getattr(d, d.judged):.2e} > {d.tol:.0e}"
               for d in report.rows if d.ok is False]
    assert not failing, "\n".join(failing)


@needs_official
def test_only_the_known_differences_are_unjudged(report):
    assert {(d.batch, d.check) for d in report.rows if d.ok is None} == KNOWN


@needs_official
def test_the_padded_difference_is_the_entropy_average_alone(report):
    """On the padded batch the official entropy term differs visibly from ours; its own per-position
    samples averaged over the real positions only, and the gradients of its loss so averaged,
    agree with ours to float64 precision."""
    rows = {d.check: d for d in report.rows if d.batch == "with padding" and d.dtype == "float64"}
    assert rows["entropy term"].max_abs > 1e-3
    assert rows["entropy term, official samples averaged over real positions only"].ok
    assert rows["gradients, official loss with its entropy over real positions only"].ok


@needs_official
def test_the_map_covers_the_official_model(report):
    assert set(report.official_only) == set(C.OFFICIAL_ONLY)
    assert report.mapped == len(C.parameter_map(3, positional=False))


@needs_official
def test_walker2d_differs_only_where_hopper_does(walker_report):
    """At walker2d-medium's config and shapes (17-dim states, 6-dim actions, lr 1e-3, weight decay
    1e-3) the same comparisons pass and the same known differences remain."""
    failing = [f"{d.batch} / {d.check}" for d in walker_report.rows if d.ok is False]
    assert not failing, "\n".join(failing)
    assert {(d.batch, d.check) for d in walker_report.rows if d.ok is None} == KNOWN


@needs_official
def test_training_mode_with_shared_dropout_masks_agrees(report, walker_report):
    for rep in (report, walker_report):
        rows = [d for d in rep.rows if "dropout" in d.check]
        assert len(rows) == 6 and all(d.ok for d in rows)
