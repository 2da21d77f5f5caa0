"""How a gunicorn worker and the background worker end: without the C++ libraries' exit handlers.

onnxruntime keeps a thread of its own and its exit handlers wait for it. A gunicorn worker,
forked from the master that loaded the model, has no such thread: the handlers hang there
(until the master's graceful timeout kills the worker) or abort ("terminate called ...").
The background worker stops with a daemon thread possibly still inside onnxruntime, which the
handlers then pull the library from under (an abort again). Neither process has anything
left to save by then: the work lives in the database, so each leaves with `os._exit`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def exit_now(status: int) -> NoReturn:
    """End this process with `status` once its connections are closed and its logs flushed."""
    try:
        from django.db import connections

        connections.close_all()
    finally:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to save
                stream.flush()
        os._exit(status)
