"""A mind's Graph page: its memories as nodes linked by shared tags (memories.pictures draws
the graph, dashboard.graph_layout places it), as an SVG and as a table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from dashboard.forms import GraphFilterForm
from dashboard.graph_layout import HEIGHT, WIDTH, layout_of_graph
from dashboard.views.common import mind_at
from dashboard.views.memories import TAG_CHOICES
from memories.models import Category
from memories.pictures import memory_graph
from memories.selectors import tags_most_used
from minds.access import Level

# A node's radius by priority: the more a wrong answer would cost, the larger.
RADIUS = {"low": 6.0, "normal": 8.0, "high": 11.0, "critical": 14.0}
# Edge widths: the lightest edge drawn this wide, the heaviest EDGE_WIDTH[1].
EDGE_WIDTH = (1.0, 4.0)
# The page draws at most this many links, the heaviest (the graph's order): past it the
# lines are a grey mass that only makes the page slow to send and to draw.
EDGES_DRAWN = 2_000


@dataclass(frozen=True)
class Node:
    id: str
    key: str
    category: str
    priority: str
    verified: bool
    x: float
    y: float
    r: float
    links: int

    @property
    def diamond(self) -> str:
        """The points of the diamond an unverified node is drawn as, around its own origin
        (the node is moved into place as a whole): a little larger than the circle of the
        same priority, so the two cover about the same area."""
        return diamond_points(self.r)


def diamond_points(r: float) -> str:
    d = round(r * 1.25, 1)
    return f"0,{-d} {d},0 0,{d} {-d},0"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    x1: float
    y1: float
    x2: float
    y2: float
    width: float
    shared_tags: list[str]


def drawn_graph(graph: dict[str, Any]) -> tuple[list[Node], list[Edge]]:
    """The nodes and edges of a memory_graph answer with the places and sizes they are drawn
    at: every node, and the EDGES_DRAWN heaviest edges (every edge counts in a node's
    `links` and in where it is placed)."""
    places = layout_of_graph(graph)
    links: Counter[str] = Counter()
    for edge in graph["edges"]:
        links[edge["source"]] += 1
        links[edge["target"]] += 1
    nodes = [
        Node(
            id=node["id"],
            key=node["key"],
            category=node["category"],
            priority=node["priority"],
            verified=node["verified"],
            x=places[node["id"]][0],
            y=places[node["id"]][1],
            r=RADIUS[node["priority"]],
            links=links[node["id"]],
        )
        for node in graph["nodes"]
    ]
    heaviest = max((edge["weight"] for edge in graph["edges"]), default=1) or 1
    thin, thick = EDGE_WIDTH
    edges = [
        Edge(
            source=edge["source"],
            target=edge["target"],
            x1=places[edge["source"]][0],
            y1=places[edge["source"]][1],
            x2=places[edge["target"]][0],
            y2=places[edge["target"]][1],
            width=round(thin + (thick - thin) * (edge["weight"] / heaviest), 2),
            shared_tags=edge["shared_tags"],
        )
        for edge in graph["edges"][:EDGES_DRAWN]
    ]
    return nodes, edges


def edge_lines(edges: list[Edge]) -> SafeString:
    """The edges' SVG lines, escaped as a template would: written here, as a loop of
    thousands in the template language is what would make the page slow."""
    return format_html_join(
        "\n",
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke-width="{}" class="graph-edge" '
        'data-source="{}" data-target="{}"><title>Shared tags: {}</title></line>',
        (
            (e.x1, e.y1, e.x2, e.y2, e.width, e.source, e.target, ", ".join(e.shared_tags))
            for e in edges
        ),
    )


@login_required
def mind_graph(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.READ)
    form = GraphFilterForm(request.GET)
    form.is_valid()  # invalid values are shown as errors and ignored
    answer = memory_graph(mind=mind, query=form.query())
    nodes, edges = drawn_graph(answer)
    shown = {node.category for node in nodes}
    return render(
        request,
        "dashboard/graph.html",
        {
            "mind": mind,
            "form": form,
            "filtered": any(form.cleaned_data.values()),
            "nodes": nodes,
            "edges": edges,
            "edge_lines": edge_lines(edges),
            "stats": answer["stats"],
            "links": answer["stats"]["edges"] + answer["stats"]["edges_left_out"],
            "width": WIDTH,
            "height": HEIGHT,
            "categories": [c for c in Category.values if c in shown],
            "radii": list(RADIUS.items()),
            "legend_diamond": diamond_points(RADIUS["normal"]),
            "tag_choices": tags_most_used(mind=mind, limit=TAG_CHOICES),
        },
    )
