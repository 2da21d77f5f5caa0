"""/minds: a person's minds, their keys and their shares (people only).

What a person may do to each mind is minds.access's to say: reading it needs a share,
renaming it, its key and its shares need `admin`, deleting it needs its owner.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
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
    ShareCreateSerializer,
    SharedMindListSerializer,
    SharedMindSerializer,
    ShareListSerializer,
    ShareSerializer,
    ShareUpdateSerializer,
)
from minds import services
from minds.access import Level, mind_reach, minds_shared_with
from minds.models import Mind, Share

SHARE_ID = r"sh_[a-z0-9]+"
SHARE_ID_PARAM = OpenApiParameter(
    "share_id", {"type": "string", "pattern": f"^{SHARE_ID}$"}, "path"
)


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
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Mind]:
        return (
            Mind.objects.owned_by(self.request.user)
            .annotate(memory_count=Count("memories"))
            .order_by("created_at")
        )

    def _mind(self, pk: str | None, need: Level) -> Mind:
        """The mind `pk` when the person may do what needs `need` to it (404 / 403)."""
        mind, _ = mind_reach(user=self.request.user, mind_id=pk or "", need=need)
        return mind

    @extend_schema(responses={200: MindListSerializer})
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        minds = MindSerializer(self.get_queryset(), many=True).data
        return Response({"minds": minds, "total": len(minds)})

    def retrieve(
        self, request: Request, *args: Any, pk: str | None = None, **kwargs: Any
    ) -> Response:
        mind = self._mind(pk, Level.READ)
        mind.memory_count = mind.memories.count()  # type: ignore[attr-defined]
        return Response(MindSerializer(mind).data)

    @extend_schema(request=MindSerializer, responses={201: MindWithKeySerializer})
    def create(self, request: Request) -> Response:
        serializer = MindSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        mind, raw_key = services.mind_create(owner=request.user, **serializer.validated_data)
        mind.memory_count = 0  # type: ignore[attr-defined]  # as get_queryset annotates it
        return Response(with_key(mind, raw_key), status=status.HTTP_201_CREATED)

    @extend_schema(request=MindSerializer, responses={200: MindSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.ADMIN)
        serializer = MindSerializer(mind, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        services.mind_update(mind=mind, **serializer.validated_data)
        return Response(MindSerializer(mind).data)

    @extend_schema(responses={200: MindDeletedSerializer})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.OWNER)
        mind_id = mind.id
        services.mind_delete(mind=mind)
        return Response({"deleted": True, "id": mind_id})

    @extend_schema(request=None, responses={200: MindWithKeySerializer})
    @action(detail=True, methods=["post"], url_path="rotate-key")
    def rotate_key(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.ADMIN)
        raw_key = services.mind_rotate_key(mind=mind)
        return Response(with_key(mind, raw_key))

    @extend_schema(request=None, responses={200: MindSerializer})
    @action(detail=True, methods=["post"], url_path="revoke-key")
    def revoke_key(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.ADMIN)
        services.mind_revoke_key(mind=mind)
        return Response(MindSerializer(mind).data)

    # --- Sharing -------------------------------------------------------------------------

    @extend_schema(
        summary="Invite a person by email (pending until their account signs in)",
        description="The answer is the same whether or not the address has an account.",
        request=ShareCreateSerializer,
        responses={201: ShareSerializer},
    )
    @action(detail=True, methods=["post"])
    def share(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.ADMIN)
        body = request.data if isinstance(request.data, dict) else {}
        share = services.share_create(
            mind=mind,
            by=request.user,
            user_email=body.get("user_email"),
            acl=body.get("acl", Share.Acl.READ),
        )
        return Response(ShareSerializer(share).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="The mind's shares, oldest first", responses={200: ShareListSerializer})
    @action(detail=True, methods=["get"])
    def shares(self, request: Request, pk: str | None = None) -> Response:
        mind = self._mind(pk, Level.ADMIN)
        shares = ShareSerializer(mind.shares.order_by("created_at", "id"), many=True).data
        return Response({"shares": shares, "total": len(shares)})

    @extend_schema(
        summary="Change a share's level",
        parameters=[SHARE_ID_PARAM],
        request=ShareUpdateSerializer,
        responses={200: ShareSerializer},
    )
    @action(
        detail=True,
        methods=["put"],
        url_path=rf"shares/(?P<share_id>{SHARE_ID})",
        url_name="share-detail",
    )
    def share_update(self, request: Request, share_id: str, pk: str | None = None) -> Response:
        share = services.share_get(mind=self._mind(pk, Level.ADMIN), share_id=share_id)
        body = request.data if isinstance(request.data, dict) else {}
        share = services.share_update(share=share, acl=body.get("acl"))
        return Response(ShareSerializer(share).data)

    @extend_schema(
        summary="Revoke a share (it stops working at once)",
        parameters=[SHARE_ID_PARAM],
        request=None,
        responses={200: MindDeletedSerializer},
    )
    @share_update.mapping.delete
    def share_revoke(self, request: Request, share_id: str, pk: str | None = None) -> Response:
        share = services.share_get(mind=self._mind(pk, Level.ADMIN), share_id=share_id)
        services.share_delete(share=share)
        return Response({"deleted": True, "id": share_id})

    @extend_schema(
        summary="The minds others share with you, with your level and their owner",
        responses={200: SharedMindListSerializer},
    )
    @action(detail=False, methods=["get"])
    def shared(self, request: Request) -> Response:
        services.share_claim(user=request.user)
        minds = (
            minds_shared_with(user=request.user)
            .select_related("owner")
            .annotate(memory_count=Count("memories"))
            .order_by("created_at")
        )
        data = SharedMindSerializer(minds, many=True).data
        return Response({"minds": data, "total": len(data)})
