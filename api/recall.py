"""GET /memory/recall: the mind's memories as text for an LLM's context, or as JSON."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.negotiation import Produces
from api.params import (
    Params,
    param_as_of,
    param_bool,
    param_category,
    param_choice,
    param_superseded,
    param_tag,
)
from api.scoping import mind_for_request
from api.search import AS_OF_PARAMETER, QUERY_SCHEMA
from api.streaming import streamed_json
from core.errors import Invalid
from memories.as_of import recall_as_of
from memories.fields import CATEGORIES
from memories.recall import (
    ABOUT_DEPTH,
    MAX_BUDGET,
    RecallSelection,
    recall_json_stream,
    recall_render_json,
    recall_render_text,
    recall_selection,
    recall_text_stream,
)
from minds.access import Level

FORMATS = ["text", "json"]


def param_budget(params: Params) -> int | None:
    """`budget`: a whole number of tokens (about 4 characters each) from 1 to MAX_BUDGET, or
    absent."""
    raw = params.get("budget")
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise Invalid.one("budget", f"Must be a positive whole number of tokens, got {raw[:50]!r}.")
    if value > MAX_BUDGET:
        raise Invalid.one(
            "budget", f"At most {MAX_BUDGET:,} tokens, got {value:,}; omit it for everything."
        )
    return value


class RecallView(Produces):
    produces = ("text/plain; charset=utf-8", "application/json")

    @extend_schema(
        summary="Recall the mind's memories for an LLM's context",
        description=(
            "Plain text, most important first (critical, high, normal, low; then most "
            "recently updated). `budget` caps the answer at about N tokens (4 characters "
            "each, the whole text counted): critical memories always stay, the rest is cut "
            "from the lowest priority up and summarised in closing lines. Without a budget "
            "the whole selection is sent, streamed as it is read. `about` recalls for a "
            "topic: the critical memories, then the ones most relevant to it (the search's "
            "ranking, priority breaking ties) instead of priority order; the others are named "
            "in a closing line as on other topics."
        ),
        parameters=[
            OpenApiParameter(
                "budget",
                {"type": "integer", "minimum": 1, "maximum": MAX_BUDGET},
                description="Token budget (4 characters each).",
            ),
            OpenApiParameter(
                "about",
                QUERY_SCHEMA,
                description="A topic, in the words a search takes: after the critical "
                f"memories, the (at most {ABOUT_DEPTH}) most relevant to it, best first. "
                "The JSON answer adds `about`, `mode`, `warnings` and `other_topics`.",
            ),
            OpenApiParameter("category", str, enum=list(CATEGORIES)),
            OpenApiParameter("tag", str, description="Only memories with this tag."),
            OpenApiParameter("format", str, enum=FORMATS, description="text (default) or json."),
            OpenApiParameter("include_expired", bool),
            OpenApiParameter("include_superseded", bool),
            AS_OF_PARAMETER,
            OpenApiParameter("mind", str, description="The mind (JWT callers with several)."),
        ],
        responses={
            (200, "text/plain"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,  # with ?format=json
        },
    )
    def get(self, request: Request) -> HttpResponse | StreamingHttpResponse:
        params = request.query_params
        output = param_choice(params, "format", FORMATS) or "text"
        budget = param_budget(params)
        category = param_category(params)
        tag = param_tag(params)
        include_expired = bool(param_bool(params, "include_expired"))
        about = params.get("about") or None  # `?about=`: not given, as every empty parameter
        at = param_as_of(params)
        mind = mind_for_request(request, need=Level.READ)
        selection: RecallSelection
        if at is not None:
            if about is not None:
                raise Invalid.one(
                    "about", "A recall as_of a moment takes no topic: leave about out."
                )
            selection = recall_as_of(
                mind=mind,
                at=at,
                category=category,
                tag=tag,
                include_expired=include_expired,
                include_superseded=param_superseded(params),
            )
        else:
            selection = recall_selection(
                mind=mind,
                category=category,
                tag=tag,
                include_expired=include_expired,
                about=about,
                include_superseded=param_superseded(params),
            )
        if budget is None and about is None:  # the whole selection: sent as it is read
            if output == "json":
                answer, memories = recall_json_stream(selection=selection)
                return streamed_json({**answer, "memories": memories})
            pieces = recall_text_stream(selection=selection)
            return StreamingHttpResponse(pieces, content_type="text/plain; charset=utf-8")
        if output == "json":
            return Response(recall_render_json(selection=selection, budget=budget))
        text = recall_render_text(selection=selection, budget=budget)
        return HttpResponse(text, content_type="text/plain; charset=utf-8")
