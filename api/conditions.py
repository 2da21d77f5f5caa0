"""The API's side of writing what you saw: a memory's `ETag`, and the `If-Match` a write,
verify or delete carries (RFC 9110 section 13.1.1). The comparison itself is the core's, under
the write's lock (services, `expected_version`).

- `If-Match: *` asks only that the memory exists, which every write to it needs anyway.
- A list of entity tags matches when any of them is the current version.
- A weak tag (`W/"…"`) never matches: If-Match compares strongly, and our ETags are strong.
- A header that is not `*` or a list of quoted entity tags is a 400 naming If-Match, rather
  than a condition silently dropped; so is If-Match on a write that does not take one
  (`POST /memory`, an upsert by key: the condition belongs on `PUT`/`PATCH /memory/{id}`).
"""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.request import Request

from api.schema import ErrorSerializer
from core.errors import Invalid
from memories.models import Memory
from memories.versions import Expected, memory_version

IF_MATCH = "If-Match"
_OPAQUE = r'"[\x21\x23-\x7e\x80-\xff]*"'
_TAG = re.compile(rf"(W/)?({_OPAQUE})")
# `#entity-tag` of RFC 9110: comma-separated, empty elements allowed.
_TAG_LIST = re.compile(rf"[ \t,]*(?:W/)?{_OPAQUE}(?:[ \t]*,[ \t,]*(?:W/)?{_OPAQUE})*[ \t,]*")
_HINT = 'Must be * or one or more ETags as GET /memory/{id} gives them, e.g. "3f9c…".'

IF_MATCH_PARAM = OpenApiParameter(
    IF_MATCH,
    {
        "type": "string",
        # What the header parser takes (printable ASCII inside the quotes).
        "pattern": r'^[ \t]*(\*|(W/)?"[!#-~]*"([ \t]*,[ \t]*(W/)?"[!#-~]*")*)[ \t]*$',
    },
    OpenApiParameter.HEADER,
    description="The ETag of the memory as you read it: the write happens only if the memory "
    "is still that version, else 412 and nothing is written. `*`: any version.",
)
ETAG_HEADER = OpenApiParameter(
    "ETag",
    str,
    OpenApiParameter.HEADER,
    required=True,
    response=[200],
    description="The memory's current version; send it back as If-Match.",
)
PRECONDITION_FAILED = OpenApiResponse(
    ErrorSerializer,
    description="The memory changed since the ETag in If-Match (precondition_failed); "
    "nothing was written. GET it again.",
)


def etag(memory: Memory) -> str:
    """The memory's ETag header value: its version, quoted (a strong validator)."""
    return f'"{memory_version(memory)}"'


def expected_version(request: Request) -> Expected:
    """The versions an If-Match header accepts (None: no header, or `*`); weak tags, which
    never match, are left out. A malformed header is Invalid."""
    raw = request.headers.get(IF_MATCH)
    if raw is None:
        return None
    if raw.strip(" \t") == "*":
        return None
    if not _TAG_LIST.fullmatch(raw):
        raise Invalid.one(IF_MATCH, f"{_HINT} Got {raw[:80]!r}.")
    return tuple(opaque[1:-1] for weak, opaque in _TAG.findall(raw) if not weak)


def refuse_if_match(request: Request, *, instead: str) -> None:
    """Invalid when the request carries If-Match: this write does not judge one, and a
    condition the client counts on must not be dropped in silence. `instead`: where to send it.
    """
    if request.headers.get(IF_MATCH) is not None:
        raise Invalid.one(IF_MATCH, f"Not taken by this write. {instead}")
