"""Progress bars that stay readable when their output goes to a log file.

tqdm redraws a bar with a carriage return every ~0.1-2 s. On a terminal that is one line; in a
redirected log (a Slurm job's, a `nohup` batch's) every redraw is kept, megabytes of them over a
long run. When the bar's stream is not a terminal, it is redrawn at most once a minute instead;
terminals and notebooks keep tqdm's own pace.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TextIO

from tqdm.auto import tqdm

ProgressBar = tqdm  # the type of what progress_bar returns
LOG_REDRAW_SECONDS = 60.0  # least interval between two redraws of a bar written to a log


def writes_to_log(stream: TextIO) -> bool:
    """Whether ``stream`` is a redirected output (not a terminal, not a notebook's cell)."""
    if "ipykernel" in sys.modules:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return not (callable(isatty) and isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return True


def progress_bar(iterable: Iterable | None = None, *, enabled: bool, file: TextIO | None = None,
                 **kwargs: Any) -> tqdm:
    """A tqdm bar (``disable=not enabled``), redrawn at most once a minute when ``file``
    (default: stderr) is a log rather than a terminal. Other keywords go to tqdm."""
    stream = sys.stderr if file is None else file
    if writes_to_log(stream):
        kwargs["mininterval"] = max(float(kwargs.get("mininterval", 0.1)), LOG_REDRAW_SECONDS)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, disable=not enabled, file=stream, **kwargs)
