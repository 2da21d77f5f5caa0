"""GET /memory/search: ranked full-text search over the caller's mind."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.params import param_category, param_expired, param_limit, param_tag
from memories.fields import CATEGORIES, search_to_dict
from memories.filters import MemoryFilters
from memories.search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS
from memories.selectors import memory_search
from minds.scoping import mind_for_request

Q_HELP = (
    "Words to look for; any may match, best matches first. "
    '"a phrase" must appear as written, `deploy*` matches a prefix, `-word` excludes. '
    "Case and accents are ignored; English words match their other forms."
)


class MemorySearchView(APIView):
    @extend_schema(
        operation_id="memory_search",
        parameters=[
            OpenApiParameter(
                "q",
                # A word to look for: letters or digits not behind a `-` (which excludes).
                {"type": "string", "maxLength": MAX_QUERY_CHARS, "pattern": r"(^|\s)[^\s-]*[^\W_]"},
                required=True,
                description=Q_HELP,
            ),
            OpenApiParameter("tag", OpenApiTypes.STR, description="Only memories with this tag."),
            OpenApiParameter(
                "category",
                OpenApiTypes.STR,
                enum=list(CATEGORIES),
                description="Only this category.",
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                description=f"Default {DEFAULT_LIMIT}, max {MAX_LIMIT}.",
            ),
            OpenApiParameter(
                "include_expired", OpenApiTypes.BOOL, description="Also search expired memories."
            ),
        ],
        responses=inline_serializer(
            "MemorySearch",
            {
                "query": serializers.CharField(),
                "results": serializers.ListField(
                    child=serializers.DictField(),
                    help_text="Memories, each with `score` (higher is better) and `snippet` "
                    "(matched words marked «like this»).",
                ),
                "total": serializers.IntegerField(help_text="All matches, not only this page."),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        mind = mind_for_request(request)
        q = params.get("q", "")
        limit = param_limit(params, default=DEFAULT_LIMIT, maximum=MAX_LIMIT)
        filters = MemoryFilters(
            tag=param_tag(params), category=param_category(params), expired=param_expired(params)
        )
        page = memory_search(mind=mind, q=q, filters=filters, limit=limit)
        return Response(search_to_dict(page))
