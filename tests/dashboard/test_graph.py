"""The Graph tab: a mind's memories as an SVG of nodes linked by shared tags, its filters, its
table for screen readers, and who may see it."""

from __future__ import annotations

import re

import pytest

from memories.models import Memory
from tests.dashboard.conftest import agent_store
from tests.factories import share_make

pytestmark = pytest.mark.django_db

NODE = re.compile(r'<a href="[^"]+" class="graph-node"')


def url(mind) -> str:
    return f"/dashboard/minds/{mind.pk}/graph/"


@pytest.fixture
def small(mind) -> dict[str, Memory]:
    """a and b share two tags, c one with each; d shares none and is verified."""
    memories = {
        "a": agent_store(mind, key="fact_a", tags=["x", "y"], priority="critical"),
        "b": agent_store(mind, key="fact_b", tags=["x", "y"]),
        "c": agent_store(mind, key="note_c", category="note", tags=["y"]),
        "d": agent_store(mind, key="note_d", category="note", tags=["z"], priority="low"),
    }
    Memory.objects.filter(pk=memories["d"].pk).update(verified=True)
    return memories


def page(web, mind, **params):
    response = web.get(url(mind), params)
    assert response.status_code == 200
    return response


def keys(response) -> list[str]:
    return sorted(node.key for node in response.context["nodes"])


def test_the_graph_draws_every_memory_as_a_link_to_it(web, mind, small):
    response = page(web, mind)
    html = response.content.decode()
    assert keys(response) == ["fact_a", "fact_b", "note_c", "note_d"]
    assert len(NODE.findall(html)) == 4
    for memory in small.values():
        assert f'href="/dashboard/minds/{mind.pk}/memories/{memory.pk}/"' in html
    assert "<title>fact_a · fact · critical priority · unverified</title>" in html
    assert html.count('class="graph-edge"') == 3
    assert "4 memories, 3 links, 2 groups of linked memories." in html
    assert 'viewBox="0 0 960 600"' in html
    assert "js/graph.js" in html


def test_nodes_are_coloured_by_category_and_sized_by_priority(web, mind, small):
    nodes = {node.key: node for node in page(web, mind).context["nodes"]}
    assert nodes["fact_a"].r > nodes["fact_b"].r > nodes["note_d"].r
    html = page(web, mind).content.decode()
    assert "chart-cat-fact" in html and "chart-cat-note" in html
    # The legend names the categories drawn, and the shapes.
    assert "circle: verified" in html and "dashed diamond: unverified" in html


def test_unverified_memories_are_diamonds_and_verified_ones_circles(web, mind, small):
    html = page(web, mind).content.decode()
    assert html.count('<polygon points="') == 3 + 1  # three nodes and the legend's
    assert html.count('<circle r="') == 1 + 1  # note_d and the legend's
    assert 'class="graph-shape graph-unverified chart-cat-fact"' in html


def test_heavier_links_are_drawn_thicker(web, mind, small):
    edges = page(web, mind).context["edges"]
    widths = {frozenset((e.source, e.target)): e.width for e in edges}
    a, b, c = small["a"].pk, small["b"].pk, small["c"].pk
    assert widths[frozenset((a, b))] > widths[frozenset((a, c))]


def test_the_graph_as_a_table_lists_every_node(web, mind, small):
    html = page(web, mind).content.decode()
    table = html[html.index("<summary>Graph as a table</summary>") :]
    for memory in small.values():
        assert f"<code>{memory.key}</code>" in table
    row = re.search(r"<code>fact_a</code></a></th>(.*?)</tr>", table)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells == ["fact", "critical", "no", "2"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"category": "note"}, ["note_c", "note_d"]),
        ({"tag": "X"}, ["fact_a", "fact_b"]),
        ({"verified": "yes"}, ["note_d"]),
        ({"verified": "no"}, ["fact_a", "fact_b", "note_c"]),
        ({"max_nodes": "10"}, ["fact_a", "fact_b", "note_c", "note_d"]),
    ],
)
def test_filters_narrow_the_nodes(web, mind, small, params, expected):
    assert keys(page(web, mind, **params)) == expected


def test_min_shared_tags_keeps_the_links_sharing_that_many(web, mind, small):
    response = page(web, mind, min_shared_tags="2")
    assert len(response.context["edges"]) == 1
    assert "4 memories, 1 link, 3 groups" in response.content.decode()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_nodes", "9"),
        ("max_nodes", "301"),
        ("max_nodes", "many"),
        ("min_shared_tags", "0"),
        ("min_shared_tags", "11"),
        ("category", "dream"),
        ("verified", "perhaps"),
        ("tag", "a\x00b"),
        ("tag", "t" * 200),
    ],
)
def test_a_bad_filter_is_a_form_error_and_the_graph_still_draws(web, mind, small, field, value):
    response = page(web, mind, **{field: value})
    assert field in response.context["form"].errors
    assert 'class="field-error"' in response.content.decode()
    assert keys(response) == ["fact_a", "fact_b", "note_c", "note_d"]


def test_an_empty_mind_says_so(web, mind):
    response = page(web, mind)
    html = response.content.decode()
    assert "No memories to draw yet" in html and "<svg viewBox" not in html
    assert "0 memories, 0 links, 0 groups" in html
    filtered = page(web, mind, category="note").content.decode()
    assert "No memory matches these filters." in filtered


def test_the_graph_tab_is_in_the_header_and_marked_on_its_page(web, mind, small):
    html = page(web, mind).content.decode()
    assert f'<a href="{url(mind)}" aria-current="page">Graph</a>' in html
    overview = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert f'<a href="{url(mind)}">Graph</a>' in overview


def test_another_persons_mind_is_not_found(other_web, mind, small):
    response = other_web.get(url(mind))
    assert response.status_code == 404
    assert b"fact_a" not in response.content


def test_someone_the_mind_is_shared_with_to_read_sees_it(other_web, other_user, mind, small):
    share_make(mind, other_user, "read")
    response = other_web.get(url(mind))
    assert response.status_code == 200
    assert keys(response) == ["fact_a", "fact_b", "note_c", "note_d"]


def test_signed_out_people_are_sent_to_sign_in(client, mind):
    response = client.get(url(mind))
    assert response.status_code == 302 and "/login" in response["Location"]


def test_the_page_has_no_inline_script_or_style(web, mind, small):
    response = page(web, mind)
    html = response.content.decode()
    assert "<script>" not in html and " style=" not in html and " on" + "click=" not in html
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_only_the_heaviest_links_are_drawn_past_the_pages_limit(web, mind, small, monkeypatch):
    monkeypatch.setattr("dashboard.views.graph.EDGES_DRAWN", 1)
    response = page(web, mind)
    html = response.content.decode()
    assert html.count('class="graph-edge"') == 1
    assert "4 memories, 3 links (the 1 heaviest drawn), 2 groups" in html
    (drawn,) = response.context["edges"]
    assert {drawn.source, drawn.target} == {small["a"].pk, small["b"].pk}
    # A node's links count them all.
    assert {n.key: n.links for n in response.context["nodes"]}["note_c"] == 2


def test_tags_and_keys_are_escaped_in_the_picture(web, mind):
    agent_store(mind, key="fact_one", tags=['<b>"x"</b>'])
    agent_store(mind, key="fact_two", tags=['<b>"x"</b>'])
    html = page(web, mind).content.decode()
    assert "Shared tags: &lt;b&gt;&quot;x&quot;&lt;/b&gt;</title>" in html
    assert "<b>" not in html
