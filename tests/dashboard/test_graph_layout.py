"""dashboard/graph_layout.py: where the Graph page draws each node."""

from __future__ import annotations

from itertools import combinations
from math import dist

from dashboard.graph_layout import HEIGHT, MARGIN, WIDTH, graph_layout, layout_of_graph


def two_clusters() -> tuple[list[str], list[tuple[str, str, float]]]:
    """Two rings of six nodes each, linked inside a ring and by one edge between them, and
    three nodes linked to nothing."""
    nodes = [f"a{i}" for i in range(6)] + [f"b{i}" for i in range(6)] + ["x", "y", "z"]
    edges = [(f"a{i}", f"a{(i + 1) % 6}", 1.0) for i in range(6)]
    edges += [(f"b{i}", f"b{(i + 1) % 6}", 2.0) for i in range(6)]
    edges.append(("a0", "b0", 1.0))
    return nodes, edges


def test_the_same_graph_lands_in_the_same_places():
    nodes, edges = two_clusters()
    assert graph_layout(nodes, edges) == graph_layout(list(nodes), list(edges))


def test_every_node_lies_inside_the_canvas_less_its_margins():
    nodes, edges = two_clusters()
    places = graph_layout(nodes, edges)
    assert set(places) == set(nodes)
    for x, y in places.values():
        assert MARGIN <= x <= WIDTH - MARGIN and MARGIN <= y <= HEIGHT - MARGIN


def test_linked_nodes_lie_closer_than_unlinked_ones_on_average():
    nodes, edges = two_clusters()
    places = graph_layout(nodes, edges)
    linked = {frozenset((a, b)) for a, b, _ in edges}
    near = [dist(places[a], places[b]) for a, b, _ in edges]
    far = [
        dist(places[a], places[b])
        for a, b in combinations(nodes, 2)
        if frozenset((a, b)) not in linked
    ]
    assert sum(near) / len(near) < 0.6 * sum(far) / len(far)


def test_no_node_one_node_and_unknown_ends():
    assert graph_layout([]) == {}
    assert graph_layout(["only"]) == {"only": (WIDTH / 2, HEIGHT / 2)}
    places = graph_layout(["a", "b"], [("a", "gone", 1.0), ("a", "a", 1.0)])
    assert set(places) == {"a", "b"} and places["a"] != places["b"]


def test_a_memory_graph_is_laid_out_by_its_ids():
    graph = {
        "nodes": [{"id": "m1"}, {"id": "m2"}, {"id": "m3"}],
        "edges": [{"source": "m1", "target": "m2", "weight": 0.9}],
    }
    assert set(layout_of_graph(graph)) == {"m1", "m2", "m3"}
