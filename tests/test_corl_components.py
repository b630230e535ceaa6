"""The IQL component check's own pieces (the name map, the report's sections, CORL's update order
rebuilt from our functions), and, when ODT_CORL_SRC names CORL's source, the check itself on toy
data: our losses and gradients equal CORL's."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from baselines.iql import GaussianActor, IQLConfig, TwinQ, ValueNet, transitions
from benchmarks.corl import components as comp
from benchmarks.corl.driver import SOURCE_ENV
from tests.conftest import toy_trajectories

needs_corl = pytest.mark.skipif(not os.environ.get(SOURCE_ENV), reason=f"{SOURCE_ENV} is not set (CORL's source)")


@pytest.mark.parametrize("kind, corl_names, net", [
    ("q", ["q1.net.0.weight", "q2.net.4.bias"], TwinQ(4, 2, 8, 2)),
    ("v", ["v.net.0.weight", "v.net.4.bias"], ValueNet(4, 8, 2)),
    ("actor", ["net.net.2.weight", "log_std"], GaussianActor(4, 2, 8, 2, -5.0, 2.0)),
])
def test_corl_names_map_onto_our_parameters(kind, corl_names, net):
    ours = dict(net.named_parameters())
    for name in corl_names:
        assert comp.our_key(kind, name) in ours


def test_the_section_is_replaced_and_the_others_kept(tmp_path):
    path = tmp_path / "report.md"
    comp.write_section(f"{comp.SECTION}\n\nfirst\n", path)
    text = path.read_text()
    assert text.startswith("# ") and "first" in text and all(h in text for h in comp.OTHER_SECTIONS)
    path.write_text(text.replace("(not yet written)", "theirs", 1))
    comp.write_section(f"{comp.SECTION}\n\nsecond\n", path)
    text = path.read_text()
    assert "second" in text and "first" not in text and "theirs" in text
    assert text.index(comp.SECTION) < text.index(comp.OTHER_SECTIONS[0])


def _toy_agent_batch():
    from tests.test_corl_driver import corridor

    data = toy_trajectories([6, 5, 7, 4], obs_dim=1, act_dim=1, seed=3)
    cfg = IQLConfig(batch_size=8, offline_updates=10, online_samples=0, seed=0, device="cpu")
    trans = transitions(data)
    batch = {k: torch.as_tensor(np.asarray(v[:8], dtype=np.float32)) for k, v in trans.items()}
    return cfg, data, corridor, batch


def test_corl_order_with_unmoved_value_net_is_our_update():
    """With the V step disabled, CORL's order reads the same V as ours does: the two updates agree."""
    from baselines.iql import IQLAgent

    cfg, data, make_env, batch = _toy_agent_batch()
    a, b = IQLAgent(cfg, data, make_env, progress=False), IQLAgent(cfg, data, make_env, progress=False)
    b.load_state_dict(a.state_dict())
    # V frozen in both; the critic by SGD, at twice the rate where CORL's order halves the Q loss
    opts = {"v": torch.optim.SGD(b.value.parameters(), lr=0.0),
            "q": torch.optim.SGD(b.critic.parameters(), lr=0.2),
            "actor": torch.optim.Adam(b.actor.parameters(), lr=cfg.actor_lr)}
    for group in a.value_opt.param_groups:
        group["lr"] = 0.0
    a.critic_opt = torch.optim.SGD(a.critic.parameters(), lr=0.1)
    a.update(batch)
    comp.corl_order_update(b, opts, batch, 0)
    for net in ("value", "critic", "actor", "target_critic"):
        for (name, p), q in zip(getattr(a, net).named_parameters(), getattr(b, net).parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"{net}.{name}")
    a.close()
    b.close()


@needs_corl
def test_losses_and_gradients_equal_corls_on_toy_data():
    from benchmarks.corl.adapters import corl_modules
    from benchmarks.corl.driver import SCRIPTS, locate_source

    cfg, data, make_env, batch = _toy_agent_batch()
    with corl_modules({}, lambda d, s: None) as load:
        corl = load(locate_source().path / SCRIPTS["offline"], "corl_iql_components_test")
        table = comp.losses_and_gradients(corl, cfg, comp.Data("toy", data, make_env, ""), batch, seed=0)
    for name, _, _, _, loss_rel, _, grad_rel in table.rows:
        assert float(loss_rel) < 1e-5 and float(grad_rel) < 1e-5, name
