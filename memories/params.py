"""Strict query-parameter parsing: bad values are a 400 that names the parameter."""

from __future__ import annotations

import re
from datetime import timedelta

from rest_framework.exceptions import ValidationError

from memories.models import Category, Priority, Source

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def _bad(name: str, message: str) -> ValidationError:
    return ValidationError({name: [message]})


def param_int(
    params, name: str, *, default: int, minimum: int = 0, maximum: int | None = None
) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise _bad(name, f"Must be a whole number, got {raw[:50]!r}.") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and {maximum}" if maximum is not None else " or more"
        raise _bad(name, f"Must be between {minimum}{upper}, got {value}.")
    return value


def param_limit(params, *, default: int, maximum: int) -> int:
    return param_int(params, "limit", default=default, minimum=1, maximum=maximum)


# Far beyond any mind, and well inside SQLite's 64-bit integers (a larger OFFSET is a 500).
MAX_OFFSET = 10**12


def param_offset(params) -> int:
    return param_int(params, "offset", default=0, minimum=0, maximum=MAX_OFFSET)


def param_bool(params, name: str, *, default: bool | None = False) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise _bad(name, f"Must be true or false, got {raw[:50]!r}.")


def param_choice(params, name: str, choices: list[str]) -> str | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    value = raw.strip().lower()
    if value not in choices:
        raise _bad(name, f"Must be one of: {', '.join(choices)}; got {raw[:50]!r}.")
    return value


def param_category(params) -> str | None:
    return param_choice(params, "category", list(Category.values))


def param_priority(params) -> int | None:
    name = param_choice(params, "priority", [p.label for p in Priority])
    return None if name is None else Priority.from_name(name).value


def param_source(params) -> str | None:
    return param_choice(params, "source", list(Source.values))


def param_tag(params, name: str = "tag") -> str | None:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return None
    return normalize_tag(raw)


def normalize_tag(tag: str) -> str:
    """Tags are trimmed and lower-cased; matching is case-insensitive."""
    return tag.strip().lower()


def param_required(params, name: str, hint: str) -> str:
    """A parameter that must be present and not blank."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        raise _bad(name, f"Required: {hint}")
    return raw.strip()


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DURATION_FORMS = "seconds (3600) or a number with a unit: 30m, 24h, 7d, 2w"
MAX_DURATION = timedelta(days=100 * 366)
_DURATION = re.compile(r"(\d+)\s*([smhdw]?)")


def param_duration(params, name: str, *, default: timedelta) -> timedelta:
    """A positive duration: whole seconds, or a whole number with s, m, h, d or w."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return default
    match = _DURATION.fullmatch(raw.strip().lower())
    seconds = int(match[1]) * DURATION_UNITS[match[2] or "s"] if match else 0
    if not 0 < seconds <= MAX_DURATION.total_seconds():
        raise _bad(name, f"Must be {DURATION_FORMS} (at most 100 years); got {raw[:50]!r}.")
    return timedelta(seconds=seconds)
