"""/memory: store (upsert), list, get, update, delete, verify, unverify; the review and
overview lists (by-tag, expiring, unverified, related, tags, stats, health, audit) and
incremental sync (diff, sync).

Every request acts on the mind `mind_for_request` names; a memory of another mind is a 404.
Memory lists answer `{"memories", "total", "limit", "offset"}` and leave expired memories
out unless `include_expired=true`.
An answer about one memory carries its ETag; PUT, PATCH, DELETE, verify and unverify honour
If-Match (conditions.py), judged by the services under the write's lock.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from api.conditions import (
    ETAG_HEADER,
    IF_MATCH_PARAM,
    PRECONDITION_FAILED,
    etag,
    expected_version,
    refuse_if_match,
)
from api.idempotency import HEADER as IDEMPOTENCY_HEADER
from api.idempotency import idempotent
from api.params import (
    TIMESTAMP_SCHEMA,
    param_as_of,
    param_bool,
    param_category,
    param_choice,
    param_duration,
    param_expired,
    param_limit,
    param_offset,
    param_priority,
    param_required,
    param_source,
    param_superseded,
    param_tag,
    param_timestamp,
)
from api.permissions import IsHuman
from api.scoping import memory_for_request, memory_mind_for_request, mind_for_request
from api.search import AS_OF_PARAMETER
from api.serializers import (
    MemoryDeletedSerializer,
    MemoryIdField,
    MemoryListAnswerSerializer,
    MemorySerializer,
    MemoryStoreAnswerSerializer,
    MemoryUpdateAnswerSerializer,
    MemoryUpdateSerializer,
    MemoryWriteSerializer,
)
from api.streaming import streamed_json
from core.errors import Invalid
from memories import audit, selectors, services
from memories.actors import Actor
from memories.as_of import memory_as_of, memory_list_as_of
from memories.fields import (
    CATEGORIES,
    PRIORITIES,
    SOURCES,
    event_to_dict,
    iso,
    memory_to_dict,
    page_to_dict,
    stored_to_dict,
)
from memories.filters import MAX_OFFSET, MemoryFilters
from memories.hygiene.health import mind_health_with_hygiene
from memories.hygiene.supersede import proposal_list, proposal_to_dict
from memories.models import Memory, MemoryEvent
from memories.rules import (
    BULK_MAX_ITEMS,
    DURATION_FORMS,
    clean_memory_id,
    normalize_tag,
)
from memories.selectors import LIST_LIMIT_MAX
from minds.access import Level

if TYPE_CHECKING:
    from rest_framework.permissions import _SupportsHasPermission

LIST_LIMIT_DEFAULT = 100
# Rows read at a time for a streamed answer: each can hold 50,000 characters.
STREAM_CHUNK = 100

MIND_PARAM = OpenApiParameter(
    "mind",
    str,
    description="A person's mind id (m_…); may be omitted when they reach exactly one "
    "mind (owned or shared), and on a call on one memory, which finds the memory's mind. "
    "A Mind Key acts only for its own mind: naming another one is a 400. "
    "The X-Mind-Id header works too.",
)
IDEMPOTENCY_PARAM = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"},
    OpenApiParameter.HEADER,
    description="Repeats within 24 h answer the first answer again; "
    "the same key with another body is a 409.",
)


def stores_by_key(write: str) -> str:
    """Why `write`, an upsert by (category, key), takes no If-Match, and where to send it."""
    return (
        f"{write} stores by category and key whatever is there. To change a memory only if it "
        "is still the version you read, send If-Match with PUT or PATCH /memory/{id}."
    )


PURGE_PARAM = OpenApiParameter(
    "purge",
    bool,
    description="true: its content, tags and earlier values also leave the audit trail, "
    "with its vector and search index rows (a person only; a Mind Key gets 403).",
)
ID_PARAM = OpenApiParameter(
    "id",
    {"type": "string", "pattern": "^mem_[a-z0-9]+$"},
    OpenApiParameter.PATH,
    description="mem_…",
)
LIST_PARAMS = [
    MIND_PARAM,
    OpenApiParameter("category", str, enum=list(CATEGORIES)),
    OpenApiParameter("tag", str, description="Case-insensitive."),
    OpenApiParameter("priority", str, enum=list(PRIORITIES)),
    OpenApiParameter("source", str, enum=list(SOURCES)),
    OpenApiParameter("verified", bool),
    OpenApiParameter("include_expired", bool, description="Default false."),
    OpenApiParameter(
        "include_superseded", bool, description="Default false: memories another replaced."
    ),
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT_MAX},
        description=f"1 to {LIST_LIMIT_MAX}, default 100.",
    ),
    OpenApiParameter(
        "offset", {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}, description="Default 0."
    ),
]
PAGE_PARAMS = [
    MIND_PARAM,
    OpenApiParameter("include_expired", bool, description="Default false."),
    *LIST_PARAMS[-2:],
]
AUDIT_ACTIONS = list(MemoryEvent.Action.values)
TAGS_LIMIT_DEFAULT = 1000
TAGS_LIMIT_MAX = 10_000
SINCE_HINT = "Unix epoch seconds or an ISO-8601 timestamp, e.g. the `until` of the last diff."


def actor_for_request(request: Request) -> Actor:
    """The actor behind an authenticated API request."""
    actor = Actor.for_caller(request.user)
    if actor is None:
        raise PermissionDenied("This needs a Mind Key or a person's login.")
    return actor


def _one_memory(memory: Memory) -> Response:
    """The answer about one memory: the memory, and its version as the ETag."""
    return Response(memory_to_dict(memory), headers={"ETag": etag(memory)})


def _streamed(memories: QuerySet[Memory]) -> Iterator[dict[str, Any]]:
    """The memories as JSON, read a chunk at a time as they are sent."""
    return (memory_to_dict(m) for m in memories.iterator(chunk_size=STREAM_CHUNK))


def memory_page(page: selectors.MemoryPage, *, limit: int, offset: int) -> dict[str, Any]:
    """The answer of every memory list."""
    return page_to_dict(page.memories, total=page.total, limit=limit, offset=offset)


def param_since(params: Any) -> datetime:
    param_required(params, "since", SINCE_HINT)
    since = param_timestamp(params, "since", hint=SINCE_HINT)
    assert since is not None  # present: param_required said so
    return since


def bulk_items(data: Any, *, hint: str) -> list[Any]:
    """The `memories` list of a sync or import body; anything else is a 400 naming it."""
    items = data.get("memories") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise Invalid.one("memories", f"Required: {hint}")
    return items


def item_error(index: int, refused: services.ItemRefused) -> dict[str, Any]:
    """A refused bulk item, in the error shape of section 7 plus its index."""
    error = refused.error
    return {"index": index, "error": error.code, "detail": error.detail, "fields": error.fields}


def sync_answer(outcomes: Sequence[services.UpsertResult | services.ItemRefused]) -> dict[str, Any]:
    """Counts, one result per stored item (in request order) and one error per refused one."""
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    results, errors = [], []
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, services.ItemRefused):
            errors.append(item_error(index, outcome))
            continue
        result_action = outcome.outcome
        counts[result_action] += 1
        result: dict[str, Any] = {"index": index, "id": outcome.memory.pk}
        result["key"] = outcome.memory.key
        result["action"] = result_action
        if outcome.warnings:
            result["warnings"] = outcome.warnings
        results.append(result)
    return {**counts, "results": results, "errors": errors}


def _answer(
    name: str, fields: dict[str, serializers.Field[Any, Any, Any, Any]]
) -> serializers.Serializer[Any]:
    return inline_serializer(name, fields)


def bulk_request(name: str) -> serializers.Serializer[Any]:
    """A body of `{"memories": [...]}`: sync and import."""
    return _answer(name, {"memories": serializers.ListField(child=serializers.DictField())})


SYNC_ANSWER = _answer(
    "MemorySyncAnswer",
    {
        "created": serializers.IntegerField(),
        "updated": serializers.IntegerField(),
        "unchanged": serializers.IntegerField(),
        "results": serializers.ListField(
            child=serializers.DictField(), help_text="{index, id, key, action[, warnings]}"
        ),
        "errors": serializers.ListField(
            child=serializers.DictField(), help_text="{index, error, detail, fields}"
        ),
    },
)
DIFF_ANSWER = _answer(
    "MemoryDiff",
    {
        "since": serializers.DateTimeField(),
        "until": serializers.DateTimeField(help_text="Pass it as the next `since`."),
        "has_more": serializers.BooleanField(
            help_text="This page ends before now: ask again at once with since = until."
        ),
        "created": MemorySerializer(many=True),
        "updated": MemorySerializer(many=True),
        "deleted": serializers.ListField(child=serializers.CharField()),
    },
)
OBJECT_ANSWER = OpenApiTypes.OBJECT


@extend_schema_view(
    list=extend_schema(
        summary="List memories",
        parameters=[*LIST_PARAMS, AS_OF_PARAMETER],
        responses=MemoryListAnswerSerializer,
    ),
    retrieve=extend_schema(
        summary="Get a memory",
        parameters=[ID_PARAM, MIND_PARAM, ETAG_HEADER, AS_OF_PARAMETER],
        responses=MemorySerializer,
    ),
    update=extend_schema(
        summary="Update a memory (partial body)",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, ETAG_HEADER],
        request=MemoryUpdateSerializer,
        responses={200: MemoryUpdateAnswerSerializer, 412: PRECONDITION_FAILED},
    ),
    partial_update=extend_schema(
        summary="Update a memory (partial body)",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, ETAG_HEADER],
        request=MemoryUpdateSerializer,
        responses={200: MemoryUpdateAnswerSerializer, 412: PRECONDITION_FAILED},
    ),
    destroy=extend_schema(
        summary="Delete a memory (purge=true: and forget it, a person only)",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, PURGE_PARAM],
        responses={200: MemoryDeletedSerializer, 412: PRECONDITION_FAILED},
    ),
)
class MemoryViewSet(viewsets.GenericViewSet[Memory]):
    queryset = Memory.objects.none()  # for the schema only: reads go through the selectors
    lookup_field = "id"
    lookup_value_regex = r"mem_[a-z0-9]+"

    def get_permissions(self) -> Sequence[_SupportsHasPermission]:
        if self.action in ("verify", "unverify", "reject_proposal"):
            return [IsAuthenticated(), IsHuman()]
        return super().get_permissions()

    def _memory(self, request: Request, memory_id: str, *, need: Level) -> Memory:
        return memory_for_request(request, memory_id, need=need)

    def _list(self, request: Request, filters: MemoryFilters, sort: str | None = None) -> Response:
        params = request.query_params
        limit = param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        offset = param_offset(params)
        page = selectors.memory_list(
            mind=mind_for_request(request, need=Level.READ),
            filters=filters,
            sort=sort,
            limit=limit,
            offset=offset,
        )
        return Response(memory_page(page, limit=limit, offset=offset))

    def _list_as_of(self, request: Request, filters: MemoryFilters, at: datetime) -> Response:
        """GET /memory?as_of=: the list the mind would have answered then."""
        params = request.query_params
        limit = param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        offset = param_offset(params)
        mind = mind_for_request(request, need=Level.READ)
        page = memory_list_as_of(mind=mind, at=at, filters=filters, limit=limit, offset=offset)
        return Response({**memory_page(page, limit=limit, offset=offset), "as_of": iso(at)})

    @extend_schema(
        summary="Store a memory (create, or update by category + key)",
        parameters=[MIND_PARAM, IDEMPOTENCY_PARAM],
        request=MemoryWriteSerializer,
        responses={201: MemoryStoreAnswerSerializer, 200: MemoryStoreAnswerSerializer},
    )
    def create(self, request: Request) -> HttpResponse | Response:
        mind = mind_for_request(request, need=Level.WRITE)
        actor = actor_for_request(request)
        refuse_if_match(request, instead=stores_by_key("POST /memory"))

        def store() -> tuple[int, dict[str, Any]]:
            result = services.memory_store(mind=mind, actor=actor, body=request.data)
            body = stored_to_dict(result.memory, action=result.outcome, warnings=result.warnings)
            code = status.HTTP_201_CREATED if result.action == "created" else status.HTTP_200_OK
            return code, body

        return idempotent(request, mind=mind, endpoint="memory.store", handler=store)

    def list(self, request: Request) -> Response:
        params = request.query_params
        filters = MemoryFilters(
            category=param_category(params),
            tag=param_tag(params),
            priority=param_priority(params),
            source=param_source(params),
            verified=param_bool(params, "verified", default=None),
            expired=param_expired(params),
            superseded=param_superseded(params),
        )
        at = param_as_of(params)
        if at is not None:
            return self._list_as_of(request, filters, at)
        return self._list(request, filters)

    def retrieve(self, request: Request, id: str) -> Response:
        at = param_as_of(request.query_params)
        if at is not None:  # a version of the past: no ETag, nothing to write against
            mind = memory_mind_for_request(request, id, need=Level.READ)
            return Response(memory_to_dict(memory_as_of(mind=mind, memory_id=id, at=at)))
        return _one_memory(self._memory(request, id, need=Level.READ))

    def update(self, request: Request, id: str) -> Response:
        result = services.memory_change(
            memory=self._memory(
                request, id, need=Level.WRITE
            ),  # a 404 comes before any If-Match verdict
            actor=actor_for_request(request),
            body=request.data,
            expected_version=expected_version(request),
        )
        answer = _one_memory(result.memory)
        answer.data["warnings"] = result.warnings
        return answer

    def partial_update(self, request: Request, id: str) -> Response:
        return self.update(request, id)

    def destroy(self, request: Request, id: str) -> Response:
        purge = param_bool(request.query_params, "purge")
        memory = self._memory(request, id, need=Level.WRITE)
        if purge:
            services.memory_purge(
                memory=memory,
                actor=actor_for_request(request),
                expected_version=expected_version(request),
            )
            return Response({"deleted": True, "id": id, "purged": True})
        services.memory_delete(
            memory=memory,
            actor=actor_for_request(request),
            expected_version=expected_version(request),
        )
        return Response({"deleted": True, "id": id})

    @extend_schema(
        summary="Mark a memory verified (a person only)",
        description="Send the ETag of the memory you read as If-Match, so that you verify "
        "that text and not one written since.",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, ETAG_HEADER],
        request=None,
        responses={200: MemorySerializer, 412: PRECONDITION_FAILED},
    )
    @action(detail=True, methods=["post"])
    def verify(self, request: Request, id: str) -> Response:
        memory = services.memory_verify(
            memory=self._memory(request, id, need=Level.WRITE),
            actor=actor_for_request(request),
            expected_version=expected_version(request),
        )
        return _one_memory(memory)

    @extend_schema(
        summary="Clear a memory's verification (a person only)",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, ETAG_HEADER],
        request=None,
        responses={200: MemorySerializer, 412: PRECONDITION_FAILED},
    )
    @action(detail=True, methods=["post"])
    def unverify(self, request: Request, id: str) -> Response:
        memory = services.memory_unverify(
            memory=self._memory(request, id, need=Level.WRITE),
            actor=actor_for_request(request),
            expected_version=expected_version(request),
        )
        return _one_memory(memory)

    @extend_schema(
        summary="Mark a memory replaced by another of its mind (by: null undoes it)",
        description="A superseded memory leaves recall, search and lists unless "
        "`include_superseded=true`, and stays in history, export and diff. A Mind Key that "
        "supersedes a verified memory only proposes it (`proposed: true`): a person accepts "
        "by superseding the same way, or rejects it.",
        parameters=[ID_PARAM, MIND_PARAM, IF_MATCH_PARAM, ETAG_HEADER],
        request=inline_serializer("SupersedeRequest", {"by": MemoryIdField(allow_null=True)}),
        responses={200: OBJECT_ANSWER, 412: PRECONDITION_FAILED},
    )
    @action(detail=True, methods=["post"])
    def supersede(self, request: Request, id: str) -> Response:
        data = request.data
        if not isinstance(data, dict) or "by" not in data:
            raise Invalid.one(
                "by",
                'Required: the id of the memory that replaces this one ("mem_…"), or null to undo.',
            )
        by = data["by"]
        if by is not None:
            try:
                by = clean_memory_id(by)
            except ValueError as exc:
                raise Invalid.one("by", str(exc)) from None
        done = services.memory_supersede(
            memory=self._memory(request, id, need=Level.WRITE),
            by=by,
            actor=actor_for_request(request),
            expected_version=expected_version(request),
        )
        answer = _one_memory(done.memory)
        answer.data["proposed"] = done.proposed
        if done.proposal is not None:
            answer.data["proposal"] = proposal_to_dict(done.proposal)
        return answer

    @extend_schema(
        summary="Reject a proposed supersede (a person only)",
        parameters=[
            ID_PARAM,
            OpenApiParameter(
                "proposal_id", {"type": "string", "pattern": "^prop_[a-z0-9]+$"}, "path"
            ),
            MIND_PARAM,
        ],
        request=None,
        responses=OBJECT_ANSWER,
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=r"proposals/(?P<proposal_id>prop_[a-z0-9]+)",
        url_name="proposal",
    )
    def reject_proposal(self, request: Request, id: str, proposal_id: str) -> Response:
        memory = self._memory(request, id, need=Level.WRITE)
        services.proposal_reject(
            mind=memory.mind,
            memory_id=id,
            proposal_id=proposal_id,
            actor=actor_for_request(request),
        )
        return Response({"deleted": True, "id": proposal_id})

    @extend_schema(
        summary="Proposed supersedes waiting for a person, newest first",
        parameters=[MIND_PARAM, *LIST_PARAMS[-2:]],
        responses=OBJECT_ANSWER,
    )
    @action(detail=False, methods=["get"])
    def proposals(self, request: Request) -> Response:
        params = request.query_params
        limit = param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        offset = param_offset(params)
        page = proposal_list(
            mind=mind_for_request(request, need=Level.READ), limit=limit, offset=offset
        )
        return Response(
            {
                "proposals": [proposal_to_dict(p) for p in page.proposals],
                "total": page.total,
                "limit": limit,
                "offset": offset,
            }
        )

    # --- Review and overview -------------------------------------------------------------

    @extend_schema(
        summary="Memories with a tag",
        parameters=[
            # Not only whitespace as Python strips it, which also takes \x1c-\x1f and \x85.
            OpenApiParameter(
                "tag", {"type": "string", "pattern": r"[^\s\x1c-\x1f\x85]"}, required=True
            ),
            *PAGE_PARAMS,
        ],
        responses=MemoryListAnswerSerializer,
    )
    @action(detail=False, methods=["get"], url_path="by-tag")
    def by_tag(self, request: Request) -> Response:
        params = request.query_params
        tag = normalize_tag(param_required(params, "tag", "the tag to list, e.g. ?tag=docker"))
        filters = MemoryFilters(
            tag=tag, expired=param_expired(params), superseded=param_superseded(params)
        )
        return self._list(request, filters)

    @extend_schema(
        summary="Memories expiring soon, soonest first",
        parameters=[
            OpenApiParameter(
                "within",
                # What param_duration reads (capped here below its 100-year limit).
                {"type": "string", "pattern": r"^\s*0*[1-9][0-9]{0,2}\s*[smhdwSMHDW]?\s*$"},
                description=f"{DURATION_FORMS}; default 7d.",
            ),
            *PAGE_PARAMS,
        ],
        description="`include_expired=true` also lists the already expired ones, first.",
        responses=MemoryListAnswerSerializer,
    )
    @action(detail=False, methods=["get"])
    def expiring(self, request: Request) -> Response:
        params = request.query_params
        filters = selectors.expiring_filters(
            within=param_duration(params, "within", default=selectors.EXPIRING_SOON),
            include_expired=param_expired(params) == "include",
        )
        return self._list(request, filters, sort="expires")

    @extend_schema(
        summary="The review queue: unverified memories",
        description="Highest priority first, then lowest confidence, then most recently updated.",
        parameters=PAGE_PARAMS,
        responses=MemoryListAnswerSerializer,
    )
    @action(detail=False, methods=["get"])
    def unverified(self, request: Request) -> Response:
        filters = MemoryFilters(verified=False, expired=param_expired(request.query_params))
        return self._list(request, filters, sort="review")

    @extend_schema(
        summary="Memories sharing tags with this one, most shared first",
        description="Each carries `shared_tags`. Ties go to the most recently updated.",
        parameters=[ID_PARAM, *PAGE_PARAMS],
        responses=MemoryListAnswerSerializer,
    )
    @action(detail=True, methods=["get"])
    def related(self, request: Request, id: str) -> Response:
        memory = self._memory(request, id, need=Level.READ)
        mind = memory.mind
        params = request.query_params
        limit = param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        offset = param_offset(params)
        page = selectors.memory_related(
            mind=mind,
            memory=memory,
            include_expired=param_expired(params) == "include",
            limit=limit,
            offset=offset,
        )
        answer = memory_page(page, limit=limit, offset=offset)
        for entry in answer["memories"]:
            entry["shared_tags"] = [tag for tag in entry["tags"] if tag in memory.tags]
        return Response(answer)

    @extend_schema(
        summary="Tags with how many memories carry each, most used first",
        parameters=[
            MIND_PARAM,
            OpenApiParameter("include_expired", bool, description="Default false."),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": TAGS_LIMIT_MAX},
                description=f"1 to {TAGS_LIMIT_MAX}, default {TAGS_LIMIT_DEFAULT}.",
            ),
        ],
        responses=_answer(
            "MemoryTags",
            {
                "tags": serializers.ListField(child=serializers.DictField()),
                "total_memories": serializers.IntegerField(),
                "total_tags": serializers.IntegerField(),
            },
        ),
    )
    @action(detail=False, methods=["get"])
    def tags(self, request: Request) -> Response:
        params = request.query_params
        limit = param_limit(params, default=TAGS_LIMIT_DEFAULT, maximum=TAGS_LIMIT_MAX)
        tags, distinct, memories = selectors.tag_counts(
            mind=mind_for_request(request, need=Level.READ),
            include_expired=param_expired(params) == "include",
            limit=limit,
        )
        return Response({"tags": tags, "total_memories": memories, "total_tags": distinct})

    @extend_schema(
        summary="Totals by category, priority, source, verification and expiry",
        parameters=[MIND_PARAM],
        responses=OBJECT_ANSWER,
    )
    @action(detail=False, methods=["get"])
    def stats(self, request: Request) -> Response:
        return Response(selectors.memory_stats(mind=mind_for_request(request, need=Level.READ)))

    @extend_schema(
        summary="The mind's health and what a person should look at",
        description="Counts (live, verified, expiring soon, stale, superseded, and what the "
        "hygiene checks find: contradictions written within 7 days, duplicate groups, "
        "proposals waiting for a person), each with an attention item when not zero.",
        parameters=[MIND_PARAM],
        responses=OBJECT_ANSWER,
    )
    @action(detail=False, methods=["get"])
    def health(self, request: Request) -> Response:
        return Response(mind_health_with_hygiene(mind=mind_for_request(request, need=Level.READ)))

    @extend_schema(
        summary="The audit trail: who did what to which memory, with the old values",
        parameters=[
            MIND_PARAM,
            OpenApiParameter("action", str, enum=AUDIT_ACTIONS),
            OpenApiParameter("memory", str, description="Only this memory (mem_…)."),
            *LIST_PARAMS[-2:],
        ],
        responses=_answer(
            "MemoryAudit",
            {
                "entries": serializers.ListField(child=serializers.DictField()),
                "total": serializers.IntegerField(),
            },
        ),
    )
    @action(detail=False, methods=["get"])
    def audit(self, request: Request) -> StreamingHttpResponse:
        params = request.query_params
        events, total = audit.memory_event_page(
            mind=mind_for_request(request, need=Level.READ),
            action=param_choice(params, "action", AUDIT_ACTIONS),
            memory_id=(params.get("memory") or "").strip() or None,
            limit=param_limit(params, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX),
            offset=param_offset(params),
        )
        # An entry can hold two versions of a long text: the page is sent as it is read.
        entries = (event_to_dict(e) for e in events.iterator(chunk_size=STREAM_CHUNK))
        return streamed_json({"entries": entries, "total": total})

    # --- Incremental sync ----------------------------------------------------------------

    @extend_schema(
        summary="What changed since a time: created, updated, deleted ids",
        description=(
            "The window is since <= t < until; `until` is the server's time of this answer, "
            "so passing it as the next `since` neither repeats nor misses a write. A window "
            f"of more than `limit` changes (default and most {selectors.DIFF_PAGE_MAX:,}) is "
            "answered a page at a time: the answer covers the window's start, its `until` "
            "ends that page and `has_more` is true; call again with since = until (a page "
            "never splits the writes of one instant, so it may hold a few more)."
        ),
        parameters=[
            OpenApiParameter(
                "since",
                TIMESTAMP_SCHEMA,
                required=True,
                description=SINCE_HINT,
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": selectors.DIFF_PAGE_MAX},
                description=f"Changes a page lists, 1 to {selectors.DIFF_PAGE_MAX:,} (default).",
            ),
            MIND_PARAM,
        ],
        responses=DIFF_ANSWER,
    )
    @action(detail=False, methods=["get"])
    def diff(self, request: Request) -> StreamingHttpResponse:
        params = request.query_params
        since = param_since(params)
        page = selectors.DIFF_PAGE_MAX
        limit = param_limit(params, default=page, maximum=page)
        mind = mind_for_request(request, need=Level.READ)
        until = selectors.diff_until(mind=mind)
        diff = selectors.memory_diff(mind=mind, since=since, until=until, limit=limit)
        # A page can still hold many long texts: it is sent as it is read.
        return streamed_json(
            {
                "since": iso(diff.since),
                "until": iso(diff.until),
                "has_more": diff.has_more,
                "created": _streamed(diff.created),
                "updated": _streamed(diff.updated),
                "deleted": diff.deleted.iterator(chunk_size=STREAM_CHUNK),
            }
        )

    @extend_schema(
        summary=f"Store up to {BULK_MAX_ITEMS} memories at once (upsert each)",
        description=(
            "Each item is what POST /memory takes and is stored by the same rules. A refused "
            "item is listed in `errors` and does not stop the others."
        ),
        parameters=[MIND_PARAM, IDEMPOTENCY_PARAM],
        request=bulk_request("MemorySync"),
        responses=SYNC_ANSWER,
    )
    @action(detail=False, methods=["post"])
    def sync(self, request: Request) -> HttpResponse | Response:
        mind = mind_for_request(request, need=Level.WRITE)
        actor = actor_for_request(request)
        refuse_if_match(request, instead=stores_by_key("POST /memory/sync"))

        def store_all() -> tuple[int, dict[str, Any]]:
            items = bulk_items(request.data, hint='a list of memories, {"memories": [...]}.')
            outcomes = services.memory_upsert_many(mind=mind, actor=actor, items=items)
            return status.HTTP_200_OK, sync_answer(outcomes)

        return idempotent(request, mind=mind, endpoint="memory.sync", handler=store_all)
