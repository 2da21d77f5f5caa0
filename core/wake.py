"""Soon, not now: a call made from a thread of its own after a write's commit, at most once
per interval however many writes ask for it (waking a background worker, say)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Waker:
    """Calls `send` soon after `wake()`: from a thread of this process, at most once per
    `interval` seconds, and once more after wakes that came during an interval. `wake()`
    itself returns at once. With `immediate` (tests), `wake()` calls `send` itself."""

    def __init__(
        self,
        send: Callable[[], object],
        *,
        name: str,
        interval: float,
        immediate: Callable[[], bool] = lambda: False,
    ) -> None:
        self._send = send
        self._name = name
        self._interval = interval
        self._immediate = immediate
        self._wanted = threading.Event()
        self._pid: int | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        if self._immediate():
            self._call()
            return
        self._ensure_thread()
        self._wanted.set()

    def _ensure_thread(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            # Threads do not survive a fork: a gunicorn worker starts its own.
            if self._pid != os.getpid():
                threading.Thread(target=self._run, name=self._name, daemon=True).start()
                self._pid = os.getpid()

    def _run(self) -> None:
        while True:
            self.serve_once()

    def serve_once(self) -> None:
        self._wanted.wait()
        self._wanted.clear()
        self._call()
        time.sleep(self._interval)

    def _call(self) -> None:
        try:
            self._send()
        except Exception:  # the work is committed: a periodic task or a restart takes it
            logger.exception("Could not wake the worker (%s)", self._name)
