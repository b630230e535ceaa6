"""Progress bars written to a log are redrawn rarely; on a terminal at tqdm's own pace."""

import io

from rlbase.progress import progress_bar, writes_to_log


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _redraws(stream: io.StringIO, steps: int = 2000) -> int:
    for _ in progress_bar(range(steps), enabled=True, file=stream, mininterval=0.0, miniters=1, desc="t"):
        pass
    return stream.getvalue().count("\r")


def test_a_log_gets_the_first_and_last_draw_only_within_a_minute():
    log = io.StringIO()
    assert writes_to_log(log)
    assert _redraws(log) <= 3  # the opening draw and the closing one, no per-step redraws
    assert "2000/2000" in log.getvalue()  # the final count still reaches the log


def test_a_terminal_keeps_every_redraw_asked_for():
    term = _Terminal()
    assert not writes_to_log(term)
    assert _redraws(term) > 1000


def test_a_disabled_bar_writes_nothing():
    quiet = io.StringIO()
    for _ in progress_bar(range(10), enabled=False, file=quiet):
        pass
    assert quiet.getvalue() == ""
