"""Floating-point settings that pin the forge's SAC training to one code path (MKL's and PyTorch's
AVX2 branches), and a description of the settings a training actually ran under. They make a
file remakeable on the CPU model that made it; they do not make it remakeable across models:
an AMD EPYC on 2026-11-27, under the same pins, did not remake the file an Intel Xeon made
(``paper_tables/datasets/README.md``).

Why: a medium-replay dataset *is* SAC's replay buffer, so the file is only as reproducible as
the SAC run that filled it. On 2026-11-26 it proved not reproducible across machines: on a
fresh machine, ``make hopper-medium-replay`` no longer reached the medium level (33.3) at the
80,000 steps its committed card records: its evaluations read 9.6 at 80,000 and 26.6 at 95,000, while
``make hopper-medium``, which only *collects* with the committed policy, gave the same content
hash. On one machine SAC is bit-identical run to run; what changes it is the math library's
CPU-dependent code path: 2000 updates of the forge's SAC on hopper gave three different actors
under MKL's default dispatch (this machine: AVX-512), ``MKL_CBWR=COMPATIBLE`` and
``MKL_CBWR=AVX2``, and ATen's scalar kernels differ from its AVX2 ones, while ATen's AVX2 and
AVX-512 kernels agreed there. MKL's conditional numerical reproducibility (``MKL_CBWR``) fixes
its code path; ``ATEN_CPU_CAPABILITY`` fixes PyTorch's vectorised kernels. The AVX2 branch of
both was chosen over MKL's slowest, most portable ``COMPATIBLE``: 35 s of CPU against 27 s for
the default on that test, where ``COMPATIBLE`` took 64 s.

Both variables are read when the library first needs them (the first matrix product, the first
dispatched kernel), so they must be set before a process computes anything: the dataset CLI
sets them first thing, and ``benchmarks.run --make-datasets`` runs that CLI in a child process,
so the settings never reach the ODT, DT, IQL or SAC runs (their numbers are pinned per machine,
as before). The card records the CPU and the settings, which is how it could be told on
2026-11-27 that another CPU model does not give the same bits.
"""

from __future__ import annotations

import os
import platform
from collections.abc import MutableMapping

PORTABLE_MATH = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
X86_64 = ("x86_64", "amd64")


def pin_portable_math(environ: MutableMapping[str, str] | None = None, machine: str | None = None) -> dict[str, str]:
    """Set the portable settings in ``environ`` (default ``os.environ``) where the user has not
    set them, on x86-64 only (they name x86 instruction sets); returns those that were set."""
    environ = os.environ if environ is None else environ
    if (machine or platform.machine()).lower() not in X86_64:
        return {}
    added = {k: v for k, v in PORTABLE_MATH.items() if k not in environ}
    environ.update(added)
    return added


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def math_settings() -> dict[str, str | None]:
    """What a SAC training here runs under: the CPU, MKL's branch as requested, and ATen's kernel
    level as PyTorch reports it (the one in effect; it also says if the request came too late)."""
    import torch

    return {"cpu_model": cpu_model(), "machine": platform.machine(),
            "MKL_CBWR": os.environ.get("MKL_CBWR"),
            "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__}
