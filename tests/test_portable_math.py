"""The forge's math settings (benchmarks.datasets.portable_math): what is pinned, where, and that
a dataset made by the CLI records them in effect."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from benchmarks.datasets.loading import card_path
from benchmarks.datasets.portable_math import PORTABLE_MATH, cpu_model, pin_portable_math

X86 = platform.machine().lower() in ("x86_64", "amd64")


def test_pinning_sets_mkl_and_aten_on_x86_and_keeps_what_the_user_set():
    env = {"MKL_CBWR": "COMPATIBLE"}
    assert pin_portable_math(env, machine="x86_64") == {"ATEN_CPU_CAPABILITY": "avx2"}
    assert env == {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2"}
    env = {}
    assert pin_portable_math(env, machine="AMD64") == PORTABLE_MATH == env


def test_pinning_names_x86_instruction_sets_so_other_machines_are_left_alone():
    env = {}
    assert pin_portable_math(env, machine="aarch64") == {} and env == {}


def test_cpu_model_is_named():
    assert isinstance(cpu_model(), str) and cpu_model()


@pytest.mark.skipif(not X86, reason="the settings name x86 instruction sets")
def test_a_dataset_made_by_the_cli_trained_sac_under_the_pinned_settings(tmp_path):
    """The CLI pins in its own process before SAC computes: the card shows ATen's AVX2 kernels in
    effect (PyTorch's own report) and MKL's AVX2 branch, and this process stays unpinned."""
    before = {k: k in os.environ for k in PORTABLE_MATH}
    cmd = [sys.executable, "-m", "benchmarks.datasets", "make", "hopper-medium-replay", "--data-dir", str(tmp_path),
           "--quiet", "--target-score", "-100", "--sac-max-steps", "400", "--eval-every", "200",
           "--eval-episodes", "1", "--sac", "hidden_dim=8", "--sac", "batch_size=8", "--sac", "warmup_steps=100"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    card = json.loads(card_path("hopper-medium-replay", tmp_path).read_text())
    math = card["sac_math"]
    assert math["MKL_CBWR"] == "AVX2" and math["aten_cpu_capability"] == "AVX2" and math["cpu_model"]
    assert "SAC trained on" in card_path("hopper-medium-replay", tmp_path).with_suffix(".md").read_text()
    assert {k: k in os.environ for k in PORTABLE_MATH} == before
