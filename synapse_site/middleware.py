from __future__ import annotations

import io
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.core.signals import request_finished
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from rest_framework.settings import api_settings

from synapse_site import logs, metrics
from synapse_site.errors import error_body
from synapse_site.faces import HTML_FACES, face_of

request_log = logging.getLogger("synapse.request")

GetResponse = Callable[[HttpRequest], HttpResponseBase]


def _end_request_log_context(**kwargs: object) -> None:
    logs.end_request()


# Sent once the response is closed: after Django's own lines about it and a streamed body.
request_finished.connect(_end_request_log_context, dispatch_uid="synapse-end-request-log")


class RequestIdMiddleware:
    """Every response carries `X-Request-Id`, and so does every log line of its request; the
    request ends with one line of its own (method, path without the query, status, time).

    The id comes from the proxy in front when SYNAPSE_NUM_PROXIES says there is one (nginx's
    `$request_id`, so its log and ours name the request alike) and the value is a plain token;
    otherwise, and always without a proxy (a client could pick any id), it is made here.
    """

    HEADER = "X-Request-Id"
    SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:=-]{0,127}")

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        request_id = self.incoming_id(request) or uuid.uuid4().hex
        logs.begin_request(request_id)  # ended by request_finished (above)
        response = self.get_response(request)
        response[self.HEADER] = request_id
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        request_log.info(
            "%s %s %s %.1fms",
            request.method,
            request.path,
            response.status_code,
            duration_ms,
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": duration_ms,
            },
        )
        return response

    def incoming_id(self, request: HttpRequest) -> str | None:
        if not api_settings.NUM_PROXIES:
            return None
        value = request.headers.get(self.HEADER, "")
        return value if self.SANE.fullmatch(value) else None


class RequestMetricsMiddleware:
    """Counts each request by endpoint, method and status, with its time (GET /metrics)."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        metrics.observe_request(request, response.status_code, time.perf_counter() - started)
        return response


def _too_large(detail: str) -> JsonResponse:
    return JsonResponse(error_body("payload_too_large", detail), status=413)


class BodySizeLimitMiddleware:
    """Answer 413 before reading a body larger than SYNAPSE_MAX_BODY_BYTES.

    DRF's parsers read the request stream directly, which skips Django's own size check.

    A chunked body (no Content-Length) would otherwise reach the views as an empty body,
    since Django reads only Content-Length bytes. When the server marks its input as
    terminated (gunicorn does), the body is read here up to the limit and handed on with a
    Content-Length; more than the limit is a 413. A server that cannot tell where a chunked
    body ends gets 411, never a silently empty body.
    """

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            refused = self._read_chunked(request, limit)
            if refused is not None:
                return refused
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit is not None and length > limit:
            return _too_large(
                f"The request body is {length} bytes; this server accepts at most {limit}."
            )
        return self.get_response(request)

    @staticmethod
    def _read_chunked(request: HttpRequest, limit: int | None) -> JsonResponse | None:
        if not request.META.get("wsgi.input_terminated"):
            return JsonResponse(
                error_body(
                    "length_required",
                    "Send the body with a Content-Length header; this server cannot read "
                    "a chunked body.",
                ),
                status=411,
            )
        wsgi_input = request.META["wsgi.input"]
        try:
            body = wsgi_input.read(limit + 1) if limit is not None else wsgi_input.read()
        except Exception:  # the WSGI server's framing errors (gunicorn: ParseException, NoMoreData)
            return JsonResponse(
                error_body("malformed_body", "The chunked body is malformed or cut short."),
                status=400,
            )
        if limit is not None and len(body) > limit:
            return _too_large(
                f"The request body is over {limit} bytes, the most this server accepts."
            )
        request.META["CONTENT_LENGTH"] = str(len(body))
        # As Django's WSGIRequest does; the stubs declare _stream a BinaryIO, which it is not.
        request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
        return None


class SingleQueryValueMiddleware:
    """A query parameter given twice (`?mind=a&mind=b`) is a 400, not "the last one wins".

    Every API parameter takes one value; silently picking one of several hides a client's
    mistake and lets a parameter be smuggled past whatever looked at the other copy. The
    pages for people read their forms themselves and are left alone, as are static files.
    """

    EXEMPT = HTML_FACES | {"static"}

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if face_of(request.path) not in self.EXEMPT:
            repeated = sorted(k for k, values in request.GET.lists() if len(values) > 1)
            if repeated:
                fields = {name: ["Given more than once; give it once."] for name in repeated}
                return JsonResponse(
                    error_body(
                        "invalid",
                        f"Query parameters given more than once: {', '.join(repeated)}.",
                        fields,
                    ),
                    status=400,
                )
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """`Content-Security-Policy` on our own HTML pages (dashboard, sign-in, the guide).

    Their templates load scripts and styles from /static only and have no inline scripts,
    styles or event handlers, so the policy can forbid everything else: injected markup
    cannot run script, load from other hosts, post forms elsewhere or be framed. The admin
    uses inline scripts and styles of its own and is left without the header (it is
    staff-only), and so is the API reference (/api/docs), which shows no one's data.
    """

    POLICY = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    EXEMPT = frozenset({"admin", "api_docs"})

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        is_html = response.get("Content-Type", "").startswith("text/html")
        if is_html and face_of(request.path) not in self.EXEMPT:
            response.headers.setdefault("Content-Security-Policy", self.POLICY)
        return response
