"""What counts as a change of configuration between a recorded run and the code now.

A run stores the config it ran with (``config.json``). Resuming it, reusing it or pricing a new
run by it is only right where the code still builds the same config for its spec. Configs gain
fields over time, and a field is added with the default that keeps what the code did before it
existed; so a field absent from a stored config is no change where its value now is its
default, and a change where it is anything else. No list of added fields is kept: the dataclass
defaults are the rule. A field the stored config has and the code no longer has is always a
change (what the code now does in its place cannot be told from the config).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from benchmarks import records as rec
from rlbase.config import to_dict


def field_defaults(cfg: Any) -> dict[str, Any]:
    """Dotted field -> default (as JSON) for every field of a dataclass config that has one,
    nested configs included (``online.add_rollouts``, ``odt.online.online_updates``); {} for an
    object that is not a dataclass."""
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update({f"{f.name}.{k}": v for k, v in field_defaults(value).items()})
        elif f.default is not dataclasses.MISSING:
            out.update(rec.flat_fields(rec.to_jsonable(f.default), f"{f.name}."))
        elif f.default_factory is not dataclasses.MISSING:
            out.update(rec.flat_fields(rec.to_jsonable(f.default_factory()), f"{f.name}."))
    return out


def config_dict(cfg: Any) -> Any:
    """A method config as the plain dict its run records (its repr if it is not a dataclass)."""
    try:
        return to_dict(cfg)
    except TypeError:
        return repr(cfg)


def config_drift(stored: Any, current: Any, ignore: Iterable[str] = ()) -> list[str]:
    """One line per dotted field where a stored config and the current one differ; [] when they
    are the same computation. ``current``: the config the code builds now (the dataclass; a
    plain dict is compared as it is, with no defaults). A field absent from ``stored`` counts as
    its default (it was added since, keeping the old behaviour there); one absent from
    ``current`` (removed from the code) is always reported. Fields named in ``ignore`` (dotted,
    e.g. the cost model's ``seed``; a section's name leaves out all of it) are left out on both sides."""
    defaults = field_defaults(current)
    current = config_dict(current) if dataclasses.is_dataclass(current) and not isinstance(current, type) else current
    was, now = rec.flat_fields(rec.to_jsonable(stored)), rec.flat_fields(rec.to_jsonable(current))
    if ignore:
        was, now = _without(was, ignore), _without(now, ignore)
    lines = []
    for name in sorted(set(was) | set(now)):
        if name not in now:
            lines.append(f"{name}: {was[name]!r} on disk, no such field now (removed from the code)")
        elif name not in was:
            if name not in defaults:
                lines.append(f"{name}: '<absent>' on disk, {now[name]!r} now (no default known)")
            elif now[name] != defaults[name]:
                lines.append(f"{name}: '<absent>' on disk, {now[name]!r} now (added since; "
                             f"its default {defaults[name]!r} is what ran before it)")
        elif was[name] != now[name]:
            lines.append(f"{name}: {was[name]!r} on disk, {now[name]!r} now")
    return lines


def _without(fields: dict[str, Any], ignore: Iterable[str]) -> dict[str, Any]:
    """``fields`` (dotted name -> value) less those named in ``ignore`` or inside a section it names."""
    names = tuple(ignore)
    return {k: v for k, v in fields.items() if not any(k == n or k.startswith(n + ".") for n in names)}
