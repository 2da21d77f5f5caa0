"""GET /memory/duplicates and GET /memory/contradictions: the mind's near-repeats and the
pairs that very likely contradict each other (memories/hygiene/). Nothing is changed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.memories import MIND_PARAM
from api.params import param_duration, param_limit
from api.scoping import mind_for_request
from memories.fields import memory_to_dict
from memories.hygiene.contradictions import DEFAULT_WITHIN, contradiction_pairs
from memories.hygiene.duplicates import duplicate_groups
from memories.rules import DURATION_FORMS
from memories.selectors import LIST_LIMIT_MAX
from minds.access import Level
from minds.models import Mind

LIMIT_DEFAULT = 100
LIMIT_PARAM = OpenApiParameter(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT_MAX},
    description=f"1 to {LIST_LIMIT_MAX}, default {LIMIT_DEFAULT}; `total` counts them all.",
)


class MemoryDuplicatesView(APIView):
    @extend_schema(
        operation_id="memory_duplicates",
        summary="Groups of live memories that nearly repeat one another",
        description="Most similar group first; `similarity` is the highest between two of a "
        "group's memories (a cosine where both have vectors, else by their words). Nothing "
        "is merged or deleted.",
        parameters=[MIND_PARAM, LIMIT_PARAM],
        responses=inline_serializer(
            "MemoryDuplicates",
            {
                "duplicates": serializers.ListField(child=serializers.DictField()),
                "total": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        limit = param_limit(request.query_params, default=LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        groups = duplicate_groups(mind=mind_for_request(request, need=Level.READ))
        duplicates = [
            {"memories": [memory_to_dict(m) for m in g.memories], "similarity": g.similarity}
            for g in groups[:limit]
        ]
        return Response({"duplicates": duplicates, "total": len(groups)})


class MemoryContradictionsView(APIView):
    @extend_schema(
        operation_id="memory_contradictions",
        summary="Pairs of live memories that very likely contradict each other",
        description="At least one of each pair written within `within`, most recent first; "
        "`a` is the more recently updated, `reason` says what differs.",
        parameters=[
            MIND_PARAM,
            OpenApiParameter(
                "within",
                # What param_duration reads, capped below its 100-year limit.
                {
                    "type": "string",
                    "pattern": r"^\s*0*([1-9][0-9]{0,8}\s*[sS]?|[1-9][0-9]{0,2}\s*[mhdwMHDW])\s*$",
                },
                description=f"{DURATION_FORMS}; default 7d.",
            ),
            LIMIT_PARAM,
        ],
        responses=inline_serializer(
            "MemoryContradictions",
            {
                "contradictions": serializers.ListField(child=serializers.DictField()),
                "total": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        within = param_duration(params, "within", default=DEFAULT_WITHIN)
        limit = param_limit(params, default=LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        mind = mind_for_request(request, need=Level.READ)
        return Response(contradictions_answer(mind, within=within, limit=limit))


def contradictions_answer(mind: Mind, *, within: timedelta, limit: int) -> dict[str, Any]:
    """The answer of GET /memory/contradictions (also what a cron job of it records)."""
    found = contradiction_pairs(mind=mind, within=within)
    pairs = [
        {
            "a": memory_to_dict(c.a),
            "b": memory_to_dict(c.b),
            "similarity": c.similarity,
            "reason": c.reason,
        }
        for c in found[:limit]
    ]
    return {"contradictions": pairs, "total": len(found)}
