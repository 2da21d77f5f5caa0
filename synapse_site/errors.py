"""One error shape everywhere: {"error": code, "detail": sentence, "fields": {…}}."""

from __future__ import annotations

import logging
from typing import Any, NotRequired, TypedDict

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from core import errors as core
from synapse_site.faces import HTML_FACES, face_of

logger = logging.getLogger(__name__)

# DRF's codes, renamed where the contract wants a plainer word.
CODE_BY_CLASS = {
    exceptions.ValidationError: "invalid",
    exceptions.ParseError: "malformed_body",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
}


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than this server accepts."
    default_code = "payload_too_large"


NO_CREDENTIALS = (
    "No credentials: send `Authorization: Bearer <token>` with a Mind Key (mk_…) or the "
    "`access` token of POST /login."
)


class ErrorBody(TypedDict):
    error: str
    detail: str
    fields: NotRequired[dict[str, list[str]]]
    retry_after: NotRequired[int]  # rate_limited, unavailable: seconds to wait


def error_body(code: str, detail: str, fields: dict[str, list[str]] | None = None) -> ErrorBody:
    body: ErrorBody = {"error": code, "detail": detail}
    if fields:
        body["fields"] = fields
    return body


def _flatten(value: object) -> list[str]:
    if isinstance(value, dict):
        return [f"{k}: {m}" for k, v in value.items() for m in _flatten(v)]
    if isinstance(value, list):
        return [m for item in value for m in _flatten(item)]
    return [str(value)]


def _fields(detail: object) -> dict[str, list[str]]:
    if isinstance(detail, dict):
        # Always {field: [messages]}: a nested error (the 2nd tag) reads "1: Must be a string."
        return {str(name): _flatten(msgs) for name, msgs in detail.items()}
    return {"non_field_errors": _flatten(detail)}


# The core's own errors (core/errors.py), by the status each answers with.
CORE_STATUS = {
    core.Invalid: status.HTTP_400_BAD_REQUEST,
    core.Forbidden: status.HTTP_403_FORBIDDEN,
    core.NotFound: status.HTTP_404_NOT_FOUND,
    core.Conflict: status.HTTP_409_CONFLICT,
    core.QuotaExceeded: status.HTTP_409_CONFLICT,  # full: delete something, then retry
    core.Stale: status.HTTP_412_PRECONDITION_FAILED,
    core.TooLarge: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    core.Unavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def core_error_response(exc: core.CoreError) -> Response:
    fields = exc.fields if isinstance(exc, core.Invalid) else None
    code = next((code for cls, code in CORE_STATUS.items() if isinstance(exc, cls)), 400)
    body = error_body(exc.code, exc.detail, fields)
    headers = None
    if isinstance(exc, core.Unavailable) and exc.retry_after is not None:
        body["retry_after"] = exc.retry_after
        headers = {"Retry-After": str(exc.retry_after)}
    return Response(body, status=code, headers=headers)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, core.CoreError):
        set_rollback()
        return core_error_response(exc)
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, exceptions.NotAuthenticated):
        # In place: the view has set the WWW-Authenticate header it needs on this exception.
        exc.detail = exceptions.ErrorDetail(NO_CREDENTIALS, code="not_authenticated")

    response = exception_handler(exc, context)
    if response is None:
        return None  # a real bug: Django's handler500 answers (JSON for the API)

    code = next(
        (name for cls, name in CODE_BY_CLASS.items() if isinstance(exc, cls)),
        getattr(exc, "default_code", "error"),
    )
    if isinstance(exc, exceptions.ValidationError):
        fields = _fields(exc.detail)
        names = ", ".join(sorted(k for k in fields if k != "non_field_errors"))
        first = next(iter(_flatten(fields.get("non_field_errors", [])) or []), None)
        detail = f"Invalid input in: {names}." if names else (first or "Invalid input.")
        if names and list(fields) == [names]:
            detail = f"{names}: {_flatten(fields[names])[0]}"
        body = error_body(code, detail, fields)
    else:
        # exception_handler answers only APIException (Http404 and PermissionDenied converted).
        assert isinstance(exc, exceptions.APIException)
        detail = exc.detail if isinstance(exc.detail, str) else " ".join(_flatten(exc.detail))
        body = error_body(code, str(detail))
        # Throttled sets .wait in __init__; the stubs do not declare it.
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:  # type: ignore[attr-defined]
            body["retry_after"] = int(exc.wait) + 1  # type: ignore[attr-defined]
    response.data = body
    return response


def _wants_json(request: HttpRequest) -> bool:
    if face_of(request.path) in HTML_FACES:
        return False
    accept = request.headers.get("Accept", "")
    return "text/html" not in accept or "application/json" in accept


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(
            error_body("not_found", f"Nothing at {request.path}. See GET / for the API guide."),
            status=404,
        )
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(
            error_body("server_error", "Something went wrong on the server; it has been logged."),
            status=500,
        )
    from django.views.defaults import server_error

    return server_error(request)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return JsonResponse(
        error_body("bad_request", "The request could not be understood."), status=400
    )


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(error_body("forbidden", "You may not do this."), status=403)
    from django.views.defaults import permission_denied

    # templates/403.html, with the refusal's own words (a shared mind's: the person's level).
    return permission_denied(request, exception or PermissionError())


def too_large_response() -> Response:
    return Response(error_body("payload_too_large", PayloadTooLarge.default_detail), status=413)
