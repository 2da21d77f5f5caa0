"""GET /memory/search (by keyword, meaning or both) and GET /memory/semantic-search (the
client's semantic_search) over the caller's mind."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.params import (
    param_as_of,
    param_category,
    param_expired,
    param_limit,
    param_number,
    param_offset,
    param_search_mode,
    param_superseded,
    param_tag,
)
from api.scoping import mind_for_request
from core.errors import Invalid
from memories.as_of import memory_search_as_of
from memories.fields import CATEGORIES, iso, search_to_dict, similar_to_dict
from memories.filters import MAX_OFFSET, MemoryFilters
from memories.search import (
    DEFAULT_LIMIT,
    MATCHES,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MODES,
    memory_search,
    memory_semantic_search,
)
from minds.access import Level

Q_HELP = (
    "Words to look for; any may match, best matches first. "
    '"a phrase" must appear as written, `deploy*` matches a prefix, `-word` excludes. '
    "Case and accents are ignored; English words match their other forms."
)
# What the client's semantic_search sends when the caller gives nothing.
SEMANTIC_DEFAULT_LIMIT = 10
SEMANTIC_DEFAULT_THRESHOLD = 0.3
MODE_HELP = (
    "`keyword`: full-text matches only. `semantic`: memories close in meaning, even with no "
    "word in common. `hybrid`: both, fused into one ranking. Default: `hybrid` while the "
    "server's embeddings are on, `keyword` when they are off (then `hybrid` searches by "
    "keyword and `semantic` answers 503 `unavailable`). Quoted phrases, `-exclusions` and "
    "the filters hold in every mode. When the embeddings API fails or is slow, `hybrid` "
    "answers by keyword at once (the answer's `mode` is `keyword` and `warnings` says so) and "
    "`semantic` answers 503 `unavailable`."
)
UNAVAILABLE_RESPONSE = OpenApiResponse(
    inline_serializer(
        "Unavailable",
        {
            "error": serializers.CharField(),
            "detail": serializers.CharField(),
            "retry_after": serializers.IntegerField(
                required=False, help_text="Seconds to wait, also in `Retry-After`, when known."
            ),
        },
    ),
    description="`unavailable`: search by meaning is off on this server (SYNAPSE_EMBEDDINGS=off), "
    "or cannot run right now (its embeddings API failing or slow).",
)
# What a search takes (here and as recall's `about`): a word to look for, letters or digits
# not behind a `-` (which excludes).
QUERY_SCHEMA = {"type": "string", "maxLength": MAX_QUERY_CHARS, "pattern": r"(^|\s)[^\s-]*[^\W_]"}
Q_PARAMETER = OpenApiParameter("q", QUERY_SCHEMA, required=True, description=Q_HELP)
TAG_PARAMETER = OpenApiParameter(
    "tag", OpenApiTypes.STR, description="Only memories with this tag."
)
CATEGORY_PARAMETER = OpenApiParameter(
    "category", OpenApiTypes.STR, enum=list(CATEGORIES), description="Only this category."
)
AS_OF_PARAMETER = OpenApiParameter(
    "as_of",
    {"type": "string", "format": "date-time"},
    description="A moment in the past (ISO 8601; no offset: UTC): the answer the mind would "
    "have given then, rebuilt from its audit trail (values then, expiry judged then). 409 "
    "when the history it needs was folded; the message names the earliest moment answered.",
)
EXPIRED_PARAMETER = OpenApiParameter(
    "include_expired", OpenApiTypes.BOOL, description="Also search expired memories."
)


class MemorySearchView(APIView):
    @extend_schema(
        operation_id="memory_search",
        parameters=[
            Q_PARAMETER,
            OpenApiParameter("mode", OpenApiTypes.STR, enum=list(MODES), description=MODE_HELP),
            TAG_PARAMETER,
            CATEGORY_PARAMETER,
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                description=f"Default {DEFAULT_LIMIT}, max {MAX_LIMIT}.",
            ),
            OpenApiParameter(
                "offset",
                {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                description="Results to skip (default 0).",
            ),
            EXPIRED_PARAMETER,
            AS_OF_PARAMETER,
        ],
        responses={
            200: inline_serializer(
                "MemorySearch",
                {
                    "query": serializers.CharField(),
                    "results": serializers.ListField(
                        child=serializers.DictField(),
                        help_text="Memories, best first, each with `score` (higher is better; "
                        "in `semantic` mode the cosine similarity), `snippet` (of the content, "
                        "matched words marked «like this»; its start when only the key or a "
                        "tag matched, or found by meaning alone) and `match`: one of "
                        f"{', '.join(MATCHES)}.",
                    ),
                    "total": serializers.IntegerField(
                        help_text="All results, not only this page. `keyword`: every match. "
                        "`semantic`: every memory close enough in meaning. `hybrid`: every "
                        "keyword match and the memories found by meaning alone."
                    ),
                    "mode": serializers.ChoiceField(
                        choices=list(MODES),
                        help_text="How the results were found: the mode asked for, or "
                        "`keyword` when search by meaning took no part (embeddings off, or "
                        "unavailable right now: then `warnings` says so).",
                    ),
                    "warnings": serializers.ListField(
                        child=serializers.CharField(),
                        help_text="Sentences about this answer, e.g. that search by meaning "
                        "was unavailable and the results are by keyword alone; usually empty.",
                    ),
                },
            ),
            503: UNAVAILABLE_RESPONSE,
        },
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        mind = mind_for_request(request, need=Level.READ)
        q = params.get("q", "")
        mode = param_search_mode(params)
        limit = param_limit(params, default=DEFAULT_LIMIT, maximum=MAX_LIMIT)
        offset = param_offset(params)
        filters = MemoryFilters(
            tag=param_tag(params),
            category=param_category(params),
            expired=param_expired(params),
            superseded=param_superseded(params),
        )
        at = param_as_of(params)
        if at is not None:
            if mode not in (None, "keyword"):
                raise Invalid.one(
                    "mode",
                    f"as_of searches by keyword only (mode=keyword, or no mode), not {mode}: "
                    "the meaning of memories as they were is not kept.",
                )
            page = memory_search_as_of(
                mind=mind, at=at, q=q, filters=filters, limit=limit, offset=offset
            )
            return Response({**search_to_dict(page), "as_of": iso(at)})
        page = memory_search(mind=mind, q=q, filters=filters, limit=limit, offset=offset, mode=mode)
        return Response(search_to_dict(page))


class MemorySemanticSearchView(APIView):
    @extend_schema(
        operation_id="memory_semantic_search",
        parameters=[
            Q_PARAMETER,
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                description=f"Default {SEMANTIC_DEFAULT_LIMIT}, max {MAX_LIMIT}.",
            ),
            OpenApiParameter(
                "threshold",
                {"type": "number", "minimum": 0, "maximum": 1},
                description=f"Least similarity (cosine) to be a result; default "
                f"{SEMANTIC_DEFAULT_THRESHOLD}.",
            ),
            TAG_PARAMETER,
            CATEGORY_PARAMETER,
            EXPIRED_PARAMETER,
        ],
        responses={
            200: inline_serializer(
                "MemorySemanticSearch",
                {
                    "query": serializers.CharField(),
                    "results": serializers.ListField(
                        child=serializers.DictField(),
                        help_text="Memories, most similar first, each with `similarity`: the "
                        "cosine of its meaning and the question's, 0 to 1.",
                    ),
                    "total": serializers.IntegerField(
                        help_text="Every memory at least `threshold` similar, not only these."
                    ),
                },
            ),
            503: UNAVAILABLE_RESPONSE,
        },
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        mind = mind_for_request(request, need=Level.READ)
        q = params.get("q", "")
        limit = param_limit(params, default=SEMANTIC_DEFAULT_LIMIT, maximum=MAX_LIMIT)
        threshold = param_number(
            params, "threshold", default=SEMANTIC_DEFAULT_THRESHOLD, minimum=0.0, maximum=1.0
        )
        filters = MemoryFilters(
            tag=param_tag(params),
            category=param_category(params),
            expired=param_expired(params),
            superseded=param_superseded(params),
        )
        page = memory_semantic_search(
            mind=mind, q=q, threshold=threshold, limit=limit, filters=filters
        )
        return Response(similar_to_dict(page.query, page.similar, page.total))
