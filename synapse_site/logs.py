"""Logs: one JSON object per line with LOG_FORMAT=json, and the request each line belongs to.

The request middleware (synapse_site/middleware.py) begins a context holding the request's id,
which lasts until Django has closed the response (its own "Not Found" lines and a streamed
body come after the middleware returns); where the request's mind becomes known
(api/scoping.py, api/authentication.py, mcp_server/views.py) it is added. A filter on the
handler copies both onto every record emitted meanwhile, whichever logger emits it.

Only the standard library: gunicorn's master, which loads no Django, formats its own lines
with the same formatter (gunicorn.conf.py).
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

LOG_FORMATS = ("text", "json")

# Attributes a caller may pass with `extra=` that the JSON line carries as its own fields.
EXTRA_FIELDS = ("method", "path", "endpoint", "status", "duration_ms")


@dataclass
class RequestContext:
    request_id: str
    mind_id: str | None = None


_current: ContextVar[RequestContext | None] = ContextVar("synapse_request", default=None)


def begin_request(request_id: str) -> RequestContext:
    """From now until `end_request`, lines logged in this thread carry `request_id` (and the
    mind, once `bind_mind` names it)."""
    context = RequestContext(request_id)
    _current.set(context)
    return context


def end_request() -> None:
    _current.set(None)


def bind_mind(mind_id: str) -> None:
    """The mind the current request acts on; no-op outside a request."""
    context = _current.get()
    if context is not None:
        context.mind_id = mind_id


def current_request_id() -> str | None:
    context = _current.get()
    return context.request_id if context is not None else None


class RequestContextFilter(logging.Filter):
    """Puts the current request's id and mind on each record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _current.get()
        if not hasattr(record, "request_id"):
            record.request_id = context.request_id if context else None
        if not hasattr(record, "mind_id"):
            record.mind_id = context.mind_id if context else None
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then what is known.
    Not python-json-logger: it writes every `extra` (Django's request too) and nulls."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("request_id", "mind_id", *EXTRA_FIELDS):
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def parse_log_format(raw: str) -> str:
    value = raw.strip().lower() or "text"
    if value not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT={raw!r}: use text or json.")
    return value


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """The logging.dictConfig of every process: Django's LOGGING, and gunicorn's own in JSON."""
    formatter: dict[str, Any] = (
        {"()": "synapse_site.logs.JSONFormatter"}
        if log_format == "json"
        else {"format": "%(message)s"}
    )
    loggers: dict[str, dict[str, Any]] = {
        "django.db.backends": {"level": "INFO"},
        # Failures and lockouts (warnings), not a line for every successful login.
        "axes": {"level": "WARNING"},
        # The worker's start and problems, not a line for every task run (huey's own
        # handler is not added when this one exists: no line twice).
        "huey": {"handlers": ["console"], "propagate": False, "level": "WARNING"},
        "huey.consumer": {"level": "INFO"},
        "huey.consumer.Scheduler": {"level": "WARNING"},
        # One line per request (method, path, status, duration). In text mode gunicorn's
        # access log prints that line already; in JSON mode this one replaces it.
        "synapse.request": {"level": "INFO" if log_format == "json" else "WARNING"},
    }
    if log_format == "json":
        # gunicorn's own messages through the JSON handler; its access log stays silent. In
        # text mode gunicorn keeps the handlers and format it set up itself.
        loggers["gunicorn.error"] = {"level": "INFO", "propagate": True}
        loggers["gunicorn.access"] = {"level": "WARNING", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "filters": {"request": {"()": "synapse_site.logs.RequestContextFilter"}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "filters": ["request"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": loggers,
    }
