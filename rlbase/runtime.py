"""Process-wide runtime settings, chosen by the programs (CLI, job, benchmark), never as a
side effect of importing or building a model."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters (malloc.h)
_malloc_tuned: bool | None = None


def keep_freed_memory_in_heap() -> bool:
    """Stop glibc from returning activation-sized blocks to the kernel after every update.

    By default glibc serves blocks of a few MB with fresh mmaps and trims the heap top when it
    is freed, so each training step page-faults its activations in again (about 8k minor
    faults and ~6% of a width-128 update, all of it kernel time). Raising the mmap threshold
    to its maximum (32 MiB) and the trim threshold out of reach keeps those blocks in the
    heap for reuse; peak RSS is unchanged, it just is not handed back between steps.
    Process-wide, idempotent, Linux/glibc only; ``ODT_MALLOC_TUNING=0`` switches it off.
    Returns whether the setting is in force.
    """
    global _malloc_tuned
    if _malloc_tuned is None:
        _malloc_tuned = False
        if sys.platform.startswith("linux") and os.environ.get("ODT_MALLOC_TUNING", "1") != "0":
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _malloc_tuned = bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)
                                     and libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
            except (OSError, AttributeError):  # not glibc (musl, ...): leave the allocator alone
                pass
    return _malloc_tuned
