"""Shared pretraining (benchmarks/sharing/pretraining.py): every field declared online-only leaves
the end-of-pretraining state unchanged, the key separates what pretraining depends on, and a
run started from another run's pretraining ends exactly where it would have alone. Smoke preset,
everything under tmp_path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.methods import build_agent, method_config
from benchmarks.sharing import pretraining as shared
from odt.train import ODTTrainer
from rlbase.config import to_dict
from rlbase.training import StopRequested

# a valid value other than the smoke default, for every field declared online-only
ALTERNATIVES = {
    "odt": {"online.add_rollouts": False, "online.hindsight_relabel": False,
            "online.g_online": 3600.0, "online.exploration_rtg": "curriculum", "online.curriculum_q": 90.0,
            "online.online_updates": 50},
    "iql": {"online_window": 100},
}


def _spec(method: str, seed: int = 0, overrides=()) -> RunSpec:
    return RunSpec("t", method, "hopper-medium", seed, "smoke", tuple(overrides))


def _pretrained_state(spec: RunSpec) -> dict:
    data = job_mod.load_data(spec)
    cfg = method_config(spec.method, spec.dataset, spec.preset, spec.seed, spec.overrides_dict)
    agent = build_agent(spec.method, cfg, data.trajectories, data.spec.make_env, data.score_fn, progress=False)
    try:
        agent.pretrain()
        state = agent.state_dict()
        del state["counters"]["wall_time"], state["counters"]["cpu_time"]  # clock readings, the only parts that may differ
        return state
    finally:
        agent.close()


def _same(a, b, where: str = "state") -> None:
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b), where
    else:
        assert a == b, where


def test_every_family_declares_exactly_the_fields_tested_here():
    assert {f: set(v) for f, v in shared.AFTER_SWITCH.items()} == {f: set(v) for f, v in ALTERNATIVES.items()}
    assert set(shared.FAMILY.values()) == set(shared.AFTER_SWITCH)


@pytest.mark.parametrize("family,field", [(f, k) for f, fields in ALTERNATIVES.items() for k in sorted(fields)])
def test_an_online_only_field_leaves_the_end_of_pretraining_state_unchanged(family, field):
    method = "odt" if family == "odt" else family
    base = method_config(method, "hopper-medium", "smoke", 0, {})
    assert shared.flatten(to_dict(base))[field] != ALTERNATIVES[family][field]  # a real change
    torch.manual_seed(0)
    a = _pretrained_state(_spec(method))
    torch.manual_seed(0)
    b = _pretrained_state(_spec(method, overrides=[(field, ALTERNATIVES[family][field])]))
    _same(a, b)


@pytest.mark.parametrize("field,value", [("online.buffer_size", 5), ("online.sampling", "return")])
def test_a_pretraining_field_does_change_the_state(field, value):
    """The comparison above can fail: the buffer built at the switch depends on its size, and
    pretraining batches are drawn by the online sampling rule (so neither may be declared online-only)."""
    a = _pretrained_state(_spec("odt"))
    b = _pretrained_state(_spec("odt", overrides=[(field, value)]))
    with pytest.raises(AssertionError):
        _same(a, b)


def test_the_key_separates_what_pretraining_depends_on():
    def key(method="odt", seed=0, data="d1", **changes):
        cfg = to_dict(method_config(method if method != "odt-control" else "odt", "hopper-medium", "smoke", seed,
                                    changes))
        return shared.key(method, cfg, seed, {"sha256": data})

    base = key()
    assert base is not None and base == key() and base.startswith("odt-s0-")
    assert key("odt-control", **{"online.add_rollouts": False}) == base  # the control shares odt's
    assert key(**{"online.hindsight_relabel": False, "online.g_online": 3600.0}) == base
    assert key(seed=1) != base and key(data="d2") != base
    assert key(**{"online.buffer_size": 5}) != base and key(**{"optim.lr": 0.5}) != base
    assert key(**{"online.lr": 0.5}) != base  # the rate switch happens at the end of pretraining
    cfg = to_dict(method_config("dt", "hopper-medium", "smoke", 0, {}))
    assert shared.key("dt", cfg, 0, {"sha256": "d1"}) is None  # no online phase: never shared


def test_a_run_from_shared_pretraining_ends_as_it_would_alone(tmp_path):
    control, odt = _spec("odt-control"), _spec("odt")
    alone = job_mod.run_one(odt, tmp_path / "alone", threads=1, reuse_pretraining=False)
    assert not (tmp_path / "alone" / shared.DIRNAME).exists()

    job_mod.run_one(control, tmp_path / "pair", threads=1)
    assert len([p for p in (tmp_path / "pair" / shared.DIRNAME).iterdir() if p.is_dir()]) == 1
    assert not list((tmp_path / "pair" / shared.DIRNAME).rglob("*.lock"))  # its holder removed it
    reused = job_mod.run_one(odt, tmp_path / "pair", threads=1)
    record = rec.read_record(rec.run_dir(tmp_path / "pair", odt))
    assert record["pretraining_from"] == control.run_id
    assert any("pretraining reused from run" in n for n in record["notes"])
    alone_dir = rec.run_dir(tmp_path / "alone", odt)
    assert rec.read_record(alone_dir)["pretraining_from"] is None
    assert reused["final_score"] == alone["final_score"]
    # its counters carry on from the state's, whose time counters the record keeps apart
    (state_file,) = (tmp_path / "pair" / shared.DIRNAME).glob("*/ckpt-*.pt")
    at_switch = torch.load(state_file, weights_only=False)["state"]["agent"]["counters"]
    assert record["inherited_counters"] == {k: at_switch[k] for k in ("wall_time", "cpu_time")}
    assert 0 < record["inherited_counters"]["wall_time"] < record["counters"]["wall_time"]
    assert rec.read_record(alone_dir)["inherited_counters"] is None
    assert rec.read_curve(rec.run_dir(tmp_path / "pair", odt) / rec.CURVE) == rec.read_curve(alone_dir / rec.CURVE)


def test_iql_share_and_published_buffers_share_the_offline_phase(tmp_path):
    share, published = _spec("iql"), _spec("iql", overrides=[("online_window", 100)])
    alone = job_mod.run_one(published, tmp_path / "alone", threads=1, reuse_pretraining=False)
    job_mod.run_one(share, tmp_path / "pair", threads=1)
    reused = job_mod.run_one(published, tmp_path / "pair", threads=1)
    d = rec.run_dir(tmp_path / "pair", published)
    assert rec.read_record(d)["pretraining_from"] == share.run_id
    assert reused["final_score"] == alone["final_score"]
    assert rec.read_curve(d / rec.CURVE) == rec.read_curve(rec.run_dir(tmp_path / "alone", published) / rec.CURVE)


def test_a_corrupt_shared_state_is_ignored_and_the_run_computes_its_own(tmp_path):
    control, odt = _spec("odt-control"), _spec("odt")
    job_mod.run_one(control, tmp_path, threads=1)
    (stored,) = (tmp_path / shared.DIRNAME).glob("*/ckpt-*.pt")
    stored.write_bytes(b"not a checkpoint")
    job_mod.run_one(odt, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, odt))["pretraining_from"] is None


def test_fresh_pretraining_from_the_command_line_reaches_the_jobs(tmp_path):
    from benchmarks import run as run_cli
    from benchmarks.launch import launch
    parse = run_cli.build_parser().parse_args
    assert run_cli._options(parse(["table1"])).reuse_pretraining is True
    fresh = run_cli._options(parse(["table1", "--fresh-pretraining", "--executor", "debug"]))
    assert fresh.reuse_pretraining is False
    report = launch([_spec("odt-control"), _spec("odt")], tmp_path, fresh, progress=False)
    assert report.done == 2 and not (tmp_path / shared.DIRNAME).exists()
    assert all(rec.read_record(rec.run_dir(tmp_path, s))["pretraining_from"] is None
               for s in (_spec("odt-control"), _spec("odt")))


# ----- the group, the key's data part ----------------------------------------------------------
def _cfg(method: str = "odt", **changes) -> dict:
    return to_dict(method_config(method, "hopper-medium", "smoke", 0, changes))


def test_the_pretraining_group_ignores_only_the_online_only_fields():
    base = shared.pretraining_group("odt", _cfg())
    assert base is not None and base == shared.pretraining_group("odt", _cfg())
    assert shared.pretraining_group("odt-control", _cfg("odt-control")) == base
    assert shared.pretraining_group("odt", _cfg(**{"online.curriculum_q": 90.0})) == base
    assert shared.pretraining_group("odt", _cfg(**{"optim.lr": 0.5})) != base
    assert shared.pretraining_group("odt", _cfg(**{"model.n_layers": 2})) != base
    assert shared.pretraining_group("iql", _cfg("iql")) != base
    assert shared.pretraining_group("dt", _cfg("dt")) is None


def test_the_key_uses_the_digest_of_the_steps_not_of_the_file():
    cfg = _cfg()
    a = shared.key("odt", cfg, 0, {"sha256": "file-1", "content_sha256": "steps-1"})
    assert a is not None
    assert shared.key("odt", cfg, 0, {"sha256": "file-2", "content_sha256": "steps-1"}) == a  # a remake
    assert shared.key("odt", cfg, 0, {"sha256": "file-1", "content_sha256": "steps-2"}) != a
    # without a content digest (older provenance), the file's sha256 as before
    assert shared.key("odt", cfg, 0, {"sha256": "f1", "content_sha256": None}) != \
        shared.key("odt", cfg, 0, {"sha256": "f2", "content_sha256": None})


# ----- the launch order --------------------------------------------------------------------------
def _leader_follower_order(order, groups_of):
    """(index, index of its leader) of every follower in ``order``."""
    first: dict = {}
    pairs = []
    for i, s in enumerate(order):
        cell = (groups_of[s.method], s.dataset, s.seed)
        if groups_of[s.method] is None:
            continue
        if cell in first:
            pairs.append((i, first[cell]))
        else:
            first[cell] = i
    return pairs


def test_order_for_sharing_starts_followers_after_their_leaders():
    from benchmarks.launch import order_for_sharing
    groups_of = {"odt": "g", "odt-control": "g", "dt": None}
    specs = [_spec(m, seed) for seed in range(4) for m in ("odt", "odt-control")]
    order = order_for_sharing(specs, [groups_of[s.method] for s in specs], block=2)
    assert [(s.method, s.seed) for s in order] == [
        ("odt", 0), ("odt", 1), ("odt-control", 0), ("odt-control", 1),
        ("odt", 2), ("odt", 3), ("odt-control", 2), ("odt-control", 3)]

    # plan order within a seed is kept; a follower listed first follows; dt never shares
    specs = [_spec(m, seed) for m in ("odt-control", "dt", "odt") for seed in (2, 0, 1)]
    for block in (1, 2, 3):
        order = order_for_sharing(specs, [groups_of[s.method] for s in specs], block)
        assert sorted(order, key=lambda s: s.run_id) == sorted(specs, key=lambda s: s.run_id)
        blocks = [s.seed // block for s in order]
        assert blocks == sorted(blocks)  # seed-major, in blocks of `block` seeds
        for i, leader in _leader_follower_order(order, groups_of):
            assert i >= leader + block  # `block` runs at once: the leader has started and left a slot
    assert [(s.method, s.seed) for s in order_for_sharing(specs, [groups_of[s.method] for s in specs], 1)] == [
        ("odt-control", 0), ("dt", 0), ("odt", 0), ("odt-control", 1), ("dt", 1), ("odt", 1),
        ("odt-control", 2), ("dt", 2), ("odt", 2)]
    none = order_for_sharing(specs, [None] * len(specs), 2)  # no sharing: plain seed-major
    assert none == sorted(specs, key=lambda s: s.seed)


@pytest.fixture
def submitted(monkeypatch) -> list[RunSpec]:
    """The specs a launch submits, in order, to an executor whose jobs are done at once (nothing runs)."""
    from benchmarks import launch as launch_mod
    specs: list[RunSpec] = []

    class Job:
        paths = None

        def done(self):
            return True

        def result(self):
            return {}

    class Executor:
        def submit(self, fn, spec, *args):
            specs.append(spec)
            return Job()

    monkeypatch.setattr(launch_mod.scheduler, "make_executor", lambda *a, **k: Executor())
    return specs


def test_launch_orders_same_seed_arms_apart(tmp_path, submitted):
    """With two at once, odt and odt-control of one seed no longer start together."""
    from benchmarks import launch as launch_mod
    specs = [_spec(m, seed) for seed in (0, 1) for m in ("odt", "odt-control")]
    opts = launch_mod.LaunchOptions(executor="debug", parallel=2, poll_s=0.0)
    launch_mod.launch(specs, tmp_path, opts, progress=False)
    assert [(s.method, s.seed) for s in submitted] == [("odt", 0), ("odt", 1), ("odt-control", 0), ("odt-control", 1)]


@pytest.mark.parametrize("leader_phase, expected", [
    ("pretrain", [("odt", 1), ("odt-control", 1), ("odt-control", 0)]),  # its leader pretrains: later
    ("online", [("odt-control", 0), ("odt", 1), ("odt-control", 1)]),    # past the switch: no wait, plan order
])
def test_a_follower_whose_leader_another_launch_is_pretraining_starts_after_free_runs(
        tmp_path, submitted, leader_phase, expected):
    """A second launch of the same experiment: the first is running odt seed 0. While that run is
    still pretraining, odt-control seed 0 would only sit on its pretraining lock, so the runs that
    can compute go first; once it is past the switch, the plan's order stands."""
    from benchmarks import launch as launch_mod
    specs = [_spec(m, seed) for seed in (0, 1) for m in ("odt", "odt-control")]
    leader = rec.run_dir(tmp_path, specs[0])
    with job_mod._run_lock(leader):  # the first launch runs odt seed 0
        rec.write_curve(leader / rec.CURVE, [{"phase": "pretrain", "updates": 10},
                                             {"phase": leader_phase, "updates": 20}])
        opts = launch_mod.LaunchOptions(executor="debug", parallel=2, poll_s=0.0, holder_grace_s=0.0)
        report = launch_mod.launch(specs, tmp_path, opts, progress=False)
    assert report.held == [specs[0].run_id]
    assert [(s.method, s.seed) for s in submitted] == expected


def test_next_to_start_skips_runs_that_would_wait_unless_all_would():
    from benchmarks.launch import next_to_start
    queue = [_spec("odt-control", 0), _spec("odt", 1), _spec("odt-control", 1)]
    assert next_to_start(queue, lambda s: s.seed == 0) == 1
    assert next_to_start(queue, lambda s: False) == 0
    assert next_to_start(queue, lambda s: True) == 0  # every one would wait: the first waits, as before


# ----- the pretraining lock ----------------------------------------------------------------------
# what pretraining_lock takes, in a process that starts in milliseconds (no torch to import)
_HOLD = """
import fcntl, sys, time
with open(sys.argv[1], "a+") as f:
    if sys.argv[3] == "1":
        print("waits", flush=True)
    fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(root, seconds: float, key: str = "k", wait: bool = False):
    """A process that holds the pretraining lock of ``key`` for ``seconds``; returned once it
    holds it (``wait``: once it is about to wait for it)."""
    import subprocess
    import sys
    path = shared.lock_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-S", "-c", _HOLD, str(path), str(seconds), "1" if wait else "0"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == ("waits" if wait else "held")
    return proc


def test_a_run_waits_for_the_one_pretraining_its_key(tmp_path):
    import time
    holder = _holder(tmp_path, 0.5)
    said: list[str] = []
    start = time.monotonic()
    try:
        with shared.pretraining_lock(tmp_path, "k", say=said.append):
            waited = time.monotonic() - start
    finally:
        holder.wait(5)
    assert waited > 0.3 and len(said) == 1 and "waiting for the run pretraining k" in said[0]
    said.clear()
    with shared.pretraining_lock(tmp_path, "k", say=said.append):  # free: no wait, nothing said
        pass
    assert said == []


def test_a_killed_holder_leaves_the_lock_free(tmp_path):
    import signal
    import time
    holder = _holder(tmp_path, 60)
    holder.send_signal(signal.SIGKILL)
    holder.wait(5)
    start = time.monotonic()
    with shared.pretraining_lock(tmp_path, "k", say=pytest.fail):
        assert time.monotonic() - start < 0.5


def test_a_follower_waits_for_its_leader_then_loads_the_state_it_saved(tmp_path):
    """shared.take_or_wait: the leader (another process) holds the lock while it pretrains and
    saves; the follower waits, then starts from that state and leaves the lock free."""
    import contextlib
    import threading
    import time
    leader = _holder(tmp_path, 0.5)
    save = threading.Timer(0.2, shared.save, (tmp_path, "k", {"agent": {}, "curve": [], "sweeps": []}),
                           {"source_run": "leader", "step": 1})  # the leader's save, made from here
    save.start()
    stack, notes = contextlib.ExitStack(), []
    try:
        found = shared.take_or_wait(tmp_path, "k", stack, notes.append)
    finally:
        save.join()
        leader.wait(5)
    assert found is not None and found.source_run == "leader"
    assert len(notes) == 1 and "waiting for the run pretraining k" in notes[0]
    with shared.pretraining_lock(tmp_path, "k", say=pytest.fail):  # released: no wait
        pass
    # nothing saved and nobody pretraining: this run takes the lock (and pretrains itself)
    assert shared.take_or_wait(tmp_path, "other", stack, notes.append) is None
    waiting = _holder(tmp_path, 0.0, key="other", wait=True)
    time.sleep(0.1)
    assert waiting.poll() is None  # blocked by this run's lock ...
    stack.close()
    assert waiting.wait(5) == 0  # ... until it lets go


def test_a_run_resumed_before_the_end_of_its_pretraining_holds_the_lock(tmp_path):
    """shared.on_resume: resumed mid-pretraining, a run holds its key's lock (a same-key
    run waits for it, then loads what it saves); resumed past the switch, or without a key, it
    takes nothing."""
    import contextlib
    import time

    stack, notes = contextlib.ExitStack(), []
    assert shared.on_resume(tmp_path, "done", True, "done", stack, notes.append) is None
    assert shared.on_resume(tmp_path, None, False, None, stack, notes.append) is None
    with shared.pretraining_lock(tmp_path, "done", say=pytest.fail):  # not taken
        pass
    assert shared.on_resume(tmp_path, "mid", False, "mid", stack, notes.append) is None
    waiting = _holder(tmp_path, 0.0, key="mid", wait=True)
    time.sleep(0.1)
    assert waiting.poll() is None  # the same-key run waits for the resumed one ...
    stack.close()
    assert waiting.wait(5) == 0  # ... until it lets go
    assert notes == []


def test_a_run_resumed_mid_pretraining_takes_the_state_a_same_key_run_saved(tmp_path):
    """Resumed before the end of its pretraining, a run whose key has a saved state (saved
    before it resumed, or by the run it waited for) starts from that state rather than
    computing the rest of the same pretraining again, and holds no lock."""
    import contextlib
    import threading
    state = {"agent": {}, "curve": [], "sweeps": []}
    shared.save(tmp_path, "saved", state, source_run="other", step=1)
    stack, notes = contextlib.ExitStack(), []
    found = shared.on_resume(tmp_path, "saved", False, "saved", stack, notes.append)
    assert found is not None and found.source_run == "other" and notes == []
    with shared.pretraining_lock(tmp_path, "saved", say=pytest.fail):  # not taken
        pass

    leader = _holder(tmp_path, 0.5, key="later")  # pretraining now; saves before it lets go
    save = threading.Timer(0.2, shared.save, (tmp_path, "later", state), {"source_run": "leader", "step": 1})
    save.start()
    try:
        found = shared.on_resume(tmp_path, "later", False, "later", stack, notes.append)
    finally:
        save.join()
        leader.wait(5)
    assert found is not None and found.source_run == "leader"
    assert len(notes) == 1 and "waiting for the run pretraining later" in notes[0]
    with shared.pretraining_lock(tmp_path, "later", say=pytest.fail):  # released after loading
        pass


def test_a_run_resumed_from_a_checkpoint_made_under_another_key_takes_no_lock(tmp_path):
    """shared.on_resume: a checkpoint whose pretraining was computed under another key
    (code, threads or host changed since; None: it does not say) is not the key's computation, so
    the resumed run neither holds the key's lock nor waits for it; it only starts from a state
    already saved."""
    import contextlib
    stack, notes = contextlib.ExitStack(), []
    for made_under in ("before", None):
        assert shared.on_resume(tmp_path, "now", False, made_under, stack, notes.append) is None
        with shared.pretraining_lock(tmp_path, "now", wait=False) as free:
            assert free  # not taken
    holder = _holder(tmp_path, 60, key="now")  # another run pretraining the key: no wait for it either
    try:
        assert shared.on_resume(tmp_path, "now", False, "before", stack, notes.append) is None
    finally:
        holder.kill()
        holder.wait(5)
    shared.save(tmp_path, "now", {"agent": {}, "curve": [], "sweeps": []}, source_run="other", step=1)
    found = shared.on_resume(tmp_path, "now", False, "before", stack, notes.append)
    assert found is not None and found.source_run == "other" and notes == []


def _stop_at_a_pretraining_evaluation(monkeypatch, at_the_end: bool) -> None:
    """Every ODT trainer asks itself to stop (as on SIGTERM) at the pretraining evaluation that
    ends the phase (``at_the_end``) or at its first one in between: it checkpoints at its next
    safe point and raises StopRequested."""
    _stop_at_evaluations(monkeypatch, lambda phase, ends_phase: phase == "pretrain" and ends_phase == at_the_end)


def _stop_at_evaluations(monkeypatch, where, once: bool = False) -> None:
    """Every ODT trainer asks itself to stop (as on SIGTERM) at the evaluations for which
    ``where(phase, ends_phase)`` holds (``once``: only at the first of them in the test)."""
    evaluate, stopped = ODTTrainer._eval_row, []

    def stopping(self, phase, log, ends_phase=True, **extra):
        if where(phase, ends_phase) and not (once and stopped):
            stopped.append(phase)
            self.request_stop()
        return evaluate(self, phase, log, ends_phase, **extra)
    monkeypatch.setattr(ODTTrainer, "_eval_row", stopping)


def _saved_states(root) -> int:
    store = root / shared.DIRNAME
    return len(list(store.glob("*/ckpt-*.pt"))) if store.is_dir() else 0


def test_a_run_stopped_at_the_end_of_its_pretraining_has_left_it_for_the_same_key(tmp_path, monkeypatch):
    """A stop requested during the evaluation that ends pretraining (SIGTERM from Slurm, say)
    ends the attempt at the checkpoint right after it. The state is saved for the key before that
    checkpoint, so the run's control starts from it (and ends as it would alone) instead of
    pretraining again, and the run itself then resumes past the switch."""
    odt, control, pair = _spec("odt"), _spec("odt-control"), tmp_path / "pair"
    with monkeypatch.context() as m:
        _stop_at_a_pretraining_evaluation(m, at_the_end=True)
        with pytest.raises(StopRequested):
            job_mod.run_one(odt, pair, threads=1)
    assert rec.read_record(rec.run_dir(pair, odt)) is None  # stopped, not finished
    assert _saved_states(pair) == 1 and not list((pair / shared.DIRNAME).glob("*.lock"))
    stale = shared.lock_path(pair, "left-by-a-killed-run")
    stale.touch()
    job_mod.run_one(control, pair, threads=1)
    assert rec.read_record(rec.run_dir(pair, control))["pretraining_from"] == odt.run_id
    assert not stale.exists()  # a complete run clears lock files nobody holds
    job_mod.run_one(control, tmp_path / "alone", threads=1, reuse_pretraining=False)
    assert (rec.read_curve(rec.run_dir(pair, control) / rec.CURVE)
            == rec.read_curve(rec.run_dir(tmp_path / "alone", control) / rec.CURVE))
    job_mod.run_one(odt, pair, threads=1)
    record = rec.read_record(rec.run_dir(pair, odt))
    assert record["status"] == "complete" and record["pretraining_from"] is None and record["attempts"] == 2


def test_a_follower_resumed_online_keeps_the_time_it_inherited(tmp_path, monkeypatch):
    """A control stopped during its online phase and resumed still knows its leader's time
    counters at the switch, so the compute time of its own part is priced after the resume."""
    odt, control = _spec("odt"), _spec("odt-control")
    job_mod.run_one(odt, tmp_path, threads=1)
    (state_file,) = (tmp_path / shared.DIRNAME).glob("*/ckpt-*.pt")
    at_switch = torch.load(state_file, weights_only=False)["state"]["agent"]["counters"]
    with monkeypatch.context() as m:
        _stop_at_evaluations(m, lambda phase, ends_phase: phase == "online", once=True)
        with pytest.raises(StopRequested):
            job_mod.run_one(control, tmp_path, threads=1)
    job_mod.run_one(control, tmp_path, threads=1)
    directory = rec.run_dir(tmp_path, control)
    record = rec.read_record(directory)
    assert record["attempts"] == 2 and record["pretraining_from"] == odt.run_id
    assert record["inherited_counters"] == {k: at_switch[k] for k in ("wall_time", "cpu_time")}
    own = record["counters"]["wall_time"] - at_switch["wall_time"]
    assert rec.core_seconds(record, rec.read_attempts(directory)) == pytest.approx(own)


def test_a_run_resumed_under_another_key_does_not_leave_its_pretraining(tmp_path, monkeypatch):
    """A run stopped mid-pretraining and resumed after its key changed (here the code version;
    threads or host alike) continues a pretraining that is not the new key's computation: it holds
    no lock for it and leaves no state under it, and says so in its notes."""
    odt = _spec("odt")
    with monkeypatch.context() as m:
        _stop_at_a_pretraining_evaluation(m, at_the_end=False)
        with pytest.raises(StopRequested):
            job_mod.run_one(odt, tmp_path, threads=1)
    assert _saved_states(tmp_path) == 0
    where = shared.machine_and_code()
    monkeypatch.setattr(shared, "machine_and_code", lambda threads=None: {**where, "code": f"{where['code']}+edited"})
    job_mod.run_one(odt, tmp_path, threads=1)
    record = rec.read_record(rec.run_dir(tmp_path, odt))
    assert record["status"] == "complete" and record["attempts"] == 2
    assert any("not left for other runs" in n for n in record["notes"])
    assert _saved_states(tmp_path) == 0 and not list((tmp_path / shared.DIRNAME).glob("*.lock"))


def test_the_lock_file_goes_with_its_holder_and_a_waiting_run_takes_the_new_one(tmp_path):
    """The holder removes the lock file as it lets go. A run that was waiting on the removed file
    gets its flock, sees the file is no longer at the path and takes the one there instead, so
    another run that comes along finds the lock held: one holder at a time."""
    import threading
    import time
    path = shared.lock_path(tmp_path, "k")
    entered, release = threading.Event(), threading.Event()

    def waiting_run():
        with shared.pretraining_lock(tmp_path, "k", say=lambda _: None):
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=waiting_run)
    with shared.pretraining_lock(tmp_path, "k", say=pytest.fail) as held:
        assert held and path.exists()
        thread.start()
        time.sleep(0.2)
        assert not entered.is_set()  # waits on this file
    assert entered.wait(5)
    with shared.pretraining_lock(tmp_path, "k", wait=False) as free:
        assert not free  # held by the waiting run, on the file now at the path
    release.set()
    thread.join(5)
    assert not path.exists()
    with shared.pretraining_lock(tmp_path, "k", wait=False) as free:
        assert free
    assert not path.exists()


def test_lock_files_nobody_holds_are_removed_and_held_ones_kept(tmp_path):
    stale = shared.lock_path(tmp_path, "stale")
    stale.parent.mkdir(parents=True)
    stale.touch()  # its holder was killed before it could remove it
    holder = _holder(tmp_path, 60, key="held")
    try:
        assert shared.remove_unheld_locks(tmp_path) == 1
        assert not stale.exists() and shared.lock_path(tmp_path, "held").exists()
    finally:
        holder.kill()
        holder.wait(5)
    assert shared.remove_unheld_locks(tmp_path) == 1 and not list((tmp_path / shared.DIRNAME).glob("*.lock"))
    assert shared.remove_unheld_locks(tmp_path / "nothing-here") == 0


# ----- the estimate ------------------------------------------------------------------------------
def test_the_estimate_counts_a_shared_pretraining_once():
    from benchmarks.launch import estimate, estimate_pretraining, estimate_run
    odt, control = (RunSpec("t", m, "hopper-medium", 0, "cpu") for m in ("odt", "odt-control"))
    cfg_odt, cfg_control = (method_config(s.method, s.dataset, s.preset, s.seed, {}) for s in (odt, control))
    est = estimate([odt, control])
    assert est.shared_runs == 1 and "1 run starts from another run's pretraining" in est.describe()
    alone_u = estimate_run("odt", cfg_odt)[0] + estimate_run("odt-control", cfg_control)[0]
    assert est.updates == pytest.approx(alone_u - cfg_odt.pretrain_updates)
    pu, pe, pf = estimate_pretraining("odt-control", cfg_control)
    assert pu == cfg_control.pretrain_updates and 0 < pe < estimate_run("odt-control", cfg_control)[1]
    assert est.flops == pytest.approx(estimate_run("odt", cfg_odt)[2] + estimate_run("odt-control", cfg_control)[2] - pf)
    assert estimate([odt, control], reuse_pretraining=False).shared_runs == 0
    other_seed = RunSpec("t", "odt-control", "hopper-medium", 1, "cpu")
    assert estimate([odt, other_seed]).shared_runs == 0
    iql = [RunSpec("t", "iql", "hopper-medium", 0, "cpu", o) for o in ((), (("online_window", 100),))]
    est = estimate(iql)
    cfg = method_config("iql", "hopper-medium", "cpu", 0, {})
    assert est.shared_runs == 1
    assert est.updates == pytest.approx(2 * estimate_run("iql", cfg)[0] - estimate_pretraining("iql", cfg)[0])
    assert 0 < estimate_pretraining("iql", cfg)[0] < estimate_run("iql", cfg)[0]


def test_the_pretraining_estimate_counts_the_evaluation_ending_it_at_full_length():
    """AntMaze at the cpu preset: 2e4 pretraining updates evaluated every 2500 are 8 evaluations,
    7 in between at 20 episodes and the one ending pretraining at 100 (Table 1 reads it): 240
    episodes of the environment's cap."""
    from benchmarks.launch import estimate_pretraining
    cfg = method_config("odt", "antmaze-umaze", "cpu", 0, {})
    assert (cfg.pretrain_updates, cfg.eval_every_updates) == (20_000, 2500)
    assert (cfg.eval_episodes, cfg.eval_episodes_interim) == (100, 20)
    _, env_steps, _ = estimate_pretraining("odt", cfg, "antmaze-umaze")
    assert env_steps == pytest.approx((7 * 20 + 100) * cfg.model.max_ep_len)


def test_the_estimate_skips_a_pretraining_a_finished_run_left_on_disk(tmp_path):
    """A local launch reads ``_pretrained/`` as the jobs it starts will: a fresh ``odt`` after its
    ``odt-control`` finished is priced without the pretraining it will load, for the thread
    count that state was made with only."""
    from benchmarks.launch import estimate, estimate_pretraining, estimate_run, saved_pretraining
    control, odt, other_seed = _spec("odt-control"), _spec("odt"), _spec("odt", seed=1)
    assert saved_pretraining(tmp_path, [odt], threads=1) == set()  # nothing saved yet
    job_mod.run_one(control, tmp_path, threads=1)
    read: dict = {}
    assert saved_pretraining(tmp_path, [odt, other_seed], threads=1, read=read) == {odt.run_id}
    assert list(read) == [("hopper-medium", "smoke")]  # the file read once for both specs, kept for the launch
    assert saved_pretraining(tmp_path, [odt], threads=2) == set()  # another thread count: another computation
    cfg = method_config("odt", "hopper-medium", "smoke", 0, {})
    est = estimate([odt], saved={odt.run_id})
    assert est.shared_runs == 1
    assert est.updates == pytest.approx(estimate_run("odt", cfg)[0] - estimate_pretraining("odt", cfg)[0])
    assert estimate([odt], saved={odt.run_id}, reuse_pretraining=False).updates == pytest.approx(estimate_run("odt", cfg)[0])
