"""JSON-RPC 2.0 framing and the MCP methods Synapse serves, independent of HTTP.

`handle_payload()` takes one decoded JSON body (a message or a batch) and returns what to
send back, or None when nothing is owed. The decisions (stateless, versions, batches,
errors): docs/internals.md#the-protocol-decisions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from mcp_server import tools

logger = logging.getLogger(__name__)

# Newest first: `initialize` offers the first when the client's is not here.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
SERVER_INFO = {"name": "synapse", "title": "Synapse memory", "version": "0.1.0"}
# A batch's size is capped, and so is what it answers.
MAX_BATCH = 50
MAX_BATCH_ANSWER = 8 * 1024 * 1024
# Each message of a batch counts against the rate limit, but one POST is served by one worker
# from start to end: a batch runs at most this many of the costly calls (a search embeds its
# query and ranks the mind; a recall reads up to its budget).
MAX_BATCH_HEAVY = 5
HEAVY_TOOLS = ("search", "recall")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Server error codes (JSON-RPC leaves -32000 to -32099 to servers): a batch's call not run.
ANSWER_LIMIT = -32010
RATE_LIMITED = -32011
HEAVY_LIMIT = -32012


# A request's id: a string or an integer; null when it could not be read.
RequestId = str | int | None
# A method's result: a JSON object, its members as the method defines them.
Result = Mapping[str, Any]


class ErrorObject(TypedDict):
    code: int
    message: str
    data: NotRequired[Any]  # any JSON that says more


class ErrorResponse(TypedDict):
    jsonrpc: str
    id: RequestId
    error: ErrorObject


class ResultResponse(TypedDict):
    jsonrpc: str
    id: RequestId
    result: Result


Response = ErrorResponse | ResultResponse


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def error_response(
    request_id: RequestId, code: int, message: str, data: Any = None
) -> ErrorResponse:
    error: ErrorObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def instructions(ctx: tools.ToolContext) -> str:
    name = " ".join(ctx.mind.name.splitlines())
    return (
        f'Synapse is your long-term memory for this user (mind "{name}"). Call `recall` at '
        "the start of every session and read it before answering. When you learn something "
        "durable about the user or the work, store it with `remember` (the same category and "
        "key updates that memory instead of duplicating it). `search` before asking the user "
        "something they may have told you already. `forget` what is wrong or obsolete. What "
        "you store stays unverified until the user confirms it; you cannot verify it. "
        "`check_messages` at the start of a session and after each task: the user may have "
        "written to you; answer with `reply`."
    )


# --- Methods --------------------------------------------------------------------------------


def _initialize(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string).")
    version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
    return {
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": False},
        },
        "serverInfo": SERVER_INFO,
        "instructions": instructions(ctx),
    }


def _ping(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    return {}


def _tools_list(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    return {"tools": [tool.describe() for tool in tools.TOOLS.values()]}


def _tools_call(ctx: tools.ToolContext, params: dict[str, Any]) -> tools.ToolResult:
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string).")
    if name not in tools.TOOLS:
        raise RpcError(
            INVALID_PARAMS,
            f"Unknown tool: {name[:100]}. Tools: {', '.join(tools.TOOLS)}.",
        )
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "tools/call params.arguments must be an object.")
    if tools.TOOLS[name].schema_checked and _has_nul(arguments):
        # PostgreSQL cannot hold NUL in text; no key, tag or word needs one. (A write body
        # is judged by the core's validator, which names the field that holds one.)
        return {
            "content": [
                {
                    "type": "text",
                    "text": f"Invalid arguments for {name}: NUL (\\0) characters are not allowed.",
                }
            ],
            "isError": True,
        }
    return tools.tool_call(ctx, name, arguments)


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _resources_list(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    return {"resources": tools.resource_list(ctx)}


def _resource_templates_list(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    return {"resourceTemplates": tools.resource_templates()}


def _resources_read(ctx: tools.ToolContext, params: dict[str, Any]) -> Result:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "resources/read needs params.uri (a string).")
    try:
        return {"contents": tools.resource_read(ctx, uri)}
    except tools.ResourceNotFound:
        raise RpcError(RESOURCE_NOT_FOUND, "Resource not found.", {"uri": uri[:500]}) from None
    except tools.ToolError as exc:
        raise RpcError(INVALID_PARAMS, str(exc), {"uri": uri[:500]}) from None


METHODS: dict[str, Callable[[tools.ToolContext, dict[str, Any]], Result]] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "resources/list": _resources_list,
    "resources/templates/list": _resource_templates_list,
    "resources/read": _resources_read,
}


# --- Framing --------------------------------------------------------------------------------


def _valid_id(value: Any) -> bool:
    # MCP: a string or an integer, never null (JSON-RPC's fractional ids are discouraged too).
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def handle_message(
    ctx: tools.ToolContext, message: Any, *, in_batch: bool = False
) -> Response | None:
    """The response to one JSON-RPC message, or None for notifications and responses."""
    if not isinstance(message, dict):
        return error_response(None, INVALID_REQUEST, "A JSON-RPC message must be an object.")
    has_id = "id" in message
    request_id = message.get("id") if has_id and _valid_id(message.get("id")) else None
    if message.get("jsonrpc") != "2.0":
        return error_response(request_id, INVALID_REQUEST, 'Set "jsonrpc": "2.0".')
    if "method" not in message:
        if has_id and ("result" in message or "error" in message):
            return None  # a response to a server request; this server sends none, so ignore
        return error_response(request_id, INVALID_REQUEST, "A request needs a method.")
    method = message["method"]
    if not isinstance(method, str):
        return error_response(request_id, INVALID_REQUEST, "method must be a string.")
    if has_id and request_id is None:
        return error_response(None, INVALID_REQUEST, "id must be a string or an integer.")
    params = message.get("params", {})
    if params is None:
        params = {}

    if not has_id:
        # A notification: nothing is answered, not even an error. `initialized`,
        # `cancelled` and `progress` need no work from a stateless server.
        return None
    if not isinstance(params, dict):
        if isinstance(params, list):
            return error_response(request_id, INVALID_PARAMS, "params must be an object.")
        return error_response(request_id, INVALID_REQUEST, "params must be an object.")
    handler = METHODS.get(method)
    if handler is None:
        return error_response(request_id, METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
    if in_batch and method == "initialize":
        return error_response(request_id, INVALID_REQUEST, "initialize may not be batched.")
    try:
        result = handler(ctx, params)
    except RpcError as exc:
        return error_response(request_id, exc.code, exc.message, exc.data)
    except Exception:
        logger.exception("MCP method %s failed", method)
        return error_response(request_id, INTERNAL_ERROR, "Internal error; it has been logged.")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


@dataclass(frozen=True)
class Allowance:
    """What the rate limit lets a batch run: its first `messages` messages; the requests after
    them may be sent again in `retry_after` seconds."""

    messages: int
    retry_after: int


def batch_cost(payload: Any) -> int:
    """What a decoded body counts against the rate limit: each message of a batch that will
    be read (1 to MAX_BATCH), or 1 for a single message or a batch refused whole."""
    if isinstance(payload, list) and 1 <= len(payload) <= MAX_BATCH:
        return len(payload)
    return 1


def handle_payload(
    ctx: tools.ToolContext, payload: Any, *, allowance: Allowance | None = None
) -> Response | list[Response] | None:
    """What to answer to one decoded POST body: a response, a batch of them, or None.

    A batch runs its requests in order until one of its limits stops them: `allowance`
    (the rate limit's), MAX_BATCH_HEAVY costly calls, MAX_BATCH_ANSWER characters of
    answers. Each request not run is answered with an error that names the limit.
    """
    if isinstance(payload, list):
        if not payload:
            return error_response(None, INVALID_REQUEST, "An empty batch is not a request.")
        if len(payload) > MAX_BATCH:
            return error_response(
                None, INVALID_REQUEST, f"A batch holds at most {MAX_BATCH} messages."
            )
        answers: list[Response] = []
        size = 0  # characters of JSON answered so far
        heavy = 0  # costly calls met so far
        for index, item in enumerate(payload):
            if _is_request(item):
                if size >= MAX_BATCH_ANSWER:
                    answers.append(_not_run(item["id"]))
                    continue
                if allowance is not None and index >= allowance.messages:
                    answers.append(_rate_limited(item["id"], allowance.retry_after))
                    continue
                if _is_heavy(item):
                    heavy += 1
                    if heavy > MAX_BATCH_HEAVY:
                        answers.append(_too_heavy(item["id"]))
                        continue
            answer = handle_message(ctx, item, in_batch=True)
            if answer is not None:
                answers.append(answer)
                size += len(json.dumps(answer, ensure_ascii=False))
        return answers or None
    return handle_message(ctx, payload)


def _is_request(item: Any) -> bool:
    """A well-formed request (it has a method and an id of the right kind): work to run."""
    return isinstance(item, dict) and "method" in item and _valid_id(item.get("id"))


def _is_heavy(request: dict[str, Any]) -> bool:
    """A search or a recall, by tool or by resource: what MAX_BATCH_HEAVY counts."""
    params = request.get("params")
    if not isinstance(params, dict):
        return False
    if request["method"] == "tools/call":
        return params.get("name") in HEAVY_TOOLS
    if request["method"] == "resources/read":
        uri = params.get("uri")
        return isinstance(uri, str) and uri.startswith(tools.RECALL_URI)
    return False


def _not_run(request_id: RequestId) -> ErrorResponse:
    message = (
        f"Not run: this batch's answers already hold {MAX_BATCH_ANSWER:,} characters or more, "
        "the most one batch answers. Send the remaining calls in another request."
    )
    data = {"error": "batch_answer_limit", "limit": MAX_BATCH_ANSWER}
    return error_response(request_id, ANSWER_LIMIT, message, data)


def _rate_limited(request_id: RequestId, retry_after: int) -> ErrorResponse:
    message = (
        "Not run: too many requests for this Mind Key (each message of a batch counts as "
        f"one); retry in {retry_after} s."
    )
    data = {"error": "rate_limited", "retry_after": retry_after}
    return error_response(request_id, RATE_LIMITED, message, data)


def _too_heavy(request_id: RequestId) -> ErrorResponse:
    message = (
        f"Not run: a batch runs at most {MAX_BATCH_HEAVY} searches and recalls. "
        "Send the remaining calls in another request."
    )
    data = {"error": "batch_heavy_limit", "limit": MAX_BATCH_HEAVY}
    return error_response(request_id, HEAVY_LIMIT, message, data)
