"""Pictures of a mind: its memories as a graph (linked by shared tags, or by meaning) and its
writes over time. Selectors: every face (the API, later the dashboard) draws from these.

What counts as a node, an edge and a write is decided here once; the README's API table
describes the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import combinations
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import CharField, Count, F, Func
from django.db.models.functions import Trunc
from django.utils import timezone

from core.errors import Invalid, Unavailable
from memories.fields import PRIORITY_NAMES
from memories.filters import MemoryFilters
from memories.hygiene import pairs
from memories.hygiene.contradictions import CANDIDATE_COSINE
from memories.models import Memory, MemoryEvent
from memories.search import MEANING_UNAVAILABLE
from minds.models import Mind

# --- The graph ----------------------------------------------------------------------------

NODES_RANGE = (10, 1000)
NODES_DEFAULT = 200
SHARED_TAGS_RANGE = (1, 10)
EDGE_KINDS = ("tags", "meaning", "both")
# Two memories are linked by meaning when their vectors are this close: the closeness the
# contradiction check reads as "about the same thing".
MEANING_COSINE = CANDIDATE_COSINE
# At most this many edges in one answer, the heaviest first: a tag every node carries would
# otherwise link every pair, an answer no picture can draw.
EDGES_MAX = 20_000
NODE_FIELDS = ("id", "key", "category", "priority", "verified", "confidence", "tags")
MEANING_OFF = (
    "Edges by meaning need search by meaning, which is off on this server "
    "(SYNAPSE_EMBEDDINGS=off); use edges=tags."
)


@dataclass(frozen=True)
class GraphQuery:
    """What a graph is drawn from: at most `max_nodes` live memories passing the filters
    (`verified`: None for both, else only the verified or only the unverified), with edges
    of `edges` kind (none unless `include_edges`)."""

    max_nodes: int = NODES_DEFAULT
    category: str | None = None
    tag: str | None = None
    verified: bool | None = None
    min_confidence: float = 0.0
    include_edges: bool = True
    min_shared_tags: int = 1
    edges: str = "tags"


def memory_graph(
    *, mind: Mind, query: GraphQuery = GraphQuery(), now: datetime | None = None
) -> dict[str, Any]:
    """`{"nodes", "edges", "stats"}` of the mind's live, current memories (not expired, not
    superseded; deleted ones are gone) narrowed by `query`.

    With more than `max_nodes` candidates the most important are kept: highest priority
    first, then most recently updated (the recall order, read from its index). Edges link
    two chosen nodes sharing at least `min_shared_tags` tags (`weight`: how many, the tags
    in `shared_tags`), found in one pass over the chosen nodes' tags; by meaning, two nodes
    whose vectors' cosine is at least MEANING_COSINE (`weight`: the cosine). Each edge says
    its `kind`. Invalid (`edges`) for edges by meaning with embeddings off.
    """
    if query.include_edges and query.edges != "tags" and _embeddings_off():
        raise Invalid.one("edges", MEANING_OFF)
    now = now or timezone.now()
    filters = MemoryFilters(category=query.category, tag=query.tag, verified=query.verified)
    nodes = _chosen_nodes(mind, filters, query, now)
    edges: list[dict[str, Any]] = []
    if query.include_edges and nodes:
        if query.edges in ("tags", "both"):
            edges += tag_edges(nodes, min_shared=query.min_shared_tags)
        if query.edges in ("meaning", "both"):
            edges += _meaning_edges(mind, [n["id"] for n in nodes])
    edges.sort(key=lambda e: (-e["weight"], e["source"], e["target"]))
    left_out = max(0, len(edges) - EDGES_MAX)
    edges = edges[:EDGES_MAX]
    return {"nodes": nodes, "edges": edges, "stats": graph_stats(nodes, edges, left_out)}


def _embeddings_off() -> bool:
    return str(settings.SYNAPSE_EMBEDDINGS) == "off"


def _chosen_nodes(
    mind: Mind, filters: MemoryFilters, query: GraphQuery, now: datetime
) -> list[dict[str, Any]]:
    if filters.impossible:
        return []
    memories = filters.apply(Memory.objects.filter(mind=mind), now=now)
    if query.min_confidence > 0:
        memories = memories.filter(confidence__gte=query.min_confidence)
    rows = memories.recall_order().values_list(*NODE_FIELDS)[: query.max_nodes]
    nodes = []
    for row in rows:
        node = dict(zip(NODE_FIELDS, row, strict=True))
        node["priority"] = PRIORITY_NAMES[node["priority"]]
        nodes.append(node)
    return nodes


def tag_edges(nodes: Iterable[dict[str, Any]], *, min_shared: int = 1) -> list[dict[str, Any]]:
    """Edges between the nodes sharing at least `min_shared` tags: an inverted index (tag →
    the nodes carrying it), so only pairs that share something are ever visited."""
    holders: dict[str, list[str]] = {}
    for node in nodes:
        for tag in dict.fromkeys(node["tags"]):
            holders.setdefault(tag, []).append(node["id"])
    shared: dict[tuple[str, str], list[str]] = {}
    for tag in sorted(holders):
        for a, b in combinations(holders[tag], 2):
            shared.setdefault(pairs.pair(a, b), []).append(tag)
    return [
        {"source": a, "target": b, "shared_tags": tags, "weight": len(tags), "kind": "tags"}
        for (a, b), tags in shared.items()
        if len(tags) >= min_shared
    ]


def _meaning_edges(mind: Mind, ids: list[str]) -> list[dict[str, Any]]:
    """Edges between the nodes whose vectors are close (the hygiene checks' matrix product,
    over the chosen nodes only). A node without a vector yet has none."""
    vectors = pairs.mind_vectors(mind.pk)
    if vectors is None:  # on, but the model does not load now
        raise Unavailable(MEANING_UNAVAILABLE)
    close = pairs.close_in_meaning(vectors, among=ids, threshold=MEANING_COSINE)
    return [
        {"source": a, "target": b, "shared_tags": [], "weight": round(c, 4), "kind": "meaning"}
        for (a, b), c in close.items()
    ]


def graph_stats(
    nodes: list[dict[str, Any]], edges: list[dict[str, Any]], left_out: int = 0
) -> dict[str, Any]:
    """Counts, density (the share of possible pairs linked, by any kind) and the connected
    components, a lone node counting as one."""
    n = len(nodes)
    parent = {node["id"]: node["id"] for node in nodes}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    linked = set()
    for edge in edges:
        a, b = edge["source"], edge["target"]
        linked.add((a, b))
        parent[root(a)] = root(b)
    possible = n * (n - 1) // 2
    return {
        "nodes": n,
        "edges": len(edges),
        "edges_left_out": left_out,
        "density": round(len(linked) / possible, 4) if possible else 0.0,
        "connected_components": len({root(x) for x in parent}),
    }


# --- The timeline ---------------------------------------------------------------------------

PERIODS = ("hour", "day", "week", "month", "year")
PERIOD_DEFAULT = "day"
# At most this many periods in one answer: the last ones, up to `until`.
PERIODS_MAX = 366
WRITES = (MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE)
_LABELS = {
    "hour": "%Y-%m-%dT%H:00Z",
    "day": "%Y-%m-%d",
    "week": "%Y-%m-%d",
    "month": "%Y-%m",
    "year": "%Y",
}


def memory_timeline(
    *,
    mind: Mind,
    period: str = PERIOD_DEFAULT,
    since: datetime | None = None,
    until: datetime | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """`{"timeline": [{"period", "start", "count", "created", "updated", "categories"}],
    "total_periods"}`: the mind's writes per `period` (UTC; weeks start on Monday), oldest
    first, periods without a write left out.

    A write is a create or an update in the audit trail, whoever made it, so a memory
    rewritten three times counts three times, and what was written and later deleted still
    counts where it was written. Grouped in the database, over the last PERIODS_MAX periods
    up to `until` (default now), not before `since`.
    """
    until = until or now or timezone.now()
    start = period_start(until, period, back=PERIODS_MAX - 1)
    if since is not None and since > start:
        start = since
    rows = (
        MemoryEvent.objects.filter(mind=mind, action__in=WRITES, at__gte=start, at__lte=until)
        .annotate(bucket=_period_of_at(period))
        .values_list("bucket", "category", "action")
        .annotate(n=Count("pk"))
        .order_by()
    )
    buckets: dict[datetime, dict[str, Any]] = {}
    for bucket, category, action, n in rows:
        entry = buckets.setdefault(
            _as_moment(bucket, period),
            {"count": 0, "created": 0, "updated": 0, "categories": {}},
        )
        entry["count"] += n
        entry["created" if action == MemoryEvent.Action.CREATE else "updated"] += n
        entry["categories"][category] = entry["categories"].get(category, 0) + n
    timeline = [
        {
            "period": moment.strftime(_LABELS[period]),
            "start": moment.isoformat().replace("+00:00", "Z"),
            **entry,
        }
        for moment, entry in sorted(buckets.items())
    ]
    return {"timeline": timeline, "total_periods": len(timeline)}


# On SQLite the period is cut from the stored text (UTC, "YYYY-MM-DD HH:MM:SS…") by its own
# C functions: Django's Trunc there calls back into Python for every row.
_SQLITE_PERIODS = {
    "hour": ("substr(%(expressions)s, 1, 13)", "%Y-%m-%d %H"),
    "day": ("substr(%(expressions)s, 1, 10)", "%Y-%m-%d"),
    "week": ("date(%(expressions)s, '-6 days', 'weekday 1')", "%Y-%m-%d"),
    "month": ("substr(%(expressions)s, 1, 7)", "%Y-%m"),
    "year": ("substr(%(expressions)s, 1, 4)", "%Y"),
}


def _period_of_at(period: str) -> Func:
    """The start of the UTC period holding an event's `at`, as the database computes it."""
    if connection.vendor == "sqlite":
        return Func(F("at"), template=_SQLITE_PERIODS[period][0], output_field=CharField())
    return Trunc("at", period, tzinfo=UTC)


def _as_moment(bucket: datetime | str, period: str) -> datetime:
    if isinstance(bucket, str):
        return datetime.strptime(bucket, _SQLITE_PERIODS[period][1]).replace(tzinfo=UTC)
    return bucket.astimezone(UTC)


def period_start(moment: datetime, period: str, *, back: int = 0) -> datetime:
    """The start (UTC) of the period holding `moment`, or of the one `back` periods before
    (the first moment a datetime holds, when that is earlier)."""
    try:
        return _period_start(moment.astimezone(UTC), period, back)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def _period_start(at: datetime, period: str, back: int) -> datetime:
    if period == "hour":
        return at.replace(minute=0, second=0, microsecond=0) - timedelta(hours=back)
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day - timedelta(days=back)
    if period == "week":
        return day - timedelta(days=day.weekday() + 7 * back)
    if period == "month":
        months = day.year * 12 + day.month - 1 - back
        return _first_day(max(months // 12, 1), months % 12 + 1)
    return _first_day(max(day.year - back, 1), 1)


def _first_day(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)
