"""/memory: store (upsert), list, get, update, delete, verify, unverify.

Every request acts on the mind `mind_for_request` names; a memory of another mind is a 404.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from memories import selectors, services
from memories.idempotency import HEADER as IDEMPOTENCY_HEADER
from memories.idempotency import idempotent
from memories.models import Category, Memory, Priority, Source
from memories.params import (
    param_bool,
    param_category,
    param_limit,
    param_offset,
    param_priority,
    param_source,
    param_tag,
)
from memories.serialization import memory_to_dict
from memories.serializers import (
    MemoryDeletedSerializer,
    MemoryListAnswerSerializer,
    MemorySerializer,
    MemoryStoreAnswerSerializer,
    MemoryUpdateSerializer,
    MemoryWriteSerializer,
)
from minds.scoping import mind_for_request
from synapse_site.permissions import IsHuman

LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 1000

MIND_PARAM = OpenApiParameter(
    "mind",
    str,
    description="A person's mind id (m_…); may be omitted with exactly one mind. "
    "Ignored for a Mind Key. The X-Mind-Id header works too.",
)
ID_PARAM = OpenApiParameter("id", str, OpenApiParameter.PATH, description="mem_…")
LIST_PARAMS = [
    MIND_PARAM,
    OpenApiParameter("category", str, enum=list(Category.values)),
    OpenApiParameter("tag", str, description="Case-insensitive."),
    OpenApiParameter("priority", str, enum=[p.label for p in Priority]),
    OpenApiParameter("source", str, enum=list(Source.values)),
    OpenApiParameter("verified", bool),
    OpenApiParameter("include_expired", bool, description="Default false."),
    OpenApiParameter("limit", int, description=f"1 to {LIST_LIMIT_MAX}, default 100."),
    OpenApiParameter("offset", int, description="Default 0."),
]


@extend_schema_view(
    list=extend_schema(
        summary="List memories",
        parameters=LIST_PARAMS,
        responses=MemoryListAnswerSerializer,
    ),
    retrieve=extend_schema(
        summary="Get a memory", parameters=[ID_PARAM, MIND_PARAM], responses=MemorySerializer
    ),
    update=extend_schema(
        summary="Update a memory (partial body)",
        parameters=[ID_PARAM, MIND_PARAM],
        request=MemoryUpdateSerializer,
        responses=MemorySerializer,
    ),
    partial_update=extend_schema(
        summary="Update a memory (partial body)",
        parameters=[ID_PARAM, MIND_PARAM],
        request=MemoryUpdateSerializer,
        responses=MemorySerializer,
    ),
    destroy=extend_schema(
        summary="Delete a memory",
        parameters=[ID_PARAM, MIND_PARAM],
        responses=MemoryDeletedSerializer,
    ),
)
class MemoryViewSet(viewsets.GenericViewSet):
    queryset = Memory.objects.none()  # for the schema only: reads go through the selectors
    lookup_field = "id"
    lookup_value_regex = r"mem_[a-z0-9]+"

    def get_permissions(self):
        if self.action in ("verify", "unverify"):
            return [IsAuthenticated(), IsHuman()]
        return super().get_permissions()

    def _memory(self, request, memory_id: str) -> Memory:
        return selectors.memory_get(mind=mind_for_request(request), memory_id=memory_id)

    @extend_schema(
        summary="Store a memory (create, or update by category + key)",
        parameters=[
            MIND_PARAM,
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                str,
                OpenApiParameter.HEADER,
                description="Repeats within 24 h answer the first answer again; "
                "the same key with another body is a 409.",
            ),
        ],
        request=MemoryWriteSerializer,
        responses={201: MemoryStoreAnswerSerializer, 200: MemoryStoreAnswerSerializer},
    )
    def create(self, request):
        mind = mind_for_request(request)
        actor = services.actor_for_request(request)

        def store() -> tuple[int, dict]:
            serializer = MemoryWriteSerializer(data=request.data, mind_id=mind.pk)
            serializer.is_valid(raise_exception=True)
            result = services.memory_upsert(
                mind=mind, actor=actor, **serializer.validated_for_service()
            )
            warnings = list(result.warnings)
            if serializer.ignored_fields:
                warnings.append(
                    f"Ignored fields the server sets: {', '.join(serializer.ignored_fields)}."
                )
            body = {**memory_to_dict(result.memory), "action": result.action, "warnings": warnings}
            code = status.HTTP_201_CREATED if result.action == "created" else status.HTTP_200_OK
            return code, body

        return idempotent(request, mind=mind, endpoint="memory.store", handler=store)

    def list(self, request):
        params = request.query_params
        limit = param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        offset = param_offset(params)
        memories, total = selectors.memory_list(
            mind=mind_for_request(request),
            category=param_category(params),
            tag=param_tag(params),
            priority=param_priority(params),
            source=param_source(params),
            verified=param_bool(params, "verified", default=None),
            include_expired=bool(param_bool(params, "include_expired", default=False)),
            limit=limit,
            offset=offset,
        )
        return Response(
            {
                "memories": [memory_to_dict(m) for m in memories],
                "total": total,
                "limit": limit,
                "offset": offset,
            }
        )

    def retrieve(self, request, id: str):
        return Response(memory_to_dict(self._memory(request, id)))

    def update(self, request, id: str):
        memory = self._memory(request, id)
        serializer = MemoryUpdateSerializer(data=request.data, mind_id=memory.mind_id)
        serializer.is_valid(raise_exception=True)
        memory = services.memory_update(
            memory=memory,
            actor=services.actor_for_request(request),
            **serializer.validated_for_service(),
        )
        return Response(memory_to_dict(memory))

    def partial_update(self, request, id: str):
        return self.update(request, id)

    def destroy(self, request, id: str):
        memory = self._memory(request, id)
        services.memory_delete(memory=memory, actor=services.actor_for_request(request))
        return Response({"deleted": True, "id": id})

    @extend_schema(
        summary="Mark a memory verified (a person only)",
        parameters=[ID_PARAM, MIND_PARAM],
        request=None,
        responses=MemorySerializer,
    )
    @action(detail=True, methods=["post"])
    def verify(self, request, id: str):
        memory = services.memory_verify(
            memory=self._memory(request, id), actor=services.actor_for_request(request)
        )
        return Response(memory_to_dict(memory))

    @extend_schema(
        summary="Clear a memory's verification (a person only)",
        parameters=[ID_PARAM, MIND_PARAM],
        request=None,
        responses=MemorySerializer,
    )
    @action(detail=True, methods=["post"])
    def unverify(self, request, id: str):
        memory = services.memory_unverify(
            memory=self._memory(request, id), actor=services.actor_for_request(request)
        )
        return Response(memory_to_dict(memory))
