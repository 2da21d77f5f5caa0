"""GET /memory/graph and GET /memory/timeline (../shared/API.md section 9.6), and the public
client's visualization calls against a live server."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from memories.models import Memory
from memories.pictures import EDGE_KINDS, MEANING_COSINE, period_start
from memories.services import memory_delete
from tests.api.memory_helpers import assert_invalid, assert_isolated
from tests.factories import AGENT, embed, many_memories, remember, share_make
from tests.fake_embedder import fake_embedder  # noqa: F401

pytestmark = pytest.mark.django_db

GRAPH = "/memory/graph"
TIMELINE = "/memory/timeline"
NODE_FIELDS = {"id", "key", "category", "priority", "verified", "confidence", "tags"}


@pytest.fixture
def small(mind) -> dict[str, Memory]:
    """a and b share two tags, c shares one with each of them, d shares none."""
    return {
        "a": remember(mind, "fact_a", "A", tags=["x", "y"], priority="high"),
        "b": remember(mind, "fact_b", "B", tags=["y", "x"]),
        "c": remember(mind, "note_c", "C", category="note", tags=["y"], confidence=0.3),
        "d": remember(mind, "note_d", "D", category="note", tags=["z"]),
    }


def graph(client, **params):
    response = client.get(GRAPH, params)
    assert response.status_code == 200, response.content
    return response.json()


def edges_of(body, small) -> dict[frozenset[str], tuple[list[str], float]]:
    """{frozenset of the two memories' names: (shared_tags, weight)}."""
    name = {m.pk: n for n, m in small.items()}
    return {
        frozenset((name[e["source"]], name[e["target"]])): (e["shared_tags"], e["weight"])
        for e in body["edges"]
    }


# --- The graph -------------------------------------------------------------------------------


def test_graph_answers_the_clients_shape(agent, small):
    body = graph(agent)
    assert set(body) == {"nodes", "edges", "stats"}
    assert all(set(node) == NODE_FIELDS for node in body["nodes"])
    a = next(n for n in body["nodes"] if n["key"] == "fact_a")
    assert a == {
        "id": small["a"].pk,
        "key": "fact_a",
        "category": "fact",
        "priority": "high",
        "verified": False,
        "confidence": small["a"].confidence,
        "tags": ["x", "y"],
    }
    assert all({"source", "target", "shared_tags", "weight"} <= set(e) for e in body["edges"])
    assert {"nodes", "edges", "density", "connected_components"} <= set(body["stats"])


def test_edges_link_memories_sharing_tags_weighted_by_how_many(agent, small):
    body = graph(agent)
    assert edges_of(body, small) == {
        frozenset("ab"): (["x", "y"], 2),
        frozenset("ac"): (["y"], 1),
        frozenset("bc"): (["y"], 1),
    }
    assert body["edges"][0]["weight"] == 2  # heaviest first
    assert body["stats"] == {
        "nodes": 4,
        "edges": 3,
        "edges_left_out": 0,
        "density": 0.5,  # 3 of 6 possible pairs
        "connected_components": 2,  # {a, b, c} and d alone
    }


def test_min_shared_tags_keeps_only_edges_sharing_that_many(agent, small):
    body = graph(agent, min_shared_tags=2)
    assert edges_of(body, small) == {frozenset("ab"): (["x", "y"], 2)}
    assert body["stats"]["connected_components"] == 3
    assert graph(agent, min_shared_tags=3)["edges"] == []


def test_without_edges_every_node_stands_alone(agent, small):
    body = graph(agent, include_edges="false")
    assert body["edges"] == [] and len(body["nodes"]) == 4
    assert body["stats"]["connected_components"] == 4 and body["stats"]["density"] == 0


def test_category_tag_and_min_confidence_narrow_the_nodes(agent, small):
    def keys(**params):
        return sorted(n["key"] for n in graph(agent, **params)["nodes"])

    assert keys(category="note") == ["note_c", "note_d"]
    assert keys(tag="x") == ["fact_a", "fact_b"]
    assert keys(tag="Y") == ["fact_a", "fact_b", "note_c"]  # tags are normalised
    assert keys(min_confidence=0.5) == ["fact_a", "fact_b", "note_d"]
    # Edges only between the chosen nodes.
    assert edges_of(graph(agent, category="note"), small) == {}


def test_verified_keeps_only_the_verified_or_only_the_unverified(agent, small):
    Memory.objects.filter(pk__in=[small["a"].pk, small["c"].pk]).update(verified=True)

    def keys(**params):
        return sorted(n["key"] for n in graph(agent, **params)["nodes"])

    assert keys(verified="true") == ["fact_a", "note_c"]
    assert keys(verified="false") == ["fact_b", "note_d"]
    assert keys(verified="") == ["fact_a", "fact_b", "note_c", "note_d"]
    assert all(n["verified"] for n in graph(agent, verified="yes")["nodes"])
    assert edges_of(graph(agent, verified="true"), small) == {frozenset("ac"): (["y"], 1)}


def test_max_nodes_keeps_the_highest_priority_then_the_most_recent(agent, mind):
    many_memories(mind, 12, tags=["t"])  # the newest last
    critical = remember(mind, "fact_old_critical", "C", priority="critical")
    Memory.objects.filter(pk=critical.pk).update(updated_at=timezone.now() - timedelta(days=400))
    body = graph(agent, max_nodes=10)
    keys = [n["key"] for n in body["nodes"]]
    assert keys == ["fact_old_critical", *[f"note_{i:04d}" for i in range(11, 2, -1)]]
    assert body["stats"]["nodes"] == 10
    # Nine nodes carry "t": every pair of them linked.
    assert body["stats"]["edges"] == 9 * 8 // 2


def test_expired_deleted_and_superseded_memories_are_not_nodes(agent, mind, small):
    remember(mind, "fact_gone", "G", tags=["x"], expires_at=timezone.now() - timedelta(days=1))
    deleted = remember(mind, "fact_deleted", "D", tags=["x"])
    memory_delete(memory=deleted, actor=AGENT)
    old = remember(mind, "fact_old", "O", tags=["x"])
    Memory.objects.filter(pk=old.pk).update(superseded_by=small["a"])
    assert sorted(n["key"] for n in graph(agent)["nodes"]) == [
        "fact_a",
        "fact_b",
        "note_c",
        "note_d",
    ]


def test_an_empty_mind_has_an_empty_graph(agent):
    assert graph(agent) == {
        "nodes": [],
        "edges": [],
        "stats": {
            "nodes": 0,
            "edges": 0,
            "edges_left_out": 0,
            "density": 0.0,
            "connected_components": 0,
        },
    }


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("max_nodes", "9"),
        ("max_nodes", "1001"),
        ("max_nodes", "many"),
        ("min_shared_tags", "0"),
        ("min_shared_tags", "11"),
        ("min_confidence", "1.5"),
        ("min_confidence", "nan"),
        ("include_edges", "perhaps"),
        ("verified", "perhaps"),
        ("category", "dream"),
        ("edges", "colour"),
    ],
)
def test_bad_graph_parameters_are_400_naming_them(agent, param, value):
    assert_invalid(agent.get(GRAPH, {param: value}), param)


@pytest.mark.parametrize("edges", [e for e in EDGE_KINDS if e != "tags"])
def test_edges_by_meaning_with_embeddings_off_is_400_saying_so(agent, small, settings, edges):
    settings.SYNAPSE_EMBEDDINGS = "off"
    body = assert_invalid(agent.get(GRAPH, {"edges": edges}), "edges")
    assert "off" in body["fields"]["edges"][0]
    # Without edges nothing needs the vectors.
    assert agent.get(GRAPH, {"edges": edges, "include_edges": "false"}).status_code == 200


@pytest.mark.usefixtures("fake_embedder")
def test_edges_by_meaning_link_close_memories_weighted_by_cosine(agent, mind):
    dog = remember(mind, "pet_dog", "dog", tags=["home"])
    cat = remember(mind, "pet_cat", "cat", tags=["home"])
    truck = remember(mind, "car_truck", "truck", tags=["road"])
    embed(dog, cat, truck)

    meaning = graph(agent, edges="meaning")["edges"]
    assert [(sorted([e["source"], e["target"]]), e["kind"]) for e in meaning] == [
        (sorted([dog.pk, cat.pk]), "meaning")
    ]
    assert MEANING_COSINE <= meaning[0]["weight"] <= 1.0 and meaning[0]["shared_tags"] == []

    both = graph(agent, edges="both")["edges"]
    assert sorted(e["kind"] for e in both) == ["meaning", "tags"]
    assert graph(agent)["edges"][0]["kind"] == "tags"


# --- The timeline ----------------------------------------------------------------------------


@pytest.fixture
def monday():
    """A Monday a few weeks ago, midnight UTC."""
    return period_start(timezone.now() - timedelta(days=30), "week")


@pytest.fixture
def written(mind, monday):
    """Monday: two facts stored, one of them rewritten; Tuesday: a note; a month on, a fact."""
    remember(mind, "fact_one", "one", now=monday + timedelta(hours=1))
    remember(mind, "fact_two", "two", now=monday + timedelta(hours=23, minutes=30))
    remember(mind, "fact_one", "one again", now=monday + timedelta(hours=2))
    remember(mind, "note_three", "three", category="note", now=monday + timedelta(days=1))
    remember(mind, "fact_four", "four", now=monday + timedelta(days=28))


def timeline(client, **params):
    response = client.get(TIMELINE, params)
    assert response.status_code == 200, response.content
    return response.json()


def test_timeline_counts_writes_per_day_oldest_first(agent, written, monday):
    body = timeline(agent)
    day = monday.strftime("%Y-%m-%d")
    assert body["total_periods"] == 3 == len(body["timeline"])
    first, second, third = body["timeline"]
    assert first == {
        "period": day,
        "start": f"{day}T00:00:00Z",
        "count": 3,
        "created": 2,
        "updated": 1,
        "categories": {"fact": 3},
    }
    assert (second["period"], second["count"], second["categories"]) == (
        (monday + timedelta(days=1)).strftime("%Y-%m-%d"),
        1,
        {"note": 1},
    )
    assert third["period"] == (monday + timedelta(days=28)).strftime("%Y-%m-%d")


def test_timeline_by_week_hour_month_and_year(agent, written, monday):
    weeks = timeline(agent, period="week")["timeline"]
    assert [(w["period"], w["count"]) for w in weeks][:1] == [(monday.strftime("%Y-%m-%d"), 4)]
    # The last hours up to `until`: Monday's and Tuesday's writes.
    hours = timeline(agent, period="hour", until=(monday + timedelta(days=2)).isoformat())
    assert [(h["period"][-7:], h["count"]) for h in hours["timeline"]] == [
        ("T01:00Z", 1),
        ("T02:00Z", 1),
        ("T23:00Z", 1),
        ("T00:00Z", 1),
    ]
    months = timeline(agent, period="month")["timeline"]
    assert sum(m["count"] for m in months) == 5
    assert all(len(m["period"]) == 7 for m in months)
    last_year = timeline(agent, period="year")["timeline"][-1]
    assert last_year["period"] == str((monday + timedelta(days=28)).year)


def test_timeline_since_and_until_bound_it(agent, written, monday):
    body = timeline(agent, since=(monday + timedelta(hours=12)).isoformat())
    assert [p["count"] for p in body["timeline"]] == [1, 1, 1]
    body = timeline(agent, until=(monday + timedelta(days=2)).isoformat())
    assert [p["count"] for p in body["timeline"]] == [3, 1]


def test_deleted_memories_still_count_where_they_were_written(agent, mind, written):
    memory_delete(memory=Memory.objects.get(key="fact_four"), actor=AGENT)
    assert sum(p["count"] for p in timeline(agent)["timeline"]) == 5


@pytest.mark.parametrize(
    ("param", "value"),
    [("period", "fortnight"), ("since", "last tuesday"), ("until", "soon")],
)
def test_bad_timeline_parameters_are_400_naming_them(agent, param, value):
    assert_invalid(agent.get(TIMELINE, {param: value}), param)


# --- Who may see them ------------------------------------------------------------------------


@pytest.mark.parametrize("path", [GRAPH, TIMELINE])
def test_another_mind_sees_nothing_of_the_owners(
    path, small, mind, stranger_mind, stranger_agent, other_human
):
    remember(stranger_mind.mind, "their_fact", "theirs", tags=["x", "y"])
    assert_isolated(path, mind=mind, stranger_agent=stranger_agent, other_human=other_human)
    body = stranger_agent.get(path).json()
    assert not any(m.pk in str(body) for m in small.values())
    assert other_human.get(path, {"mind": mind.pk}).status_code == 404


@pytest.mark.parametrize("path", [GRAPH, TIMELINE])
def test_a_person_the_mind_is_shared_with_to_read_may_read_them(
    path, small, mind, other_user, other_human
):
    share_make(mind, other_user, acl="read")
    response = other_human.get(path, {"mind": mind.pk})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (len(body["nodes"]) if path == GRAPH else body["total_periods"]) >= 1


def test_the_owner_in_person_may_read_them(human, small):
    assert len(graph(human)["nodes"]) == 4
    assert timeline(human)["total_periods"] == 1


# --- The public client -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_sdk_visualization_graph_tags_and_timeline(live_server, owner_mind, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    mind = owner_mind.mind
    remember(mind, "fact_a", "A", tags=["x", "y"])
    remember(mind, "fact_b", "B", tags=["x", "y"])
    remember(mind, "note_c", "C", category="note", tags=["y"])
    sdk = Synapse(base_url=live_server.url, mind_key=owner_mind.key, max_retries=0)

    drawn = sdk.visualization.graph(max_nodes=10, min_shared_tags=2)
    assert len(drawn["nodes"]) == 3
    assert [(e["shared_tags"], e["weight"]) for e in drawn["edges"]] == [(["x", "y"], 2)]
    assert [n["key"] for n in sdk.visualization.graph(category="note", tag="y")["nodes"]] == [
        "note_c"
    ]
    assert sdk.visualization.graph(include_edges=False)["edges"] == []
    # `verified` has no argument of its own in the client: its generic request sends it.
    assert len(sdk.request("GET", "/memory/graph?verified=false")["nodes"]) == 3
    assert sdk.request("GET", "/memory/graph?verified=true")["nodes"] == []

    tags = sdk.visualization.tags()
    assert [(t["tag"], t["count"]) for t in tags["tags"]] == [("y", 3), ("x", 2)]

    days = sdk.visualization.timeline()
    assert days["total_periods"] == 1 and days["timeline"][0]["count"] == 3
    assert sdk.visualization.timeline(period="month")["timeline"][0]["categories"] == {
        "fact": 2,
        "note": 1,
    }
    with pytest.raises(SynapseError) as refused:
        sdk.visualization.graph(max_nodes=5)
    assert refused.value.status == 400 and "max_nodes" in refused.value.body
