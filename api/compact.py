"""POST /memory/compact (the client's compact) and POST /memory/compact/{summary_id}/undo,
over the caller's mind: its agent (Mind Key) or a person who may write it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.memories import MIND_PARAM, actor_for_request
from api.scoping import mind_for_request
from api.serializers import MemorySerializer
from memories.fields import CATEGORIES, memory_to_dict
from memories.hygiene.compact import (
    MAX_CLUSTERS_DEFAULT,
    MAX_CLUSTERS_RANGE,
    MIN_CLUSTER_SIZE_DEFAULT,
    MIN_CLUSTER_SIZE_RANGE,
    OLDER_THAN_DEFAULT,
    Compaction,
    compact_undo,
    memory_compact,
)
from memories.rules import MAX_DURATION
from minds.access import Level


class CompactRequestSerializer(serializers.Serializer[Any]):
    """The body, for the schema only: memories.hygiene.compact judges it."""

    schema_server_fields = ()  # a strict body: an unknown field is a 400

    older_than = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=int(MAX_DURATION.total_seconds()),
        help_text="Only memories not updated for this many seconds (a duration like `30d` "
        f"works too; 0: any age); default {int(OLDER_THAN_DEFAULT.total_seconds())}.",
    )
    dry_run = serializers.BooleanField(
        required=False, help_text="Show the clusters and the summaries' drafts; write nothing."
    )
    max_clusters = serializers.IntegerField(
        required=False,
        min_value=MAX_CLUSTERS_RANGE[0],
        max_value=MAX_CLUSTERS_RANGE[1],
        help_text=f"Default {MAX_CLUSTERS_DEFAULT}.",
    )
    min_cluster_size = serializers.IntegerField(
        required=False,
        min_value=MIN_CLUSTER_SIZE_RANGE[0],
        max_value=MIN_CLUSTER_SIZE_RANGE[1],
        help_text=f"Default {MIN_CLUSTER_SIZE_DEFAULT}.",
    )
    category = serializers.ChoiceField(choices=list(CATEGORIES), required=False)


COMPACT_ANSWER = inline_serializer(
    "MemoryCompaction",
    {
        "dry_run": serializers.BooleanField(),
        "clusters_processed": serializers.IntegerField(),
        "memories_compacted": serializers.IntegerField(),
        "results": serializers.ListField(
            child=inline_serializer(
                "MemoryCompactionCluster",
                {
                    "summary": MemorySerializer(
                        help_text="The summary memory; on a dry run its draft, `id` null."
                    ),
                    "originals": serializers.ListField(child=serializers.CharField()),
                },
            )
        ),
    },
)
UNDO_ANSWER = inline_serializer(
    "MemoryCompactionUndone",
    {
        "summary_id": serializers.CharField(),
        "restored": serializers.ListField(child=serializers.CharField()),
        "summary_deleted": serializers.BooleanField(),
    },
)


def compaction_to_dict(done: Compaction) -> dict[str, Any]:
    return {
        "dry_run": done.dry_run,
        "clusters_processed": done.clusters_processed,
        "memories_compacted": done.memories_compacted,
        "results": [
            {"summary": memory_to_dict(r.summary), "originals": r.originals} for r in done.results
        ],
    }


class MemoryCompactView(APIView):
    @extend_schema(
        summary="Compact old, unverified agent memories into summaries",
        description=(
            "Clusters the mind's old, unverified agent (and tool) memories by their tags and "
            "meaning; each cluster becomes one summary memory (source `system`, unverified) "
            "holding the originals' distinct statements, and it supersedes them: they leave "
            "recall, search and lists, and stay in the database. Verified and critical "
            "memories are never touched; nothing is deleted. Undo a cluster with "
            "POST /memory/compact/{summary_id}/undo."
        ),
        parameters=[MIND_PARAM],
        request=CompactRequestSerializer,
        responses=COMPACT_ANSWER,
    )
    def post(self, request: Request) -> Response:
        done = memory_compact(
            mind=mind_for_request(request, need=Level.WRITE),
            actor=actor_for_request(request),
            body=request.data,
        )
        return Response(compaction_to_dict(done))


class MemoryCompactUndoView(APIView):
    @extend_schema(
        summary="Undo one compaction: its originals come back, its summary goes",
        description=(
            "Every memory the summary superseded is current again. The summary is deleted, "
            "unless a person has verified it or it no longer holds the system's text; then "
            "it stays (`summary_deleted` false)."
        ),
        parameters=[
            OpenApiParameter(
                "summary_id",
                {"type": "string", "pattern": "^mem_[a-z0-9]+$"},
                OpenApiParameter.PATH,
            ),
            MIND_PARAM,
        ],
        request=None,
        responses=UNDO_ANSWER,
    )
    def post(self, request: Request, summary_id: str) -> Response:
        undone = compact_undo(
            mind=mind_for_request(request, need=Level.WRITE),
            actor=actor_for_request(request),
            summary_id=summary_id,
        )
        return Response(
            {
                "summary_id": undone.summary_id,
                "restored": undone.restored,
                "summary_deleted": undone.summary_deleted,
            }
        )
