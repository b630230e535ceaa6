"""Every method's config at every preset on every registered dataset equals its recorded one.

``tests/golden/configs/presets.json`` holds ``to_dict`` of each config (or the error it raised),
written from the code before the presets' scaling moved into one module; a change to any preset
value shows here field by field. ``corl-iql`` is left out: its config depends on the environment
(``ODT_CORL_SRC``) and is ``iql``'s, mapped. Rewrite the file only in a commit that means to change
a preset: ``python tests/test_presets.py --write``.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "golden" / "configs" / "presets.json"
LEFT_OUT = ("corl-iql",)


def build_all() -> dict[str, object]:
    """``"method preset dataset"`` -> the config as a dict, or ``{"error": "Type: message"}``."""
    from benchmarks.datasets import DATASETS
    from benchmarks.methods import METHODS, method_config
    from rlbase.config import to_dict
    from rlbase.presets import PRESETS

    out: dict[str, object] = {}
    for method in sorted(set(METHODS) - set(LEFT_OUT)):
        for preset in PRESETS:
            for dataset in DATASETS:
                try:
                    value: object = to_dict(method_config(method, dataset, preset, seed=0))
                except Exception as exc:  # the same error is part of the same behaviour
                    value = {"error": f"{type(exc).__name__}: {exc}"}
                out[f"{method} {preset} {dataset}"] = value
    return out


def _lines(configs: dict[str, object]) -> list[str]:
    """One line per config, in JSON (which tells 1 from 1.0), keys sorted."""
    return [json.dumps({key: configs[key]}, sort_keys=True) for key in sorted(configs)]


def test_every_config_of_every_preset_is_the_recorded_one():
    recorded = FIXTURE.read_text().splitlines()
    now = _lines(build_all())
    assert len(now) == len(recorded), f"{len(recorded)} configs recorded, {len(now)} now"
    changed = [f"recorded {a}\n     now {b}" for a, b in zip(recorded, now) if a != b]
    assert not changed, f"{len(changed)} configs changed:\n" + "\n".join(changed[:5])


def test_the_presets_module_imports_none_of_the_methods():
    """rlbase/presets.py sits below every method: it imports nothing of the project's packages."""
    tree = ast.parse((REPO / "rlbase" / "presets.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [m for m in names if m.split(".")[0] in ("odt", "baselines", "benchmarks", "studies")]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_presets.py --write   (rewrites the recorded configs)")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text("\n".join(_lines(build_all())) + "\n")
    print(f"wrote {FIXTURE}")
