"""What gunicorn needs from Synapse beyond its settings (gunicorn.conf.py uses it).

- Errors gunicorn answers itself, before Django sees the request (a request line or header
  over its limits, malformed HTTP), in the API's JSON shape instead of gunicorn's HTML page.
- The deployment rule for gunicorn's sync workers: each holds one connection at a time, so
  clients that send slowly can hold them all. A buffering proxy in front (docs/deploy.md)
  reads each request whole first; bound to a non-loopback address without one, the server
  refuses to start.
- The directory where the workers keep their metric figures for GET /metrics to sum.
- The local embedding model, loaded once before the workers fork, so they share its pages,
  and the workers' way out that this needs.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import NoReturn

from gunicorn import util  # type: ignore[import-untyped]

from synapse_site.exits import exit_now
from synapse_site.paths import data_dir, private_dir

# What each status gunicorn answers by itself means, in the API's error codes.
PROTOCOL_ERRORS = {
    400: ("bad_request", "The request is not valid HTTP"),
    403: ("forbidden", "The request is forbidden"),
    414: ("uri_too_long", "The request line (path and query) is too long"),
    417: ("expectation_failed", "The Expect header cannot be met"),
    431: ("headers_too_large", "The request headers are too large"),
    501: ("not_implemented", "That transfer coding is not supported"),
}


def protocol_error_bytes(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer for an error found while reading the request."""
    code, sentence = PROTOCOL_ERRORS.get(status, ("server_error", "Something went wrong"))
    detail = f"{sentence}: {message}." if message else f"{sentence}."
    body = json.dumps({"error": code, "detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def write_protocol_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """Stands in for `gunicorn.util.write_error` (same signature): the JSON form."""
    util.write_nonblock(sock, protocol_error_bytes(status_int, reason, mesg))


def use_json_protocol_errors() -> None:
    # gunicorn writes these answers with one module-level function and has no setting for it.
    util.write_error = write_protocol_error


def exposure_problem(bind: str, num_proxies: int) -> str | None:
    """Why serving on `bind` is refused, or None when it is fine."""
    if num_proxies > 0 or bind.startswith("unix:"):
        return None
    host = bind.rsplit(":", 1)[0].strip("[]") if ":" in bind else bind
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost
        loopback = False
    if loopback:
        return None
    return (
        f"Refusing to serve on {bind}: gunicorn's workers each hold one connection, so slow "
        "clients on the network could hold them all. Put a buffering proxy such as nginx in "
        "front (docs/deploy.md) and set SYNAPSE_NUM_PROXIES=1, or bind HOST=127.0.0.1."
    )


METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def prepare_metrics_dir(environ: MutableMapping[str, str] = os.environ) -> Path:
    """The directory where the workers keep their metric files, emptied of a previous run's
    (a server killed outright leaves them): PROMETHEUS_MULTIPROC_DIR, else `metrics/` in the
    data directory, named in `environ` for the workers to inherit."""
    path = Path(environ.get(METRICS_DIR_VARIABLE, "").strip() or data_dir(environ) / "metrics")
    private_dir(path)
    for stale in path.glob("*.db"):
        stale.unlink()
    environ[METRICS_DIR_VARIABLE] = str(path)
    return path


def forget_worker_metrics(pid: int) -> None:
    """A worker exited: its live gauges no longer count (its counters still do)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]  # unannotated upstream


def preload_embedder() -> None:
    """Load the bundled embedding model in gunicorn's master, before the workers fork: each
    worker then shares the master's copy of its weights instead of loading its own. Only
    with one thread per process (SYNAPSE_EMBEDDINGS_THREADS=1, the default): a model with a
    thread pool must load after the fork. A model that cannot load is left to the workers,
    which say why on their first search by meaning."""
    import django
    from django.apps import apps
    from django.conf import settings

    if not apps.ready:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synapse_site.settings")
        django.setup()
    from memories.embeddings import LOCAL, EmbeddingsError, get_embedder

    if settings.SYNAPSE_EMBEDDINGS not in LOCAL or settings.SYNAPSE_EMBEDDINGS_THREADS != 1:
        return

    try:
        get_embedder()
    except EmbeddingsError as exc:
        logging.getLogger(__name__).warning("The embedding model did not load: %s", exc)


def leave_worker() -> NoReturn:
    """End a gunicorn worker once gunicorn is done with it (its `worker_exit` hook), with the
    status it was leaving with, skipping the exit handlers that hang or abort after a fork
    (synapse_site/exits.py)."""
    leaving = sys.exc_info()[1]
    code = leaving.code if isinstance(leaving, SystemExit) else 1
    exit_now(code if isinstance(code, int) else (0 if code is None else 1))
