"""The chat's limits, in one place: every face (API, dashboard, MCP) imports them."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from core.errors import Invalid
from memories.fields import CONTENT_PATTERN

# A message's content: 1 to this many characters.
MAX_CONTENT_LENGTH = 10_000
# GET /chat/history: the last `limit` messages, by default and at most.
HISTORY_DEFAULT = 50
HISTORY_MAX = 500
# GET /chat/poll: the agent gets at most this many messages at once (it polls again with
# the answer's `last_id` for the rest).
POLL_MAX = 100
# The agent counts as online while its last poll is at most this old.
ONLINE_WINDOW = timedelta(seconds=60)
# A poll records the agent's last visit only when the one recorded is older than this, so
# an agent polling every second does not write every second.
SEEN_PRECISION = timedelta(seconds=5)

# The fields a message body takes (POST /chat/send, POST /chat/reply, the MCP tool).
BODY_FIELDS = ("content", "reply_to_id")
# The roles `GET /chat/unread?role=` names: whose unread messages are counted.
ROLES = ("agent", "human")

# The JSON Schema of a message body's fields, for the faces that describe it (OpenAPI, MCP).
CONTENT_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_CONTENT_LENGTH,
    "pattern": CONTENT_PATTERN,
}
REPLY_TO_SCHEMA: dict[str, Any] = {"type": ["integer", "null"], "minimum": 1}

# NUL is refused by PostgreSQL; lone surrogates cannot be stored as UTF-8 at all.
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")


def content_check(value: Any) -> str:
    """Any text of 1 to MAX_CONTENT_LENGTH characters, kept as sent (not stripped)."""
    if not isinstance(value, str):
        raise Invalid.one("content", "Must be a string.")
    if not value.strip():
        raise Invalid.one("content", "May not be empty or only whitespace.")
    if len(value) > MAX_CONTENT_LENGTH:
        raise Invalid.one(
            "content", f"At most {MAX_CONTENT_LENGTH:,} characters, got {len(value):,}."
        )
    if _UNENCODABLE.search(value):
        raise Invalid.one(
            "content", "Contains a NUL character or an invalid (surrogate) code point."
        )
    return value


def reply_to_check(value: Any) -> int | None:
    """A message number (1 or more), or None for no reply."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid.one("reply_to_id", "Give the id (a whole number, 1 or more) of a message.")
    return int(value)


def body_check(body: Any) -> tuple[str, int | None]:
    """A message body `{content, reply_to_id?}`: its content and the number it replies to.
    Invalid naming every field at fault (an unknown field too)."""
    if not isinstance(body, dict):
        raise Invalid.one("non_field_errors", "Send a JSON object.")
    errors: dict[str, list[str]] = {}
    for name in sorted(set(body) - set(BODY_FIELDS)):
        errors[str(name)] = [f"Unknown field; a message takes {', '.join(BODY_FIELDS)}."]
    content: str = ""
    reply_to: int | None = None
    if "content" not in body:
        errors["content"] = ["Give the message's text."]
    else:
        try:
            content = content_check(body["content"])
        except Invalid as invalid:
            errors.update(invalid.fields)
    try:
        reply_to = reply_to_check(body.get("reply_to_id"))
    except Invalid as invalid:
        errors.update(invalid.fields)
    if errors:
        raise Invalid(errors)
    return content, reply_to
