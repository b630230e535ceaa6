"""The trainers' shared phase mechanics (rlbase.training.SafePoints): the checkpoint cadence's
crossing rule, a stop that raises only after its checkpoint, and a save that never replaces the
last good checkpoint with non-finite state."""

from __future__ import annotations

import pytest
import torch

from rlbase.training import SafePoints, StopRequested, TrainingDiverged, parameters_finite


@pytest.mark.parametrize("before, after, every, expected", [
    (19, 20, 20, True),   # one step onto a multiple
    (20, 21, 20, False),  # one step off it
    (0, 1, 1, True),      # every step is a boundary
    (15, 45, 20, True),   # a round of 30 passes 20 and 40
    (21, 39, 20, False),  # a round inside one interval
    (40, 59, 20, False),  # starting on a boundary does not count it again
    (39, 60, 20, True),   # onto 40 and 60
    (0, 0, 5, False),     # no progress
])
def test_crossed_is_passing_or_reaching_a_multiple(before, after, every, expected):
    assert SafePoints.crossed(before, after, every) is expected


def test_crossed_in_steps_of_one_is_landing_on_a_multiple():
    for every in (1, 3, 7):
        hits = [n for n in range(1, 30) if SafePoints.crossed(n - 1, n, every)]
        assert hits == list(range(every, 30, every))


def test_a_stop_raises_only_when_requested_and_after_its_checkpoint():
    safe, events = SafePoints(), []
    check = lambda: events.append("check")  # noqa: E731
    safe.save(lambda: events.append("checkpoint"), check)
    safe.stop_if_requested("update 3")  # nothing asked: no stop
    assert events == ["check", "checkpoint"] and not safe.requested

    safe.request()
    assert safe.requested
    safe.save(lambda: events.append("checkpoint"), check)
    with pytest.raises(StopRequested, match=r"^stopped on request at update 4$"):
        safe.stop_if_requested("update 4")
    assert events == ["check", "checkpoint"] * 2
    safe.save(None, check)  # no checkpoint function: the check still runs
    assert events[-1] == "check"


def test_save_refuses_non_finite_state_and_keeps_the_last_checkpoint():
    net = torch.nn.Linear(2, 1)
    kept: list[dict] = []

    def check() -> None:
        if not parameters_finite([net]):
            raise TrainingDiverged("parameters became NaN or inf")

    def checkpoint() -> None:
        kept.append({k: v.clone() for k, v in net.state_dict().items()})

    safe = SafePoints()
    safe.save(checkpoint, check)
    good = kept[-1]
    with torch.no_grad():
        net.weight[0, 1] = float("nan")
    with pytest.raises(TrainingDiverged):
        safe.save(checkpoint, check)
    assert len(kept) == 1 and all(torch.isfinite(v).all() for v in kept[0].values()) and kept[-1] is good


def test_parameters_finite_looks_at_every_parameter_of_every_module():
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)
    assert parameters_finite([a, b]) and parameters_finite([])
    with torch.no_grad():
        b.bias[0] = float("inf")
    assert parameters_finite([a]) and not parameters_finite([a, b])
