"""POST /mcp: MCP's streamable HTTP transport in JSON-response mode.

One JSON body per answer (never SSE) and no sessions, so any worker serves any request;
the credential is the mind's key, or an OAuth token of an app connected to the mind
(mcp_server/oauth.py). Design notes: docs/internals.md#the-http-transport.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any, NoReturn

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from mcp_server import protocol
from mcp_server.oauth import connection_of, resource_metadata_url
from mcp_server.tools import ToolContext
from minds.access import MindAgent
from minds.models import MIND_KEY_PREFIX, Mind
from synapse_site.credentials import bearer_token
from synapse_site.logs import bind_mind
from synapse_site.throttling import CredentialRateThrottle

REALM = 'Bearer realm="synapse"'
VERSION_HEADER = "MCP-Protocol-Version"


def _json_response(data: object, *, status: int = 200) -> HttpResponse:
    """UTF-8 JSON; escaped to ASCII when it holds a lone surrogate (valid JSON, not UTF-8)."""
    try:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        body = json.dumps(data).encode("ascii")
    return HttpResponse(body, status=status, content_type="application/json")


def _http_error(
    status: int,
    code: str,
    detail: str,
    *,
    rpc_code: int = protocol.INVALID_REQUEST,
    headers: dict[str, str] | None = None,
    data: dict[str, Any] | None = None,
) -> HttpResponse:
    body = protocol.error_response(
        None, rpc_code, detail, {"error": code, "detail": detail, **(data or {})}
    )
    response = _json_response(body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _unauthorized(request: HttpRequest, detail: str, *, token_sent: bool) -> HttpResponse:
    # RFC 6750: `invalid_token` once a token was sent; header values stay ASCII. RFC 9728:
    # resource_metadata tells an OAuth client where to start (mcp_server/oauth.py).
    challenge = f'{REALM}, resource_metadata="{resource_metadata_url(request)}"'
    if token_sent:
        challenge += ', error="invalid_token", error_description="' + detail + '"'
    return _http_error(401, "not_authenticated", detail, headers={"WWW-Authenticate": challenge})


def _authenticate(request: HttpRequest) -> MindAgent | HttpResponse:
    """A Mind Key (mk_...), or an OAuth access token of an app connected to a mind."""
    token = bearer_token(request)
    if token is None:
        return _unauthorized(
            request,
            "Send the mind's key as Authorization: Bearer mk_..., or connect with OAuth.",
            token_sent=False,
        )
    if token.startswith(MIND_KEY_PREFIX):
        mind = Mind.objects.for_key(token)
        if mind is None:
            return _unauthorized(
                request,
                "This Mind Key is not valid: it may have been rotated or revoked.",
                token_sent=True,
            )
    elif token.count(".") == 2:  # a person's login token (a JWT): people use the dashboard
        return _unauthorized(
            request,
            "The MCP endpoint takes a Mind Key (mk_...) or an OAuth token, "
            "not a person's login token.",
            token_sent=True,
        )
    else:
        connection = connection_of(request)
        if connection is None:
            return _unauthorized(
                request,
                "This access token is not valid here: it may have expired or been revoked.",
                token_sent=True,
            )
        mind = connection.mind
    bind_mind(mind.pk)
    return MindAgent(mind=mind)


def _caller(request: HttpRequest, agent: MindAgent) -> SimpleNamespace:
    # The throttle reads only `.user` and `.META` of a request.
    return SimpleNamespace(user=agent, META=request.META)


def _retry_after(throttle: CredentialRateThrottle) -> int:
    wait = throttle.wait()
    return max(1, math.ceil(wait)) if wait is not None else 60


def _throttled(request: HttpRequest, agent: MindAgent) -> HttpResponse | None:
    """Count the POST itself (a single message, or a batch's first) before its body is read."""
    throttle = CredentialRateThrottle()
    if throttle.allow_request(_caller(request, agent), None):
        return None
    retry_after = _retry_after(throttle)
    return _http_error(
        429,
        "rate_limited",
        f"Too many requests for this Mind Key; retry in {retry_after} s.",
        headers={"Retry-After": str(retry_after)},
        data={"retry_after": retry_after},
    )


def _batch_allowance(
    request: HttpRequest, agent: MindAgent, payload: object
) -> protocol.Allowance | None:
    """Count a batch's other messages (its first was counted on arrival): None when all of
    them fit in the rate limit, otherwise how many of the batch's messages may run."""
    rest = protocol.batch_cost(payload) - 1
    if rest == 0:
        return None
    throttle = CredentialRateThrottle()
    fit = throttle.admit(_caller(request, agent), None, rest)
    if fit == rest:
        return None
    return protocol.Allowance(messages=1 + fit, retry_after=_retry_after(throttle))


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    types = {_media_type(part) for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")  # Python's json reads NaN and Infinity; JSON has none


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _http_error(
            405,
            "method_not_allowed",
            "This MCP endpoint takes POST only (no server-sent event stream, no sessions).",
            headers={"Allow": "POST"},
        )

    agent = _authenticate(request)
    if isinstance(agent, HttpResponse):
        return agent
    refused = _throttled(request, agent)
    if refused is not None:
        return refused

    if not _accepts_json(request.headers.get("Accept", "")):
        return _http_error(406, "not_acceptable", "Accept application/json: answers are JSON.")
    if _media_type(request.content_type or "") != "application/json":
        return _http_error(
            415, "unsupported_media_type", "Send the JSON-RPC message as application/json."
        )
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version.strip() not in protocol.SUPPORTED_VERSIONS:
        supported = list(protocol.SUPPORTED_VERSIONS)
        return _http_error(
            400,
            "unsupported_protocol_version",
            f"{VERSION_HEADER} {version[:40]!r} is not spoken here; "
            f"supported: {', '.join(supported)}.",
            rpc_code=protocol.UNSUPPORTED_PROTOCOL_VERSION,
            data={"supported": supported, "requested": version[:40]},
        )

    try:
        payload = json.loads(request.body, parse_constant=_refuse_constant)
    except RequestDataTooBig:
        return _http_error(413, "payload_too_large", "The request body is too large.")
    except (ValueError, RecursionError) as exc:
        return _http_error(
            400,
            "parse_error",
            f"Parse error: the body is not valid JSON ({str(exc)[:200]}).",
            rpc_code=protocol.PARSE_ERROR,
        )

    allowance = _batch_allowance(request, agent, payload)
    answer = protocol.handle_payload(ToolContext(agent=agent), payload, allowance=allowance)
    if answer is None:
        return HttpResponse(status=202)
    return _json_response(answer)
