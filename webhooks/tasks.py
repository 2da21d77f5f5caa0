"""The webhook worker on the job engine (huey): a write's commit enqueues `webhooks_due`,
which wakes this process's dispatcher (webhooks/delivery.py); the dispatcher also looks by
itself every few seconds, so a lost wake-up delays a delivery, never loses it."""

from __future__ import annotations

import logging
import os
import threading

from huey.contrib.djhuey import HUEY, db_task, on_startup

from core.wake import Waker
from webhooks.delivery import Dispatcher

logger = logging.getLogger(__name__)

_dispatcher: Dispatcher | None = None
_dispatcher_pid: int | None = None


@db_task()
def webhooks_due() -> None:
    """Deliveries are due: wake the dispatcher of the worker process that runs this."""
    if _dispatcher is not None and _dispatcher_pid == os.getpid():
        _dispatcher.wake()


@on_startup()
def start_dispatcher() -> None:
    """In the worker process: send deliveries from now on, from threads of their own."""
    global _dispatcher, _dispatcher_pid
    if _dispatcher_pid == os.getpid():
        return
    _dispatcher, _dispatcher_pid = Dispatcher(), os.getpid()
    threading.Thread(target=_dispatcher.run_forever, name="webhooks", daemon=True).start()
    _dispatcher.wake()  # what waited while no worker ran


# A burst of writes is one enqueue per WAKE_INTERVAL, from a thread of the writing process.
WAKE_INTERVAL = 0.2
_waker = Waker(
    lambda: webhooks_due(),
    name="webhook-waker",
    interval=WAKE_INTERVAL,
    immediate=lambda: bool(HUEY.immediate),
)


def wake() -> None:
    _waker.wake()
