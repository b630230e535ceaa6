"""``scripts/study.sh``: argument handling, the pinned clone, one live launch per experiment, stop.

No real run is started: the study clone is a folder whose ``.venv/bin/python`` is a stand-in
that records how it was called and waits for SIGTERM, and ``setup`` clones a two-commit
repository made here whose ``make install`` only makes such a stand-in."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "study.sh"

pytestmark = pytest.mark.skipif(shutil.which("setsid") is None or shutil.which("git") is None,
                                reason="needs setsid and git")

STAND_IN = """#!/bin/bash
{ echo "cwd=$PWD"; echo "results=$ODT_RESULTS"; printf 'arg=%s\\n' "$@"; } > "$STUDY_TEST_OUT"
echo "corl=${ODT_CORL_SRC:-}" > "$STUDY_TEST_OUT.env"
[[ "$2" == benchmarks.run && " $* " != *" --dry-run "* ]] || exit 0
[[ -z "${STUDY_TEST_FINISH:-}" ]] || { echo "$3: 2 finished, $STUDY_TEST_FINISH failed, 0 were already complete"; exit 0; }
trap 'kill $child 2>/dev/null; exit 143' TERM
sleep 120 & child=$!
wait $child
"""


def _stand_in(folder: Path) -> None:
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(STAND_IN)
    python.chmod(0o755)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "STUDY_DIR": str(tmp_path / "study"), "ODT_RESULTS": str(tmp_path / "runs"),
            "STUDY_TEST_OUT": str(tmp_path / "called.txt"), "STUDY_START_CHECK_S": "0.3",
            "STUDY_STOP_WAIT_S": "20", "STUDY_RECORDS": str(tmp_path / "no-records"), **extra}


def _study(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def _pid(env: dict[str, str], experiment: str) -> int:
    return int((Path(env["ODT_RESULTS"]) / "_logs" / f"study-{experiment}.pid").read_text().split()[0])


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("args", [[], ["bogus"], ["start"], ["start", "--yes"], ["setup"], ["stop", "a", "b"],
                                  ["resume"], ["resume", "a", "b"]])
def test_bad_arguments_print_the_usage_and_exit_2(tmp_path, args):
    out = _study(_env(tmp_path), *args)
    assert out.returncode == 2 and "usage: scripts/study.sh setup COMMIT" in out.stderr


def test_help_exits_0():
    out = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "scripts/study.sh start LAUNCH" in out.stdout


def test_start_needs_the_pinned_clone(tmp_path):
    out = _study(_env(tmp_path), "start", "online_200k")
    assert out.returncode == 1 and "setup COMMIT first" in out.stderr
    assert not (tmp_path / "runs" / "_logs" / "study-online_200k.pid").exists()


def test_start_launches_detached_refuses_a_second_and_stop_ends_it(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    out = _study(env, "start", "online_200k", "--preset", "cpu-200k")
    assert out.returncode == 0, out.stderr
    pid = _pid(env, "online_200k")
    try:
        assert f"pid {pid}" in out.stdout and "log: " in out.stdout
        log = Path(out.stdout.split("log: ")[1].split()[0])
        assert log.parent == tmp_path / "runs" / "_logs" and log.exists()
        called = (tmp_path / "called.txt").read_text().splitlines()
        assert called[0] == f"cwd={tmp_path / 'study'}" and called[1] == f"results={tmp_path / 'runs'}"
        assert [line[4:] for line in called[2:]] == [
            "-m", "benchmarks.run", "online_200k", "--executor", "local", "--threads", "1", "--parallel", "2",
            "--yes", "--results", str(tmp_path / "runs"), "--preset", "cpu-200k"]
        assert os.getsid(pid) == pid  # its own session: the shell's hangup does not reach it
        args = tmp_path / "runs" / "_logs" / "study-online_200k.args"
        assert args.read_text().splitlines() == ["--preset", "cpu-200k"]  # status plans the launch as asked

        again = _study(env, "start", "online_200k")
        assert again.returncode == 1 and "already running" in again.stderr and str(pid) in again.stderr
        assert _pid(env, "online_200k") == pid

        stop = _study(env, "stop")
        assert stop.returncode == 0 and "SIGTERM sent" in stop.stdout and _gone(pid)
        assert not (tmp_path / "runs" / "_logs" / "study-online_200k.pid").exists()
        assert "not running" in _study(env, "stop", "online_200k").stdout
    finally:
        _kill(pid)


def test_a_stale_pid_file_does_not_block_a_start(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    logs = tmp_path / "runs" / "_logs"
    logs.mkdir(parents=True)
    # a live process that is not a launch (this test's own), as after a reboot reused the pid
    (logs / "study-online_200k.pid").write_text(f"{os.getpid()}\n")
    out = _study(env, "start", "online_200k")
    pid = _pid(env, "online_200k")
    try:
        assert out.returncode == 0, out.stderr
        assert pid != os.getpid()
    finally:
        _kill(pid)
        _gone(pid)


def test_status_runs_the_status_module_on_the_results_root_with_the_studys_experiments(tmp_path):
    study = tmp_path / "study"
    _stand_in(study)
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text("")  # the study's own code has the module
    logs = tmp_path / "runs" / "_logs"
    logs.mkdir(parents=True)
    (logs / "study-online_200k.pid").write_text("999999999\n")  # recorded, not running
    (logs / "study-corl_iql-20261206T171308Z.log").write_text("")  # started once, stopped since
    (logs / "study-corl_iql-20261207T090000Z.log").write_text("")
    out = _study(_env(tmp_path), "status", "--summary")
    assert out.returncode == 0, out.stderr
    assert "launch online_200k: not running" in out.stdout and "launch corl_iql: not running" in out.stdout
    called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
    assert called == ["-m", "benchmarks.status", "--results", str(tmp_path / "runs"), "corl_iql", "online_200k",
                      "--summary"]


def test_status_without_a_study_clone_reads_the_root_with_this_checkout(tmp_path):
    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv in this checkout")
    out = _study(_env(tmp_path), "status")
    assert out.returncode == 0, out.stderr
    assert "no runs" in out.stdout


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()


def test_setup_pins_the_clone_and_refuses_to_move_it_unless_forced(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    _git(source, "init", "-q")
    (source / "Makefile").write_text("install:\n\tmkdir -p .venv/bin && touch .venv/bin/python && "
                                     "chmod +x .venv/bin/python && echo installed >> installs.txt\n")
    _git(source, "add", "Makefile")
    _git(source, "commit", "-qm", "one")
    first = _git(source, "rev-parse", "HEAD")
    (source / "README").write_text("two\n")
    _git(source, "add", "README")
    _git(source, "commit", "-qm", "two")
    second = _git(source, "rev-parse", "HEAD")
    env = _env(tmp_path, STUDY_SOURCE=str(source))
    study = tmp_path / "study"

    out = _study(env, "setup", first[:10])
    assert out.returncode == 0, out.stderr
    assert _git(study, "rev-parse", "HEAD") == first and (study / ".venv" / "bin" / "python").exists()
    assert "set up at" in _study(env, "setup", first).stdout
    assert (study / "installs.txt").read_text().count("installed") == 1  # already set up: not installed again

    moved = _study(env, "setup", second)
    assert moved.returncode == 1 and "--force" in moved.stderr and _git(study, "rev-parse", "HEAD") == first
    assert _study(env, "setup", "nonsense").returncode == 1
    forced = _study(env, "setup", second, "--force")
    assert forced.returncode == 0, forced.stderr
    assert _git(study, "rev-parse", "HEAD") == second


def test_start_with_dry_run_prints_the_plan_in_the_foreground_and_launches_nothing(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    out = _study(env, "start", "antmaze_actor", "--preset", "cpu", "--dry-run")
    assert out.returncode == 0, out.stderr
    called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
    assert called[:3] == ["-m", "benchmarks.run", "antmaze_actor"] and "--dry-run" in called
    assert "--yes" not in called  # nothing is confirmed on the user's behalf
    assert not (tmp_path / "runs" / "_logs" / "study-antmaze_actor.pid").exists()
    assert "started" not in out.stdout


def _clone_with_status_module(tmp_path: Path) -> tuple[Path, Path]:
    """A study clone whose ``benchmarks.status`` takes ``--launches``, and an empty _logs folder."""
    study = tmp_path / "study"
    _stand_in(study)
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text('p.add_argument("--launches")\n')
    logs = tmp_path / "runs" / "_logs"
    logs.mkdir(parents=True)
    return study, logs


def test_status_passes_the_recorded_launches_to_a_status_module_that_reads_them(tmp_path):
    _, logs = _clone_with_status_module(tmp_path)
    (logs / "study-table1-20261207T090000Z.log").write_text("")
    out = _study(_env(tmp_path), "status")
    assert out.returncode == 0, out.stderr
    called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
    assert called == ["-m", "benchmarks.status", "--results", str(tmp_path / "runs"), "--launches", str(logs),
                      "table1"]


@pytest.mark.parametrize("already", ["", "/set/here"])
def test_status_gives_the_status_module_the_sources_a_launch_recorded(tmp_path, already):
    """Its plan's official-odt and corl-iql configs name their source: status builds them with the
    launch's own, unless the shell sets one."""
    study, logs = _clone_with_status_module(tmp_path)
    (logs / "study-corl_iql-20261207T090000Z.log").write_text("")
    (logs / "study-corl_iql.args").write_text("--preset\ncpu\n")
    (logs / "study-corl_iql.from").write_text(f"{study}\nODT_CORL_SRC=/recorded/corl\nnot a source line\n")
    env = {k: v for k, v in _env(tmp_path).items() if k != "ODT_CORL_SRC"}
    if already:
        env["ODT_CORL_SRC"] = already
    assert _study(env, "status").returncode == 0
    assert (tmp_path / "called.txt.env").read_text().strip() == f"corl={already or '/recorded/corl'}"


def test_resume_starts_the_last_launch_again_from_its_clone_with_its_options_and_sources(tmp_path):
    _stand_in(tmp_path / "side")
    env = _env(tmp_path, STUDY_DIR=str(tmp_path / "side"), ODT_CORL_SRC="/src/corl")
    assert _study(env, "start", "corl_iql", "--preset", "cpu", "--only-seeds", "3").returncode == 0
    _kill(_pid(env, "corl_iql"))
    assert _gone(_pid(env, "corl_iql"))
    logs = tmp_path / "runs" / "_logs"
    assert (logs / "study-corl_iql.from").read_text().splitlines() == [str(tmp_path / "side"), "ODT_CORL_SRC=/src/corl"]

    plain = {k: v for k, v in _env(tmp_path).items() if k != "ODT_CORL_SRC"}  # another shell: default clone, no source
    hint = _study(plain, "status").stdout
    assert f"scripts/study.sh resume corl_iql restarts it: from {tmp_path / 'side'}, options: --preset cpu --only-seeds 3" in hint
    (tmp_path / "called.txt").unlink()
    out = _study(plain, "resume", "corl_iql")
    pid = _pid(env, "corl_iql")
    try:
        assert out.returncode == 0, out.stderr
        called = (tmp_path / "called.txt").read_text().splitlines()
        assert called[0] == f"cwd={tmp_path / 'side'}"
        assert [line[4:] for line in called[-4:]] == ["--preset", "cpu", "--only-seeds", "3"]
        assert (tmp_path / "called.txt.env").read_text().strip() == "corl=/src/corl"
    finally:
        _kill(pid)
        _gone(pid)


def test_resume_without_a_recorded_launch_or_with_a_bad_record_says_so(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    out = _study(env, "resume", "table1")
    assert out.returncode == 1 and "no recorded launch of table1" in out.stderr
    logs = tmp_path / "runs" / "_logs"
    logs.mkdir(parents=True)
    (logs / "study-table1.args").write_text("--preset\ncpu\n")
    (logs / "study-table1.from").write_text(f"{tmp_path / 'study'}\nPATH=/evil\n")
    out = _study(env, "resume", "table1")
    assert out.returncode == 1 and "PATH=/evil" in out.stderr and not (logs / "study-table1.pid").exists()


def test_a_labelled_launch_runs_beside_its_experiments_plain_launch_and_stops_alone(tmp_path):
    study = tmp_path / "study"
    _stand_in(study)
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text('p.add_argument("--launches")  # EXPERIMENT@LABEL\n')
    env = _env(tmp_path)
    assert _study(env, "start", "table1", "--methods", "odt").returncode == 0
    plain = _pid(env, "table1")
    try:
        out = _study(env, "start", "table1@bc", "--methods", "bc")
        assert out.returncode == 0, out.stderr
        labelled = _pid(env, "table1@bc")
        assert labelled != plain and "started table1@bc" in out.stdout
        assert "a launch of table1 is running too" in out.stderr
        called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
        assert called[:3] == ["-m", "benchmarks.run", "table1"] and called[-2:] == ["--methods", "bc"]
        logs = tmp_path / "runs" / "_logs"
        assert (logs / "study-table1@bc.args").read_text().splitlines() == ["--methods", "bc"]
        assert (logs / "study-table1.args").read_text().splitlines() == ["--methods", "odt"]

        status = _study(env, "status")
        assert "launch table1: running" in status.stdout and "launch table1@bc: running" in status.stdout
        called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
        assert called[-2:] == ["table1", "table1@bc"]  # each launch planned as it asked

        stop = _study(env, "stop", "table1@bc")
        assert stop.returncode == 0 and _gone(labelled) and not (logs / "study-table1@bc.pid").exists()
        assert "scripts/study.sh resume table1@bc restarts it" in stop.stdout
        os.kill(plain, 0)  # the plain launch still runs
    finally:
        _kill(plain)
        _gone(plain)


@pytest.mark.parametrize("name", ["table1@", "@bc", "table1@b/c", "table1@bc@x"])
def test_a_malformed_launch_name_is_refused(tmp_path, name):
    _stand_in(tmp_path / "study")
    out = _study(_env(tmp_path), "start", name)
    assert out.returncode == 1 and "EXPERIMENT@LABEL" in out.stderr
    assert not (tmp_path / "called.txt").exists()


def test_status_with_an_older_status_module_passes_experiments_not_labels(tmp_path):
    study = tmp_path / "study"
    _stand_in(study)
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text('p.add_argument("--launches")\n')  # knows no labels
    logs = tmp_path / "runs" / "_logs"
    logs.mkdir(parents=True)
    for launch in ("table1", "table1@bc", "corl_iql"):
        (logs / f"study-{launch}-20261207T090000Z.log").write_text("")
    out = _study(_env(tmp_path), "status")
    assert out.returncode == 0, out.stderr
    called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
    assert called[-2:] == ["corl_iql", "table1"]


def _wait_for(predicate, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def queues(tmp_path):
    """A study clone with the stand-in, an env whose waiters look every 0.2 s, and its _logs folder;
    every launch and waiter still alive at the end is ended."""
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_QUEUE_POLL_S="0.2")
    logs = tmp_path / "runs" / "_logs"
    yield env, logs
    for f in [*logs.glob("*.queued"), *logs.glob("*.pid")]:
        _kill(int(f.read_text().split()[0]))


def test_a_queued_launch_starts_once_the_one_it_waits_on_has_ended(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_QUEUE_POLL_S="0.2")
    logs = tmp_path / "runs" / "_logs"
    assert _study(env, "start", "table1", "--methods", "odt").returncode == 0
    first = _pid(env, "table1")
    waiter = None
    try:
        out = _study(env, "start", "table1@bc", "--after", "table1", "--methods", "bc")
        assert out.returncode == 0, out.stderr
        assert "queued table1@bc after table1" in out.stdout
        waiter = int((logs / "study-table1@bc.queued").read_text().split()[0])
        assert not (logs / "study-table1@bc.pid").exists()
        assert (logs / "study-table1@bc.args").read_text().splitlines() == ["--methods", "bc"]  # --after is not
        assert "launch table1@bc: queued after table1" in _study(env, "status").stdout
        again = _study(env, "start", "table1@bc", "--after", "table1")
        assert again.returncode == 1 and "already running or queued" in again.stderr

        _kill(first)
        assert _gone(first)
        assert _wait_for(lambda: (logs / "study-table1@bc.pid").exists())
        second = _pid(env, "table1@bc")
        called = lambda: [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]  # noqa: E731
        assert _wait_for(lambda: called()[-2:] == ["--methods", "bc"])  # the stand-in writes once it runs
        assert called()[:3] == ["-m", "benchmarks.run", "table1"]
        assert _wait_for(lambda: not (logs / "study-table1@bc.queued").exists())
        _kill(second)
        assert _gone(second)
    finally:
        _kill(first)
        if waiter:
            _kill(waiter)


def test_stop_cancels_a_queue_before_stopping_what_it_waits_on(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_QUEUE_POLL_S="0.2")
    logs = tmp_path / "runs" / "_logs"
    assert _study(env, "start", "online_200k").returncode == 0
    first = _pid(env, "online_200k")
    try:
        assert _study(env, "resume", "online_200k", "--after", "online_200k").returncode == 1  # not itself
        assert _study(env, "start", "corl_iql", "--after", "online_200k").returncode == 0
        waiter = int((logs / "study-corl_iql.queued").read_text().split()[0])
        out = _study(env, "stop")
        assert out.returncode == 0 and "corl_iql: queue cancelled (it was waiting for online_200k)" in out.stdout
        assert _gone(waiter) and _gone(first)
        time.sleep(1.0)  # a waiter left alive would start the queued launch now
        assert not (logs / "study-corl_iql.pid").exists() and not (logs / "study-corl_iql.queued").exists()
    finally:
        _kill(first)


def test_after_a_launch_that_is_not_running_starts_at_once(tmp_path):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    out = _study(env, "start", "corl_iql", "--after", "online_200k", "--preset", "cpu")
    pid = _pid(env, "corl_iql")
    try:
        assert out.returncode == 0 and "online_200k is neither running nor queued: starting corl_iql now" in out.stdout
        called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
        assert "--after" not in called and called[-2:] == ["--preset", "cpu"]
    finally:
        _kill(pid)
        _gone(pid)


def test_queues_chain_and_resume_can_queue(tmp_path):
    """c waits on b, which waits on a: c starts only after b has started and ended."""
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_QUEUE_POLL_S="0.2")
    logs = tmp_path / "runs" / "_logs"
    assert _study(env, "start", "corl_iql", "--preset", "cpu").returncode == 0  # recorded, for resume
    _kill(_pid(env, "corl_iql"))
    assert _gone(_pid(env, "corl_iql"))
    assert _study(env, "start", "online_200k").returncode == 0
    a = _pid(env, "online_200k")
    pids = [a]
    try:
        assert _study(env, "start", "table1", "--after", "online_200k").returncode == 0
        assert _study(env, "resume", "corl_iql", "--after", "table1").returncode == 0
        pids += [int((logs / f"study-{x}.queued").read_text().split()[0]) for x in ("table1", "corl_iql")]
        _kill(a)
        assert _wait_for(lambda: (logs / "study-table1.pid").exists() and _pid(env, "table1") != a)
        b = _pid(env, "table1")
        pids.append(b)
        time.sleep(1.0)
        assert (logs / "study-corl_iql.queued").exists()  # still waiting: table1 runs
        _kill(b)
        assert _wait_for(lambda: (logs / "study-corl_iql.pid").exists() and _pid(env, "corl_iql") not in pids)
        pids.append(_pid(env, "corl_iql"))
        called = lambda: [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]  # noqa: E731
        assert _wait_for(lambda: called()[2:3] == ["corl_iql"])  # the stand-in writes once it runs
        assert called()[-2:] == ["--preset", "cpu"]
    finally:
        for pid in pids:
            _kill(pid)


def test_a_queue_with_start_by_lapses_when_what_it_waits_on_ends_too_late(queues):
    env, logs = queues
    assert _study(env, "start", "table1").returncode == 0
    out = _study(env, "start", "official", "--after", "table1", "--start-by", "now + 2 seconds")
    assert out.returncode == 0, out.stderr
    assert "it lapses if table1 has not ended by" in out.stdout
    waiter = int((logs / "study-official.queued").read_text().split()[0])
    time.sleep(3.0)  # past the bound while table1 still runs
    _kill(_pid(env, "table1"))
    assert _gone(waiter)
    assert not (logs / "study-official.queued").exists() and not (logs / "study-official.pid").exists()
    assert "official lapses, not started" in (logs / "study-official.queued.log").read_text()


def test_a_queue_with_start_by_starts_when_what_it_waits_on_ends_in_time(queues):
    env, logs = queues
    assert _study(env, "start", "table1").returncode == 0
    assert _study(env, "start", "official", "--after", "table1", "--start-by", "now + 1 hour").returncode == 0
    _kill(_pid(env, "table1"))
    assert _wait_for(lambda: (logs / "study-official.pid").exists())
    assert _wait_for(lambda: not (logs / "study-official.queued").exists())


@pytest.mark.parametrize("args, message", [
    (["--after", "table1", "--start-by", "1 hour ago"], "has already passed"),
    (["--after", "table1", "--start-by", "not a time"], "is not a time"),
    (["--after", "table1", "--start-by"], "needs a time"),
    (["--start-by", "now + 1 hour"], "only bounds a queue"),
])
def test_a_bad_start_by_is_refused_and_nothing_is_queued(tmp_path, args, message):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path)
    out = _study(env, "start", "official", *args)
    assert out.returncode == 1 and message in out.stderr
    logs = tmp_path / "runs" / "_logs"
    assert not (logs / "study-official.queued").exists() and not (logs / "study-official.pid").exists()


@pytest.mark.parametrize("failed, complete", [("0", True), ("1", False)])
def test_status_offers_no_resume_for_a_launch_whose_plan_completed(tmp_path, failed, complete):
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_TEST_FINISH=failed)
    assert _study(env, "start", "table1@bc", "--methods", "bc").returncode == 1  # it ends at once
    line = next(x for x in _study(env, "status", "--all").stdout.splitlines() if x.startswith("launch table1@bc"))
    if complete:
        assert "its plan is complete" in line and "nothing to resume" in line and "study-table1@bc-" in line
    else:
        assert "scripts/study.sh resume table1@bc restarts it" in line


def _called_status(tmp_path: Path) -> list[str]:
    """What the stand-in python was last called with, after ``-m benchmarks.status --results ROOT``."""
    called = [line[4:] for line in (tmp_path / "called.txt").read_text().splitlines()[2:]]
    assert called[:4] == ["-m", "benchmarks.status", "--results", str(tmp_path / "runs")]
    return called[4:]


def test_status_lists_the_runs_of_unfinished_launches_and_names_complete_ones_in_one_line(tmp_path):
    study = tmp_path / "study"
    _stand_in(study)
    env = _env(tmp_path, STUDY_TEST_FINISH="0")
    assert _study(env, "start", "table1@bc", "--methods", "bc").returncode == 1  # completes at once
    assert _study(env, "start", "corl_iql").returncode == 1
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text("# EXPERIMENT@LABEL\n")
    (tmp_path / "runs" / "_logs" / "study-online_200k.pid").write_text("999999999\n")  # stopped part way
    lines = _study(env, "status").stdout.splitlines()
    assert not any(x.startswith(("launch table1@bc", "launch corl_iql")) for x in lines)
    assert any(x.startswith("launch online_200k: not running") for x in lines)
    done = next(x for x in lines if x.startswith("launches whose plan is complete"))
    assert done.endswith(": corl_iql table1@bc")
    assert _called_status(tmp_path) == ["online_200k"]  # the complete launches' runs are not listed
    assert _study(env, "status", "--summary", "--all").returncode == 0
    assert _called_status(tmp_path) == ["corl_iql", "online_200k", "table1@bc", "--summary"]


def test_status_with_only_complete_launches_gives_their_line_per_experiment(tmp_path):
    study = tmp_path / "study"
    _stand_in(study)
    env = _env(tmp_path, STUDY_TEST_FINISH="0")
    assert _study(env, "start", "table1").returncode == 1
    (study / "benchmarks").mkdir()
    (study / "benchmarks" / "status.py").write_text("# EXPERIMENT@LABEL\n")
    out = _study(env, "status")
    assert out.returncode == 0 and "launches whose plan is complete" in out.stdout
    assert _called_status(tmp_path) == ["table1", "--summary"]


def test_a_waiter_is_not_disturbed_when_the_script_is_edited_while_it_waits(tmp_path, queues):
    """bash reads a script as it runs it: a waiter must not read its file again once started."""
    env, logs = queues
    script = tmp_path / "repo" / "scripts" / "study.sh"
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT.read_text())
    run = lambda *a: subprocess.run(["bash", str(script), *a], env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
    assert run("start", "table1").returncode == 0
    assert run("start", "official", "--after", "table1").returncode == 0
    waiter = int((logs / "study-official.queued").read_text().split()[0])
    with script.open("a") as edit:  # a line added at the end, past where the waiter has read
        edit.write('echo "the waiter read the edited script"\n')
    _kill(_pid(env, "table1"))
    assert _wait_for(lambda: (logs / "study-official.pid").exists()) and _gone(waiter)
    log = (logs / "study-official.queued.log").read_text()
    assert "table1 has ended: starting official" in log
    assert "the waiter read the edited script" not in log


@pytest.mark.parametrize("dry_run", [False, True])
def test_start_first_brings_in_the_experiments_committed_records(tmp_path, dry_run):
    """A new results root (a new machine) gets the committed complete runs before the launcher
    plans, so they are not run again; --dry-run only says so."""
    committed = sorted((REPO / "results" / "cpu" / "table1").glob("bc__antmaze-umaze__*"))[0]
    records = tmp_path / "records"
    shutil.copytree(committed, records / "cpu" / "table1" / committed.name)
    _stand_in(tmp_path / "study")
    env = _env(tmp_path, STUDY_RECORDS=str(records))
    out = _study(env, "start", "table1", "--methods", "bc", *(["--dry-run"] if dry_run else []))
    try:
        assert out.returncode == 0, out.stderr
        verb = "would import 1" if dry_run else "imported 1"
        assert f"committed records of table1 from {records}: {verb};" in out.stdout
        copied = tmp_path / "runs" / "cpu" / "table1" / committed.name / "record.json"
        assert copied.is_file() != dry_run
        again = _study(env, "start", "table1", "--dry-run")
        assert "committed records" not in again.stdout or dry_run  # nothing left to bring in
    finally:
        if not dry_run:
            _kill(_pid(env, "table1"))
