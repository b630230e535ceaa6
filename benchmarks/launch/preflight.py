"""Checks before a launch: the cluster can take the jobs, every config builds, the data is there.

The runner calls these before it estimates or starts anything: ``resolve_executor`` (Slurm
only where a controller answers), ``check_fits_slurm`` (a job no node can hold would pend
forever), ``with_overrides`` (``--set``), ``check_configs``, ``dataset_problems`` and the
content checks (a row must not mix two datasets), and ``make_datasets`` (the forge, on
demand with ``--make-datasets``).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.experiments import RunSpec
from benchmarks.job import spec_config
from benchmarks.launch.options import LaunchOptions
from rlbase.config import ConfigError

# ----- the cluster -----------------------------------------------------------------------------

def slurm_reachable(timeout_s: float = 10.0) -> bool:
    """True when sbatch is installed and a Slurm controller answers (``sinfo`` succeeds)."""
    if not (shutil.which("sbatch") and shutil.which("sinfo")):
        return False
    try:
        return subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, timeout=timeout_s).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def resolve_executor(kind: str) -> str:
    """``auto``: Slurm when a controller answers, else local processes (an installed but
    stopped Slurm, as on a laptop with the client tools, does not count)."""
    if kind == "auto":
        return "slurm" if slurm_reachable() else "local"
    return kind



def largest_node_cpus(partition: str | None, timeout_s: float = 10.0) -> int | None:
    """The most CPUs any node of the partition (default: all) offers, from sinfo; None if unknown."""
    cmd = ["sinfo", "-h", "-o", "%c"] + (["-p", partition] if partition else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    counts = [int(tok.rstrip("+")) for tok in out.split() if tok.rstrip("+").isdigit()]
    return max(counts) if counts else None


def check_fits_slurm(opts: LaunchOptions) -> None:
    """A job asking more CPUs than any node has would pend forever without a word: refuse it."""
    most = largest_node_cpus(opts.partition)
    if most is not None and opts.cpus > most:
        where = f"partition {opts.partition!r}" if opts.partition else "this cluster"
        raise ConfigError(f"cpus={opts.cpus} is out of range: the largest node of {where} has {most} CPUs "
                          f"(the jobs would pend forever); pass --cpus {most} or less")



# ----- the plan and its data ----------------------------------------------------------------

def with_overrides(specs: Sequence[RunSpec], overrides: dict[str, Any]) -> list[RunSpec]:
    """The specs with ``overrides`` (``--set``) applied over their own; being part of the spec,
    they change each run's id."""
    if not overrides:
        return list(specs)
    return [dataclasses.replace(s, overrides=tuple(sorted({**s.overrides_dict, **overrides}.items())))
            for s in specs]


def check_configs(specs: Sequence[RunSpec]) -> None:
    """Build each distinct config once; a bad field or value raises ConfigError naming the
    method, dataset and field, before anything runs."""
    seen = set()
    for s in specs:
        key = (s.method, s.dataset, s.preset, s.overrides)
        if key in seen:
            continue
        seen.add(key)
        try:
            spec_config(s)
        except ConfigError as exc:
            raise ConfigError(f"{s.method} on {s.dataset} ({s.variant}): {exc}") from None


def dataset_problems(specs: Sequence[RunSpec]) -> dict[str, str]:
    """Dataset name -> why the runs cannot load it (missing, invalid), for each dataset the specs
    need at their preset's size; empty when every one is there. Smoke data is made on demand."""
    from benchmarks.datasets.loading import dataset_problem
    from benchmarks.methods import dataset_size
    needed = sorted({(s.dataset, dataset_size(s.preset)) for s in specs})
    problems = {name: dataset_problem(name, size) for name, size in needed}
    return {name: problem for name, problem in problems.items() if problem is not None}


def dataset_provenance(name: str, size: str, read: dict[tuple[str, str], dict] | None = None) -> dict:
    """The provenance of dataset ``name`` at ``size``, as a run loads it (its ``content_sha256``
    hashes every step: seconds for a 1M-step file). ``read`` keeps what one launch has read
    already, so its checks read each file once; a launch that remakes a file starts a new one."""
    from benchmarks.datasets.loading import load_dataset
    read = {} if read is None else read
    if (name, size) not in read:
        read[(name, size)] = dict(load_dataset(name, size=size).provenance)
    return read[(name, size)]


def _complete_runs(root: Path | str, preset: str, experiment: str, loaded: dict[tuple[str, str], list]) -> list:
    """The complete runs of one experiment (``benchmarks.check``'s reading), read once per launch:
    ``loaded`` keeps what the launch's data checks have read."""
    from benchmarks.check import load_run_files
    if (preset, experiment) not in loaded:
        loaded[(preset, experiment)] = load_run_files(root, preset, experiment)
    return loaded[(preset, experiment)]


def _on_other_data(name: str, runs: list, read: dict[tuple[str, str], dict] | None) -> tuple[str | None, list]:
    """The content hash of full-size dataset ``name`` on disk, and those of ``runs`` that trained on
    other data (none when the file records no hash)."""
    on_disk = dataset_provenance(name, "full", read).get("content_sha256")
    return on_disk, [r for r in runs if on_disk is not None and r.data_content != on_disk]


def _contents(runs: list) -> str:
    return ", ".join(sorted({r.data_content[:8] for r in runs}))


def data_content_conflicts(root: Path | str, specs: Sequence[RunSpec],
                           read: dict[tuple[str, str], dict] | None = None,
                           loaded: dict[tuple[str, str], list] | None = None) -> dict[str, str]:
    """Dataset name -> why the runs about to start would put two datasets in one row: some complete
    run of their experiment already in ``root`` trained on other data than the file on disk holds
    (another content hash: a remade medium-replay file is another dataset, see
    ``benchmarks.datasets.portable_math``). That covers a row wholly on other data and a mixed one,
    whose runs on other data the launch would skip as complete (2026-11-28: old-file records under
    the new row's run ids, which do not name the file). Empty when they all agree or there is
    nothing to compare. Full-size data only. ``read`` as in ``dataset_provenance``; ``loaded`` as in
    ``_complete_runs``."""
    from benchmarks.methods import dataset_size
    loaded = {} if loaded is None else loaded
    out = {}
    for preset, experiment, name in sorted({(s.preset, s.experiment, s.dataset) for s in specs
                                            if dataset_size(s.preset) == "full"}):
        done = [r for r in _complete_runs(root, preset, experiment, loaded)
                if r.dataset == name and r.data_content is not None]
        if not done:
            continue
        on_disk, other = _on_other_data(name, done, read)
        if not other:
            continue
        if len(other) == len(done):
            out[name] = (f"the file on disk holds other data (content {on_disk[:8]}) than the {len(done)} complete "
                         f"{experiment} run(s) of it trained on ({_contents(other)}): a run started now would put two "
                         f"datasets in one row. Remake the file those runs used, or move those runs under "
                         f"results/archive/ to start the row again on this file")
        else:
            out[name] = (f"{len(other)} of the {len(done)} complete {experiment} run(s) of it trained on other data "
                         f"({_contents(other)}) than the file on disk (content {on_disk[:8]}), and the launch would "
                         f"skip them as complete, leaving two datasets in one row: "
                         f"{', '.join(sorted(r.name for r in other))}. Move those runs under results/archive/ "
                         f"to run them again on this file")
    return out


def complete_runs_on_other_data(root: Path | str, specs: Sequence[RunSpec],
                                read: dict[tuple[str, str], dict] | None = None,
                                loaded: dict[tuple[str, str], list] | None = None) -> dict[str, str]:
    """Dataset name -> a warning naming the complete runs among ``specs`` that trained on other data
    than the file on disk holds. ``data_content_conflicts`` looks only at the runs a launch starts;
    a row with nothing left to run is skipped as complete, so its runs on an old file went unseen
    (2026-11-28: S4's rerun on a remade file ran nothing). A warning, not a refusal: a complete
    plan's tables can still be rewritten. Full-size data only; ``read`` and ``loaded`` as in
    ``data_content_conflicts``."""
    from benchmarks.methods import dataset_size
    loaded = {} if loaded is None else loaded
    done: dict[str, list] = {}  # dataset -> the complete runs of the plan on it
    for preset, experiment in sorted({(s.preset, s.experiment) for s in specs if dataset_size(s.preset) == "full"}):
        ids = {s.run_id for s in specs if (s.preset, s.experiment) == (preset, experiment)}
        for r in _complete_runs(root, preset, experiment, loaded):
            if r.name in ids and r.data_content is not None:
                done.setdefault(r.dataset, []).append(r)
    out = {}
    for name, runs in sorted(done.items()):
        on_disk, other = _on_other_data(name, runs, read)
        if other:
            out[name] = (f"{len(other)} complete run(s) of this plan trained on other data ({_contents(other)}) than "
                         f"the file on disk (content {on_disk[:8]}); the launch skips them as complete: "
                         f"{', '.join(sorted(r.name for r in other))}. Move them under results/archive/ to run "
                         f"them again on this file")
    return out


def forgeable(name: str) -> bool:
    """True when the forge can fix dataset ``name`` here: its environment is installed and either
    nothing is on disk or the file in the way is the forge's own (an invalid D4RL file is the user's)."""
    from benchmarks.datasets.loading import find_dataset
    from benchmarks.datasets.registry import get_spec
    if name.startswith("minari:") or not get_spec(name).available:  # Minari data is never forged
        return False
    found = find_dataset(name)
    return found is None or found[0] == "generated"


def make_datasets(names: Sequence[str], progress: bool = True, say: Callable[[str], None] = print) -> None:
    """Make datasets with the forge, one after the other (its progress bars and messages); an
    invalid file of the forge's own is rebuilt.

    Each is made by ``python -m benchmarks.datasets make`` in a child process: the forge pins
    its math settings (``benchmarks.datasets.portable_math``) for the whole process, and they
    must not reach this one or the runs it launches."""
    from benchmarks.datasets.forge import expected_work
    from benchmarks.datasets.loading import find_dataset
    for i, name in enumerate(names, 1):
        say(f"making dataset {name} ({i}/{len(names)}): the forge {expected_work(name)}")
        argv = [sys.executable, "-m", "benchmarks.datasets", "make", name]
        argv += ["--force"] if find_dataset(name) is not None else []
        argv += [] if progress else ["--quiet"]
        forge_in_child(name, argv)


def forge_in_child(name: str, argv: list[str]) -> None:
    """Run the forge's command; its exit code becomes the exception ``make`` would have raised
    (1 ForgeError; 2 DatasetUnavailable: a usage, configuration or availability error; 130
    ForgeStopped: the forge checkpointed first)."""
    from benchmarks.datasets.forge_base import ForgeError, ForgeStopped
    from benchmarks.datasets.registry import DatasetUnavailable
    child = subprocess.Popen(argv)
    try:
        code = child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the child too: let it checkpoint and exit
        code = child.wait()
    if code == 130:
        raise ForgeStopped(f"[forge] making {name} was interrupted after a checkpoint; run the same command "
                           "again to resume")
    if code == 2:
        raise DatasetUnavailable(f"the forge refused to make {name} (its message is above)")
    if code != 0:
        raise ForgeError(f"the forge could not make {name} (exit code {code}; its message is above)")
