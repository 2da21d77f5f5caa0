"""Strict query-parameter parsing: a bad value is a 400 that names the parameter."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from core.errors import Invalid
from memories.fields import CATEGORIES, PRIORITIES, SOURCES
from memories.filters import MAX_OFFSET, Expired
from memories.models import Priority
from memories.rules import DURATION_FORMS, normalize_tag, parse_duration, parse_timestamp
from memories.search import MODES

Params = Mapping[str, str]

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}
_EXPONENT_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)[eE][+-]?\d+")
# A moment as the schema describes it: an ISO-8601 date-time or Unix epoch seconds of the
# years 1 to 9999.
TIMESTAMP_SCHEMA = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "number", "minimum": -62135596800, "maximum": 253402300799},
    ]
}


def param_int(
    params: Params, name: str, *, default: int, minimum: int = 0, maximum: int | None = None
) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise Invalid.one(name, f"Must be a whole number, got {raw[:50]!r}.") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and {maximum}" if maximum is not None else " or more"
        raise Invalid.one(name, f"Must be between {minimum}{upper}, got {value}.")
    return value


def param_number(
    params: Params, name: str, *, default: float, minimum: float, maximum: float
) -> float:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise Invalid.one(name, f"Must be a number, got {raw[:50]!r}.") from None
    if not minimum <= value <= maximum:  # NaN fails too
        raise Invalid.one(name, f"Must be between {minimum:g} and {maximum:g}, got {raw[:50]}.")
    return value


def param_limit(params: Params, *, default: int, maximum: int) -> int:
    return param_int(params, "limit", default=default, minimum=1, maximum=maximum)


def param_offset(params: Params) -> int:
    return param_int(params, "offset", default=0, minimum=0, maximum=MAX_OFFSET)


def param_bool(params: Params, name: str, *, default: bool | None = False) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise Invalid.one(name, f"Must be true or false, got {raw[:50]!r}.")


def param_expired(params: Params) -> Expired:
    """`include_expired`: "include" when true, else "hide"."""
    return "include" if param_bool(params, "include_expired") else "hide"


def param_superseded(params: Params) -> bool:
    """`include_superseded`: whether memories another one replaced are listed too."""
    return bool(param_bool(params, "include_superseded"))


def param_choice(params: Params, name: str, choices: tuple[str, ...] | list[str]) -> str | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    value = raw.strip().lower()
    if value not in choices:
        raise Invalid.one(name, f"Must be one of: {', '.join(choices)}; got {raw[:50]!r}.")
    return value


def param_category(params: Params) -> str | None:
    return param_choice(params, "category", CATEGORIES)


def param_priority(params: Params) -> int | None:
    name = param_choice(params, "priority", PRIORITIES)
    return None if name is None else Priority.from_name(name).value


def param_search_mode(params: Params) -> str | None:
    """`mode` of a search; None (the server's default) when absent."""
    return param_choice(params, "mode", MODES)


def param_source(params: Params) -> str | None:
    return param_choice(params, "source", SOURCES)


def param_tag(params: Params, name: str = "tag") -> str | None:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return None
    return normalize_tag(raw)


def param_required(params: Params, name: str, hint: str) -> str:
    """A parameter that must be present and not blank."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        raise Invalid.one(name, f"Required: {hint}")
    return raw.strip()


def param_duration(params: Params, name: str, *, default: timedelta) -> timedelta:
    """A positive duration: whole seconds, or a whole number with s, m, h, d or w."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse_duration(raw)
    except ValueError:
        raise Invalid.one(
            name, f"Must be {DURATION_FORMS} (at most 100 years); got {raw[:50]!r}."
        ) from None


def param_timestamp(params: Params, name: str, *, hint: str) -> datetime | None:
    """A moment (memories.rules.parse_timestamp reads it), None when absent or blank."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    if raw[-6:-5] == " " and ":" in raw[-5:]:
        raw = f"{raw[:-6]}+{raw[-5:]}"  # an unencoded "+00:00" arrives as " 00:00"
    value: Any = raw
    if _EXPONENT_NUMBER.fullmatch(raw):
        value = float(raw)  # epoch seconds as a client's JSON encoder may write them: 1.7e9
    try:
        return parse_timestamp(value)
    except ValueError:
        raise Invalid.one(name, f"Must be {hint}; got {raw[:50]!r}.") from None


AS_OF_FORMS = "an ISO 8601 time such as 2025-01-31T18:00:00Z (without an offset: UTC)"
# Epoch seconds, which `as_of` does not take (§9.10: ISO 8601 only).
_EPOCH_SECONDS = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def param_as_of(params: Params) -> datetime | None:
    """`as_of`: a moment in the past, ISO 8601 (naive means UTC); None when absent. Epoch
    seconds, a time that is no ISO 8601, or one still to come, are a 400 naming it."""
    if _EPOCH_SECONDS.fullmatch((params.get("as_of") or "").strip()):
        raise Invalid.one("as_of", f"Must be {AS_OF_FORMS}; got {params['as_of'][:50]!r}.")
    at = param_timestamp(params, "as_of", hint=AS_OF_FORMS)
    if at is not None and at > timezone.now():
        raise Invalid.one("as_of", "Must be a moment in the past: the mind's future is unknown.")
    return at
