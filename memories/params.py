"""Strict query-parameter parsing: bad values are a 400 that names the parameter."""

from __future__ import annotations

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


def param_offset(params) -> int:
    return param_int(params, "offset", default=0, minimum=0)


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
