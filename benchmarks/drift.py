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
from typing import Any

from benchmarks import records as rec
from rlbase.config import to_dict

# Each config class config_dict has converted: its top-level field names and the flat defaults
# of its fields. A dict config_dict made (the cost model drops its seed and compares dicts) is
# compared with its class's defaults through this; a dict of unknown class has none.
_CLASSES: dict[type, tuple[frozenset[str], dict[str, Any]]] = {}


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
        out = to_dict(cfg)
    except TypeError:
        return repr(cfg)
    if type(cfg) not in _CLASSES:
        _CLASSES[type(cfg)] = (frozenset(out), field_defaults(cfg))
    return out


def _defaults_of_dict(config: dict) -> dict[str, Any]:
    """The field defaults of the class config_dict made ``config`` from (perhaps without some
    top-level fields, such as the seed): the one known class whose fields cover its keys with the
    fewest left over; {} where none does or two do equally."""
    keys = set(config)
    fits = sorted((len(names - keys), id(cls), defaults) for cls, (names, defaults) in _CLASSES.items()
                  if names >= keys)
    if not fits or (len(fits) > 1 and fits[0][0] == fits[1][0]):
        return {}
    return fits[0][2]


def config_drift(stored: Any, current: Any) -> list[str]:
    """One line per dotted field where a stored config and the current one differ; [] when they
    are the same computation. ``current``: the config the code builds now (the dataclass), or a
    dict config_dict made of it. A field absent from ``stored`` counts as its default (it was
    added since, keeping the old behaviour there); one absent from ``current`` (removed from the
    code) is always reported."""
    if dataclasses.is_dataclass(current) and not isinstance(current, type):
        defaults, current = field_defaults(current), config_dict(current)
    else:
        defaults = _defaults_of_dict(current) if isinstance(current, dict) else {}
    was, now = rec.flat_fields(rec.to_jsonable(stored)), rec.flat_fields(rec.to_jsonable(current))
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
