"""The errors every core app (accounts, minds, memories) raises. Each face maps them once:
the API's exception handler, a dashboard message, an MCP tool result.

What each error means: docs/internals.md#the-cores-errors.
"""

from __future__ import annotations

from collections.abc import Mapping

NON_FIELD = "non_field_errors"


class CoreError(Exception):
    """A refusal a person or an agent can act on; `detail` says what to do."""

    code = "error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def text(self) -> str:
        """The whole refusal in one text, for a face that shows no fields apart."""
        return self.detail


class Invalid(CoreError):
    """Input that breaks a rule: {field: [messages]} for every field at fault."""

    code = "invalid"

    def __init__(self, fields: Mapping[str, list[str]]) -> None:
        self.fields = {str(name): list(messages) for name, messages in fields.items()}
        super().__init__(_summary(self.fields))

    @classmethod
    def one(cls, field: str, message: str) -> Invalid:
        return cls({field: [message]})

    def text(self) -> str:
        """Every message after the field it is about: "key: May not be empty. tags: …"."""
        return " ".join(f"{name}: {m}" for name, messages in self.fields.items() for m in messages)


def _summary(fields: dict[str, list[str]]) -> str:
    """One sentence: the field and its message when one field is at fault, else the names."""
    named = sorted(name for name in fields if name != NON_FIELD)
    if not named:
        return next(iter(fields.get(NON_FIELD, [])), "Invalid input.")
    if len(fields) == 1:
        return f"{named[0]}: {fields[named[0]][0]}"
    return f"Invalid input in: {', '.join(named)}."


class NotFound(CoreError):
    code = "not_found"


class Conflict(CoreError):
    code = "conflict"


class Forbidden(CoreError):
    code = "forbidden"


class TooLarge(CoreError):
    code = "payload_too_large"


class QuotaExceeded(Conflict):
    code = "quota_exceeded"


class Stale(CoreError):
    code = "precondition_failed"


class Unavailable(CoreError):
    """Not possible here or now; `retry_after` (seconds) when it is known to pass."""

    code = "unavailable"

    def __init__(self, detail: str, *, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
