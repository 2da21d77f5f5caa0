"""gunicorn settings for `make run`, driven by the same environment variables as Django."""

import os

from synapse_site.logs import logging_config, parse_log_format
from synapse_site.server import (
    exposure_problem,
    forget_worker_metrics,
    leave_worker,
    preload_embedder,
    prepare_metrics_dir,
    use_json_protocol_errors,
)

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
try:
    LOG_FORMAT = parse_log_format(os.environ.get("LOG_FORMAT", ""))
except ValueError as exc:
    raise SystemExit(str(exc)) from None
if LOG_FORMAT == "json":
    # gunicorn's own lines as JSON too, and no access log: Django logs one JSON line for each
    # request instead, with its id, mind, status and time (synapse_site/middleware.py).
    accesslog = None
    logconfig_dict = logging_config(
        log_format="json", level=os.environ.get("LOG_LEVEL", "").strip() or "INFO"
    )
else:
    accesslog = "-"
# The path without its query string, and no Referer: query strings carry search words (what
# people told their agents) and would carry a Mind Key a client wrongly put in the URL. Last,
# the request's X-Request-Id, as Django's log lines carry it.
access_log_format = (
    '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(D)sus %({x-request-id}o)s'
)
errorlog = "-"
# Agents keep connections short; a slow client must not pin a worker forever.
timeout = 30
graceful_timeout = 10
# gunicorn's largest, so an over-long search mostly reaches the API and its JSON 400; a line
# longer still gets a JSON 414 (synapse_site/server.py).
limit_request_line = 8190
# No control socket: gunicorn's default path is one per user, so two servers on a machine
# (blue/green) would take it from each other, and nothing here uses gunicornc.
control_socket_disable = True


def on_starting(server):
    proxies = int(os.environ.get("SYNAPSE_NUM_PROXIES", "0") or 0)
    for address in server.cfg.bind:
        problem = exposure_problem(address, proxies)
        if problem:
            raise SystemExit(problem)
    use_json_protocol_errors()
    # Before any worker starts: each keeps its metric figures in files there, and GET /metrics
    # sums them all (prometheus-client's multiprocess mode; the workers inherit the variable).
    prepare_metrics_dir()
    # Last, once the start is sure: the workers fork from a master holding the model.
    preload_embedder()


def child_exit(server, worker):
    forget_worker_metrics(worker.pid)


def worker_exit(server, worker):
    # A normal exit would hang or abort in onnxruntime's handlers (synapse_site/server.py).
    leave_worker()


# Memory. A DRF view and its request point at each other (view.request and
# request.parser_context["view"]) and the view keeps its response, so a large answer stays in
# memory until a full garbage collection, which a worker with the whole app loaded seldom
# runs. Freezing what the app loaded at start makes a full collection cheap, so one runs
# after every large answer (docs/performance.md has the figures).
LARGE_ANSWER = 256 * 1024


def post_worker_init(worker):
    import gc

    use_json_protocol_errors()

    gc.freeze()


def post_request(worker, req, environ, resp):
    if (resp.sent or 0) > LARGE_ANSWER:
        import gc

        gc.collect()
