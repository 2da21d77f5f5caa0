"""Prometheus metrics, served by GET /metrics (synapse_site/views.py) in the text format.

Requests are counted by the request middleware. Under gunicorn each worker is a process of
its own: gunicorn.conf.py gives them a PROMETHEUS_MULTIPROC_DIR where each keeps its figures
in files, and a scrape sums the files of every worker, whichever worker answers it
(prometheus-client's multiprocess mode, chosen when the library is first imported). Without
that directory (runserver, tests) the figures are this process's own. What the database holds
(users, minds, memories, pending embeddings) is read when scraped: a few COUNTs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from django.core.signals import got_request_exception
from django.db import Error as DatabaseError
from django.db.models import Sum
from django.http import HttpRequest
from django.urls import Resolver404, resolve
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from memories.embeddings import outbox
from minds.models import Mind
from synapse_site.faces import face_of

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

# Any other method (anyone can send `FOO /`) is counted as "other": labels stay few.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# Created unregistered: a scrape builds its own registry (below).
REQUESTS = Counter(
    "synapse_http_requests",
    "Requests answered, by endpoint (the route's name), method and status.",
    ["endpoint", "method", "status"],
    registry=None,
)
LATENCY = Histogram(
    "synapse_http_request_duration_seconds",
    "Seconds from the request reaching Django to its response, by endpoint and method.",
    ["endpoint", "method"],
    registry=None,
)
THROTTLED = Counter(
    "synapse_http_throttled_requests",
    "Requests refused with 429 (rate limits and login lockouts), by endpoint.",
    ["endpoint"],
    registry=None,
)
DATABASE_ERRORS = Counter(
    "synapse_database_errors",
    "Requests that ended in a database error (django.db.Error raised out of a view).",
    registry=None,
)
IN_PROCESS = (REQUESTS, LATENCY, THROTTLED, DATABASE_ERRORS)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def endpoint_of(request: HttpRequest) -> str:
    """The route's name (`memory-detail`, `admin:index`), never the raw path: a bounded label."""
    match = getattr(request, "resolver_match", None)
    if match is None:  # answered before the URL was resolved (a static file, a 413 …)
        if face_of(request.path) == "static":
            return "static"
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return "unmatched"
    return match.view_name or match.route or "unnamed"


def observe_request(request: HttpRequest, status: int, seconds: float) -> None:
    endpoint = endpoint_of(request)
    method = request.method if request.method in METHODS else "other"
    REQUESTS.labels(endpoint, method, str(status)).inc()
    LATENCY.labels(endpoint, method).observe(seconds)
    if status == 429:
        THROTTLED.labels(endpoint).inc()


def _count_database_error(sender: Any, **kwargs: Any) -> None:
    # Sent by Django's handler while it handles the exception that ended a request.
    if isinstance(sys.exc_info()[1], DatabaseError):
        DATABASE_ERRORS.inc()


got_request_exception.connect(_count_database_error, dispatch_uid="synapse-metrics-db-errors")


class StoredCounts(Collector):
    """What the database holds, read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from memories.tasks import worker_last_seen

        users = get_user_model().objects.count()
        # Each mind's own count, kept by the write path: no scan of the memories table.
        memories = Mind.objects.aggregate(total=Sum("stored_memories"))["total"] or 0
        yield GaugeMetricFamily("synapse_users", "Accounts.", value=users)
        yield GaugeMetricFamily("synapse_minds", "Minds.", value=Mind.objects.count())
        yield GaugeMetricFamily("synapse_memories", "Memories, in every mind.", value=memories)
        yield GaugeMetricFamily(
            "synapse_embeddings_pending",
            "Memories waiting for the background worker to give them a vector.",
            value=outbox.pending_count(),
        )
        yield GaugeMetricFamily(
            "synapse_embeddings_parked",
            "Memories the embedder refused again and again: no batch takes them until their "
            "memory changes, a worker starts or `manage.py embed` runs.",
            value=outbox.parked_count(),
        )
        if outbox.enabled():
            seen = worker_last_seen()
            yield GaugeMetricFamily(
                "synapse_worker_last_seen_timestamp_seconds",
                "When a background worker last reported alive (Unix time; 0: never).",
                value=seen or 0,
            )


class _InProcess(Collector):
    def collect(self) -> Iterator[Metric]:
        for metric in IN_PROCESS:
            yield from metric.collect()


def exposition() -> bytes:
    """Every metric, in Prometheus' text format."""
    registry = CollectorRegistry(auto_describe=False)
    path = multiprocess_dir()
    if path:
        # prometheus_client leaves this one unannotated.
        MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    else:
        registry.register(_InProcess())
    registry.register(StoredCounts())
    return generate_latest(registry)
