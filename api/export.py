"""GET /mind/export (JSON or CSV, streamed) and POST /mind/import (a JSON export)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.conditions import refuse_if_match
from api.idempotency import idempotent
from api.memories import (
    IDEMPOTENCY_PARAM,
    MIND_PARAM,
    SYNC_ANSWER,
    actor_for_request,
    bulk_items,
    bulk_request,
    stores_by_key,
    sync_answer,
)
from api.negotiation import Produces
from api.params import param_choice
from api.scoping import mind_for_request
from memories import services
from memories.export import FORMATS, export_csv, export_filename, export_json
from minds.access import Level

CONTENT_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}


class MindExportView(Produces):
    produces = ("application/json", "text/csv; charset=utf-8")

    @extend_schema(
        summary="Every memory of the mind, expired ones included and marked",
        description=(
            "JSON (default): {synapse_export, mind, exported_at, memories: [memory + expired], "
            "total}; POST /mind/import reads it back. CSV: a header row, one row per memory, "
            "tags joined by ', '."
        ),
        parameters=[OpenApiParameter("format", str, enum=FORMATS), MIND_PARAM],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        output = param_choice(request.query_params, "format", FORMATS) or "json"
        mind = mind_for_request(request, need=Level.READ)
        now = timezone.now()
        render = export_json if output == "json" else export_csv
        response = StreamingHttpResponse(
            render(mind=mind, now=now), content_type=CONTENT_TYPES[output]
        )
        filename = export_filename(mind, output=output, now=now)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class MindImportView(APIView):
    @extend_schema(
        summary="Store the memories of a JSON export into this mind (upsert by key)",
        description=(
            "A person's import keeps each memory's source and verification; an agent's is "
            "stored like any agent write (agent or tool, unverified). Answers like "
            "POST /memory/sync."
        ),
        parameters=[MIND_PARAM, IDEMPOTENCY_PARAM],
        request=bulk_request("MindImport"),
        responses=SYNC_ANSWER,
    )
    def post(self, request: Request) -> HttpResponse | Response:
        mind = mind_for_request(request, need=Level.WRITE)
        actor = actor_for_request(request)
        refuse_if_match(request, instead=stores_by_key("POST /mind/import"))

        def restore() -> tuple[int, dict[str, Any]]:
            records = bulk_items(
                request.data, hint="the JSON of GET /mind/export, with its memories."
            )
            outcomes = services.mind_import(mind=mind, actor=actor, records=records)
            return status.HTTP_200_OK, sync_answer(outcomes)

        return idempotent(request, mind=mind, endpoint="mind.import", handler=restore)
