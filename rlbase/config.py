"""Configuration plumbing every method's typed config uses.

``ConfigError`` names the bad field; ``ensure``, ``ensure_*`` and ``is_*`` write
a ``validate`` in a line per rule; ``apply_overrides`` and ``parse_assignments``
turn ``--set FIELD=VALUE`` into typed values on nested dataclasses.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any


class ConfigError(ValueError):
    """A configuration value is unknown or out of range; the message names the field."""


def ensure(cond: bool, field_name: str, value: Any, rule: str) -> None:
    if not cond:
        raise ConfigError(f"{field_name}={value!r} is out of range: {rule}")


def is_size(value: Any, minimum: int = 1) -> bool:
    """An integer count (not a bool, not a float) of at least ``minimum``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum


def is_rate(value: Any, zero_ok: bool = False) -> bool:
    """A finite real number, > 0 (or >= 0 with ``zero_ok``): learning rates, decays, weights."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    return real and (value >= 0 if zero_ok else value > 0)


def is_finite(value: Any, none_ok: bool = False) -> bool:
    if value is None:
        return none_ok
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def ensure_sizes(obj: Any, prefix: str, names: tuple[str, ...], minimum: int = 1) -> None:
    for name in names:
        ensure(is_size(getattr(obj, name), minimum), f"{prefix}{name}", getattr(obj, name), f"an integer >= {minimum}")


def ensure_rates(obj: Any, prefix: str, names: tuple[str, ...], zero_ok: bool = False) -> None:
    for name in names:
        ensure(is_rate(getattr(obj, name), zero_ok), f"{prefix}{name}", getattr(obj, name),
               ">= 0 and finite" if zero_ok else "> 0 and finite")


def apply_overrides(cfg: Any, overrides: dict[str, Any]) -> Any:
    """Set dotted fields (``{"model.embed_dim": 256}``); unknown fields raise ConfigError."""
    for key, value in overrides.items():
        target = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            if not dataclasses.is_dataclass(target) or part not in _field_names(target):
                raise ConfigError(f"unknown config field {key!r}")
            target = getattr(target, part)
        leaf = parts[-1]
        if not dataclasses.is_dataclass(target) or leaf not in _field_names(target):
            raise ConfigError(f"unknown config field {key!r}; fields here: {', '.join(_field_names(target))}")
        setattr(target, leaf, _coerce(getattr(target, leaf), value, key))
    if hasattr(cfg, "validate"):
        cfg.validate()
    return cfg


def parse_assignments(items: list[str], flag: str = "--set") -> dict[str, str]:
    """``["a.b=1", "c=x"]`` -> ``{"a.b": "1", "c": "x"}`` (command-line FIELD=VALUE pairs)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r}: expected FIELD=VALUE, e.g. model.embed_dim=64")
        out[key.strip()] = value.strip()
    return out


def _field_names(obj: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) else []


def _coerce(current: Any, value: Any, key: str) -> Any:
    """Parse strings from the command line into the type of the current value."""
    if not isinstance(value, str) or isinstance(current, str):
        return value
    try:
        if isinstance(current, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(current, int):
            return int(value)
        if isinstance(current, float) or current is None:
            return float(value)
    except ValueError as exc:
        raise ConfigError(f"{key}={value!r}: expected a {type(current).__name__}") from exc
    return value


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
