"""The circuit breaker in front of an embeddings API's questions (the search side).

After FAILURES failures in a row (an error or a timeout), no question is sent to the API for
COOL_OFF seconds: searches fall back to keywords at once instead of each waiting on a dead
API. Then one request at a time tries it again (half-open): a success closes the breaker, a
failure opens it for another COOL_OFF.

The state lives in Django's default cache, so every process sharing that cache shares it:
every worker of the machine with the default file cache, every host with Redis, one process
with `locmem://`. Its reads and writes are not one atomic step: two workers failing at once
may count one failure, which only opens the breaker a request later.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from typing import TypedDict

from django.core.cache import cache

from memories.embeddings.errors import EmbeddingsError

logger = logging.getLogger(__name__)

FAILURES = 3
COOL_OFF = 30  # seconds
# Failures further apart than this are not "in a row": the count starts again.
MEMORY = 600  # seconds


class State(TypedDict):
    failures: int
    open_until: float | None  # epoch seconds; None while closed


class BreakerOpen(EmbeddingsError):
    """The breaker is open: the API is not asked; `retry_after` is when it may be again."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"Questions are not sent to the embeddings API for {retry_after} s more: it "
            f"failed {FAILURES} times in a row."
        )
        self.retry_after = retry_after


class Breaker:
    """One embeddings API's breaker; `probe_seconds` bounds one try in the half-open state
    (the query timeout and a little more), after which another request may try."""

    def __init__(self, name: str, *, probe_seconds: float) -> None:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
        self._key = f"embeddings-breaker:{digest}"
        self._probe_key = f"{self._key}:probe"
        self._probe_seconds = max(math.ceil(probe_seconds), 1)

    def before(self) -> State | None:
        """The state seen, when a question may be sent now; BreakerOpen when not."""
        state: State | None = cache.get(self._key)
        if state is None or state["open_until"] is None:
            return state
        wait = state["open_until"] - time.time()
        if wait > 0:
            raise BreakerOpen(math.ceil(wait))
        # Half-open: the first request to get here tries, the others wait for its answer.
        if cache.add(self._probe_key, 1, timeout=self._probe_seconds):
            return state
        raise BreakerOpen(self._probe_seconds)

    def succeeded(self, seen: State | None) -> None:
        """Close the breaker, if `before` saw failures (nothing to write while all is well)."""
        if seen is not None:
            cache.delete_many([self._key, self._probe_key])

    def failed(self) -> None:
        """Count a failure; the FAILURES-th in a row (or a failed try) opens the breaker."""
        state: State = cache.get(self._key) or State(failures=0, open_until=None)
        failures = state["failures"] + 1
        open_until = state["open_until"]
        if failures >= FAILURES:
            open_until = time.time() + COOL_OFF
            logger.warning(
                "The embeddings API failed %d times in a row: searches use keywords alone "
                "for the next %d s, then one tries it again.",
                failures,
                COOL_OFF,
            )
        cache.set(self._key, State(failures=failures, open_until=open_until), timeout=MEMORY)
        cache.delete(self._probe_key)
