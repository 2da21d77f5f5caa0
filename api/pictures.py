"""GET /memory/graph and GET /memory/timeline: the client's `visualization` pictures of the
caller's mind (memories/pictures.py draws them). Nothing is changed."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.memories import MIND_PARAM
from api.params import (
    TIMESTAMP_SCHEMA,
    Params,
    param_bool,
    param_category,
    param_choice,
    param_int,
    param_number,
    param_tag,
    param_timestamp,
)
from api.scoping import mind_for_request
from memories.fields import CATEGORIES
from memories.pictures import (
    EDGE_KINDS,
    EDGES_MAX,
    MEANING_COSINE,
    NODES_DEFAULT,
    NODES_RANGE,
    PERIOD_DEFAULT,
    PERIODS,
    PERIODS_MAX,
    SHARED_TAGS_RANGE,
    GraphQuery,
    memory_graph,
    memory_timeline,
)
from memories.rules import TIMESTAMP_FORMS
from minds.access import Level


def _int_param(name: str, bounds: tuple[int, int], default: int, text: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        {"type": "integer", "minimum": bounds[0], "maximum": bounds[1]},
        description=f"{bounds[0]} to {bounds[1]}, default {default}. {text}",
    )


class MemoryGraphView(APIView):
    @extend_schema(
        operation_id="memory_graph",
        summary="The mind's memories as a graph: nodes, and edges by shared tags or meaning",
        description="Nodes: live, current memories (not expired, not superseded). With more "
        "than `max_nodes`, the highest priority first, then the most recently updated. An "
        "edge by tags links two nodes sharing at least `min_shared_tags` tags (`weight`: how "
        "many, listed in `shared_tags`); by meaning, two nodes whose vectors' cosine is at "
        f"least {MEANING_COSINE} (`weight`: the cosine). Heaviest edges first, at most "
        f"{EDGES_MAX:,} (`stats.edges_left_out` counts the rest).",
        parameters=[
            MIND_PARAM,
            _int_param("max_nodes", NODES_RANGE, NODES_DEFAULT, "At most this many nodes."),
            OpenApiParameter(
                "min_confidence",
                {"type": "number", "minimum": 0, "maximum": 1},
                description="Only memories with at least this confidence; default 0.",
            ),
            OpenApiParameter("include_edges", bool, description="Default true."),
            _int_param(
                "min_shared_tags", SHARED_TAGS_RANGE, 1, "Tags two nodes share for an edge."
            ),
            OpenApiParameter("category", str, enum=list(CATEGORIES)),
            OpenApiParameter("tag", str, description="Only memories with this tag."),
            OpenApiParameter(
                "verified",
                bool,
                description="Only verified (true) or only unverified (false) memories; "
                "default both.",
            ),
            OpenApiParameter(
                "edges",
                str,
                enum=list(EDGE_KINDS),
                description="Edges by shared `tags` (default), by `meaning` (needs search by "
                "meaning on: a 400 when off) or `both`.",
            ),
        ],
        responses=inline_serializer(
            "MemoryGraph",
            {
                "nodes": serializers.ListField(child=serializers.DictField()),
                "edges": serializers.ListField(child=serializers.DictField()),
                "stats": serializers.DictField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        query = graph_query(request.query_params)
        mind = mind_for_request(request, need=Level.READ)
        return Response(memory_graph(mind=mind, query=query))


def graph_query(params: Params) -> GraphQuery:
    """The graph's query parameters, each a 400 naming it when bad."""
    return GraphQuery(
        max_nodes=param_int(
            params,
            "max_nodes",
            default=NODES_DEFAULT,
            minimum=NODES_RANGE[0],
            maximum=NODES_RANGE[1],
        ),
        category=param_category(params),
        tag=param_tag(params),
        verified=param_bool(params, "verified", default=None),
        min_confidence=param_number(params, "min_confidence", default=0.0, minimum=0, maximum=1),
        include_edges=bool(param_bool(params, "include_edges", default=True)),
        min_shared_tags=param_int(
            params,
            "min_shared_tags",
            default=1,
            minimum=SHARED_TAGS_RANGE[0],
            maximum=SHARED_TAGS_RANGE[1],
        ),
        edges=param_choice(params, "edges", EDGE_KINDS) or "tags",
    )


class MemoryTimelineView(APIView):
    @extend_schema(
        operation_id="memory_timeline",
        summary="The mind's writes per hour, day, week, month or year",
        description="A write is a create or an update in the audit trail (whoever made it). "
        "Periods in UTC (weeks start on Monday), oldest first, those without a write left "
        f"out; at most the last {PERIODS_MAX} periods up to `until`.",
        parameters=[
            MIND_PARAM,
            OpenApiParameter(
                "period", str, enum=list(PERIODS), description=f"Default {PERIOD_DEFAULT}."
            ),
            OpenApiParameter(
                "since", TIMESTAMP_SCHEMA, description=f"Not before: {TIMESTAMP_FORMS}."
            ),
            OpenApiParameter(
                "until",
                TIMESTAMP_SCHEMA,
                description=f"Not after (default now): {TIMESTAMP_FORMS}.",
            ),
        ],
        responses=inline_serializer(
            "MemoryTimeline",
            {
                "timeline": serializers.ListField(child=serializers.DictField()),
                "total_periods": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        period = param_choice(params, "period", PERIODS) or PERIOD_DEFAULT
        since = param_timestamp(params, "since", hint=TIMESTAMP_FORMS)
        until = param_timestamp(params, "until", hint=TIMESTAMP_FORMS)
        mind = mind_for_request(request, need=Level.READ)
        return Response(memory_timeline(mind=mind, period=period, since=since, until=until))
