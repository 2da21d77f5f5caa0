"""The scheduler's one validator for each record: a cron job's body and a variable.

Every face's write goes through here (scheduler/services.py); each limit lives here once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson
from croniter import CroniterBadDateError, CroniterError, croniter

from core.errors import Invalid
from memories.rules import clean_key
from webhooks.destinations import url_check

MAX_NAME_LENGTH = 100
MAX_JOBS_PER_MIND = 100
MAX_HEADERS = 20
MAX_HEADER_NAME_LENGTH = 100
MAX_HEADER_VALUE_LENGTH = 2000
MAX_BODY_BYTES = 64 * 1024
MAX_VALUE_BYTES = 64 * 1024
DEFAULT_TIMEZONE = "UTC"
DEFAULT_METHOD = "GET"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Paths on this server a job may run, with the method each takes. They run in-process as the
# mind's agent, with no key stored (scheduler/runner.py; the API registers how).
LOCAL_ENDPOINTS = {"/memory/compact": "POST", "/memory/contradictions": "GET"}
# Headers the sender sets itself.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
HEADER_VALUE_PATTERN = r"^[\t\x20-\x7e]*$"
# Matched whole (fullmatch): "$" alone would let a trailing newline through.
_HEADER_NAME = re.compile(HEADER_NAME_PATTERN.strip("^$"))
_HEADER_VALUE = re.compile(HEADER_VALUE_PATTERN.strip("^$"))
JOB_FIELDS = ("name", "schedule", "timezone", "endpoint", "method", "headers", "body", "enabled")
VARIABLE_FIELDS = ("key", "value")
# How much of a header value is shown back: its last characters, when it is long enough that
# they give nothing away.
MASK = "****"
MASK_SHOWS = 4
MASK_SHOWS_FROM = 12


@dataclass(frozen=True)
class JobSpec:
    """A job's body, judged: what services.cron_create stores."""

    name: str
    schedule: str
    timezone: str
    endpoint: str
    method: str
    headers: dict[str, str]
    body: Any
    enabled: bool


def next_run(schedule: str, tz: str, *, after: datetime) -> datetime:
    """The first time the schedule fires after `after` (in `tz`), in UTC."""
    start = after.astimezone(ZoneInfo(tz))
    found = croniter(schedule, start).get_next(datetime)
    assert isinstance(found, datetime)
    return found.astimezone(UTC)


def clean_schedule(value: Any, tz: str = DEFAULT_TIMEZONE) -> str:
    """A 5-field cron expression (minute hour day-of-month month day-of-week) that fires."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid.one("schedule", "Give a 5-field cron expression, like */15 * * * *.")
    fields = value.split()
    if len(fields) != 5:
        raise Invalid.one(
            "schedule",
            f"Use 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}.",
        )
    schedule = " ".join(fields)
    try:
        next_run(schedule, tz, after=datetime.now(UTC))
    except CroniterBadDateError:
        raise Invalid.one("schedule", f"{schedule!r} never fires (no such date).") from None
    except (CroniterError, ValueError, KeyError):
        raise Invalid.one("schedule", f"{schedule!r}: {_bad_field(fields)}.") from None
    return schedule


# Each field of a cron expression: its name and the values it takes.
CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day of month", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("day of week", "0-7 or sun-sat"),
)


def _bad_field(fields: list[str]) -> str:
    """Why croniter refused `fields`: the first field it refuses alone, with its range."""
    for index, (name, values) in enumerate(CRON_FIELDS):
        alone = ["*"] * 5
        alone[index] = fields[index]
        try:
            croniter(" ".join(alone))
        except (CroniterError, ValueError, KeyError):
            took = f"it takes {values}, *, lists, ranges and steps"
            return f"the {name} field {fields[index]!r} is not understood ({took})"
    return "its fields do not make a schedule together"


def clean_timezone(value: Any) -> str:
    """An IANA time zone name; UTC when left out."""
    if value is None or value == "":
        return DEFAULT_TIMEZONE
    if not isinstance(value, str) or len(value) > 64:
        raise Invalid.one("timezone", "Give an IANA time zone name, like Europe/Berlin.")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # "Europe" is a directory
        raise Invalid.one(
            "timezone", f"Unknown time zone {value[:64]!r}: use an IANA name like Europe/Berlin."
        ) from None
    return value


def local_path(endpoint: str) -> str | None:
    """The allowed path on this server `endpoint` names (its query aside), None for a URL."""
    if not endpoint.startswith("/"):
        return None
    return urlsplit(endpoint).path.rstrip("/") or "/"


def local_query(endpoint: str) -> str:
    """The query string of a local endpoint, for its runner to read."""
    return urlsplit(endpoint).query


def clean_endpoint(value: Any) -> str:
    """A path on this server from LOCAL_ENDPOINTS (a query allowed), or an https URL the
    webhooks' address rules allow."""
    allowed = ", ".join(LOCAL_ENDPOINTS)
    if not isinstance(value, str) or not value.strip():
        raise Invalid.one("endpoint", f"Give a path on this server ({allowed}) or an https URL.")
    endpoint = value.strip()
    if any(ch.isspace() or not ch.isprintable() for ch in endpoint):
        raise Invalid.one("endpoint", "An endpoint holds no spaces or control characters.")
    if not endpoint.isascii():
        raise Invalid.one(
            "endpoint", "Percent-encode other characters than ASCII (a host in its xn-- form)."
        )
    if endpoint.startswith("/"):
        if local_path(endpoint) not in LOCAL_ENDPOINTS:
            raise Invalid.one(
                "endpoint",
                f"A path on this server must be one of {allowed}; got {endpoint[:80]!r}.",
            )
        return endpoint
    if not endpoint.lower().startswith("https://"):
        raise Invalid.one("endpoint", f"Use an https:// URL, or a path on this server ({allowed}).")
    try:
        return url_check(endpoint)
    except Invalid as invalid:
        raise Invalid({"endpoint": invalid.fields.get("url", [invalid.text()])}) from None


def clean_method(value: Any, endpoint: str) -> str:
    """An HTTP method from METHODS (default GET). A path on this server runs with its own
    method whatever the body says: the client sends GET unless told otherwise."""
    if value is None or value == "":
        value = DEFAULT_METHOD
    if not isinstance(value, str) or value.upper() not in METHODS:
        raise Invalid.one("method", f"Use one of {', '.join(METHODS)}.")
    path = local_path(endpoint)
    return LOCAL_ENDPOINTS[path] if path is not None else value.upper()


def clean_headers(value: Any, endpoint: str) -> dict[str, str]:
    """Header names and values for an outside URL; none for a path on this server."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid.one("headers", "Give an object of header names and values.")
    if value and local_path(endpoint) is not None:
        raise Invalid.one(
            "headers", "A path on this server runs as the mind's agent: give no headers."
        )
    if len(value) > MAX_HEADERS:
        raise Invalid.one("headers", f"At most {MAX_HEADERS} headers.")
    headers: dict[str, str] = {}
    for name, text in value.items():
        if not _HEADER_NAME.fullmatch(name) or len(name) > MAX_HEADER_NAME_LENGTH:
            raise Invalid.one("headers", f"{name[:60]!r} is not a header name.")
        if name.lower() in RESERVED_HEADERS:
            raise Invalid.one("headers", f"{name} is set by the server; leave it out.")
        if not isinstance(text, str):
            raise Invalid.one("headers", f"The value of {name} must be a string.")
        if len(text) > MAX_HEADER_VALUE_LENGTH or not _HEADER_VALUE.fullmatch(text):
            raise Invalid.one(
                "headers",
                f"The value of {name}: at most {MAX_HEADER_VALUE_LENGTH} printable ASCII "
                "characters.",
            )
        headers[name] = text
    return headers


def clean_body(value: Any, endpoint: str, method: str) -> Any:
    """What is sent: none, a string, or JSON, at most MAX_BODY_BYTES. A local POST takes a
    JSON object (or a string holding one); a local GET takes none (parameters go in the
    endpoint's query)."""
    if value is None or value == "":
        return None
    try:
        sent = body_bytes(value)
    except (UnicodeEncodeError, TypeError):
        raise Invalid.one("body", "Give a string or JSON, of valid Unicode text.") from None
    if len(sent) > MAX_BODY_BYTES:
        raise Invalid.one("body", f"At most {MAX_BODY_BYTES // 1024} KB, got {len(sent):,} bytes.")
    path = local_path(endpoint)
    if path is not None:
        if method == "GET":
            raise Invalid.one(
                "body", f"{path} takes no body: give its parameters in the endpoint's query."
            )
        local_body(value)
    return value


def body_bytes(value: Any) -> bytes:
    """What a job's body sends: a string as its UTF-8 bytes, anything else as JSON."""
    return value.encode("utf-8") if isinstance(value, str) else orjson.dumps(value)


def local_body(value: Any) -> dict[str, Any]:
    """The JSON object a local POST gets from the job's body."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise Invalid.one("body", "A path on this server takes a JSON object.") from None
    if not isinstance(value, dict):
        raise Invalid.one("body", "A path on this server takes a JSON object.")
    return value


def cron_body_clean(body: Any) -> JobSpec:
    """A cron job's body judged: every field at fault named, unknown fields refused."""
    if not isinstance(body, Mapping):
        raise Invalid.one("non_field_errors", "Send a JSON object.")
    unknown = [name for name in body if name not in JOB_FIELDS]
    if unknown:
        raise Invalid(
            {name: [f"Unknown field. Fields: {', '.join(JOB_FIELDS)}."] for name in unknown[:10]}
        )
    errors: dict[str, list[str]] = {}

    def judged(clean: Any, *args: Any) -> Any:
        try:
            return clean(*args)
        except Invalid as invalid:
            for field, messages in invalid.fields.items():
                errors.setdefault(field, []).extend(messages)
            return None

    name = judged(clean_name, body.get("name"))
    tz = judged(clean_timezone, body.get("timezone"))
    schedule = judged(clean_schedule, body.get("schedule"), tz or DEFAULT_TIMEZONE)
    endpoint = judged(clean_endpoint, body.get("endpoint"))
    method = headers = payload = None
    if endpoint is not None:
        method = judged(clean_method, body.get("method"), endpoint)
        headers = judged(clean_headers, body.get("headers"), endpoint)
        if method is not None:
            payload = judged(clean_body, body.get("body"), endpoint, method)
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        errors.setdefault("enabled", []).append("Must be true or false.")
    if errors or method is None or headers is None:
        raise Invalid(errors)
    return JobSpec(
        name=name,
        schedule=schedule,
        timezone=tz,
        endpoint=endpoint,
        method=method,
        headers=headers,
        body=payload,
        enabled=enabled,
    )


def clean_name(value: Any) -> str:
    """1 to MAX_NAME_LENGTH characters, trimmed; no NUL."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid.one("name", "Give the job a name.")
    if len(value.strip()) > MAX_NAME_LENGTH or "\x00" in value:
        raise Invalid.one("name", f"At most {MAX_NAME_LENGTH} characters, no NUL.")
    return value.strip()


def mask(value: str) -> str:
    """A header value as it is shown back: never in full."""
    if len(value) >= MASK_SHOWS_FROM:
        return MASK + value[-MASK_SHOWS:]
    return MASK


# --- Variables ---------------------------------------------------------------------------------


def clean_variable_key(value: Any) -> str:
    """A key as a memory's key (memories/rules.py)."""
    if value is None:
        raise Invalid.one("key", "Give the variable's key.")
    try:
        return clean_key(value)
    except ValueError as error:
        raise Invalid.one(
            "key", str(error).replace(" (omit it to let the server derive one)", "")
        ) from None


def clean_value(value: Any) -> str:
    """A string of at most MAX_VALUE_BYTES UTF-8 bytes."""
    if not isinstance(value, str):
        raise Invalid.one("value", "Give the value as a string.")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise Invalid.one("value", "Must be valid Unicode text.") from None
    if "\x00" in value:
        raise Invalid.one("value", "May not contain NUL characters.")
    if size > MAX_VALUE_BYTES:
        raise Invalid.one("value", f"At most {MAX_VALUE_BYTES // 1024} KB, got {size:,} bytes.")
    return value


def variable_size(key: str, value: str) -> int:
    """What a variable counts against its mind's storage quota: its key's and value's bytes."""
    return len(key.encode("utf-8")) + len(value.encode("utf-8"))


def variable_body_clean(body: Any) -> tuple[str, str]:
    """A variable's body judged: (key, value)."""
    if not isinstance(body, Mapping):
        raise Invalid.one("non_field_errors", "Send a JSON object with key and value.")
    unknown = [name for name in body if name not in VARIABLE_FIELDS]
    if unknown:
        raise Invalid({name: ["Unknown field. Fields: key, value."] for name in unknown[:10]})
    errors: dict[str, list[str]] = {}
    key = value = ""
    try:
        key = clean_variable_key(body.get("key"))
    except Invalid as invalid:
        errors.update(invalid.fields)
    try:
        value = clean_value(body.get("value"))
    except Invalid as invalid:
        errors.update(invalid.fields)
    if errors:
        raise Invalid(errors)
    return key, value
