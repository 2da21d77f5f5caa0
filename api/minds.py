"""/minds: a user's minds and their keys (humans only)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.permissions import IsHuman
from api.serializers import (
    MindDeletedSerializer,
    MindListSerializer,
    MindSerializer,
    MindWithKeySerializer,
)
from minds import services
from minds.models import Mind


def with_key(mind: Mind, raw_key: str) -> dict[str, Any]:
    mind.mind_key = raw_key  # type: ignore[attr-defined]  # read by MindWithKeySerializer
    return MindWithKeySerializer(mind).data


class MindViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet[Mind],
):
    serializer_class = MindSerializer
    permission_classes = [IsHuman]
    lookup_value_regex = r"m_[a-z0-9]+"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Mind]:
        return (
            Mind.objects.owned_by(self.request.user)
            .annotate(memory_count=Count("memories"))
            .order_by("created_at")
        )

    @extend_schema(responses={200: MindListSerializer})
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        minds = MindSerializer(self.get_queryset(), many=True).data
        return Response({"minds": minds, "total": len(minds)})

    @extend_schema(request=MindSerializer, responses={201: MindWithKeySerializer})
    def create(self, request: Request) -> Response:
        serializer = MindSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        mind, raw_key = services.mind_create(owner=request.user, **serializer.validated_data)
        mind.memory_count = 0  # type: ignore[attr-defined]  # as get_queryset annotates it
        return Response(with_key(mind, raw_key), status=status.HTTP_201_CREATED)

    @extend_schema(request=MindSerializer, responses={200: MindSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        mind = self.get_object()
        serializer = MindSerializer(mind, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        services.mind_update(mind=mind, **serializer.validated_data)
        return Response(MindSerializer(mind).data)

    @extend_schema(responses={200: MindDeletedSerializer})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        mind = self.get_object()
        mind_id = mind.id
        services.mind_delete(mind=mind)
        return Response({"deleted": True, "id": mind_id})

    @extend_schema(request=None, responses={200: MindWithKeySerializer})
    @action(detail=True, methods=["post"], url_path="rotate-key")
    def rotate_key(self, request: Request, pk: str | None = None) -> Response:
        mind = self.get_object()
        raw_key = services.mind_rotate_key(mind=mind)
        return Response(with_key(mind, raw_key))

    @extend_schema(request=None, responses={200: MindSerializer})
    @action(detail=True, methods=["post"], url_path="revoke-key")
    def revoke_key(self, request: Request, pk: str | None = None) -> Response:
        mind = self.get_object()
        services.mind_revoke_key(mind=mind)
        return Response(MindSerializer(mind).data)
