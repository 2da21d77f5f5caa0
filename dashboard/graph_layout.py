"""Where the Graph page draws each node: a force-directed layout (Fruchterman and Reingold's)
of a mind's graph, worked out on the server so the page is a plain SVG.

Deterministic: the same nodes and edges always land in the same places (a fixed seed, a
fixed number of steps), so a page drawn twice looks the same and tests can hold it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

WIDTH = 960
HEIGHT = 600
MARGIN = 40
ITERATIONS = 120
SEED = 7
# A pull towards the middle: without it groups with nothing between them drift apart, and
# once the whole is scaled to the canvas each group shrinks to a dot.
GRAVITY = 8.0


def graph_layout(
    nodes: Sequence[str],
    edges: Iterable[tuple[str, str, float]] = (),
    *,
    width: int = WIDTH,
    height: int = HEIGHT,
    margin: int = MARGIN,
    iterations: int = ITERATIONS,
) -> dict[str, tuple[float, float]]:
    """{node: (x, y)} inside the canvas less its margins, for `nodes` linked by `edges`
    (source, target, weight; a heavier edge pulls harder). Edges naming an unknown node are
    left out."""
    n = len(nodes)
    if n == 0:
        return {}
    left, top = margin, margin
    span_x, span_y = width - 2 * margin, height - 2 * margin
    if n == 1:
        return {nodes[0]: (left + span_x / 2, top + span_y / 2)}
    index = {node: i for i, node in enumerate(nodes)}
    weights = np.zeros((n, n))
    for source, target, weight in edges:
        a, b = index.get(source), index.get(target)
        if a is None or b is None or a == b:
            continue
        weights[a, b] = weights[b, a] = max(weights[a, b], float(weight))
    if weights.any():
        weights /= weights.max()  # a cosine and a count of tags pull alike

    # The unit square, then scaled: the forces are the textbook ones over an area of 1.
    rng = np.random.default_rng(SEED)
    position = rng.random((n, 2))
    k = np.sqrt(1.0 / n)
    temperature = 0.1
    cooling = temperature / (iterations + 1)
    diagonal = np.eye(n, dtype=bool)
    for _ in range(iterations):
        # x and y apart: two (n, n) matrices a step rather than one (n, n, 2).
        dx = position[:, 0, None] - position[None, :, 0]
        dy = position[:, 1, None] - position[None, :, 1]
        squared = np.maximum(dx * dx + dy * dy, 1e-4)  # two nodes on one spot still part
        # Along the line between two nodes: repulsion k²/d, attraction (weighted) d²/k.
        pull = k * k / squared - weights * np.sqrt(squared) / k
        pull[diagonal] = 0.0
        force = np.stack(((pull * dx).sum(axis=1), (pull * dy).sum(axis=1)), axis=1)
        force += GRAVITY * (0.5 - position)
        length = np.maximum(np.linalg.norm(force, axis=1), 1e-9)
        position += force / length[:, None] * np.minimum(length, temperature)[:, None]
        temperature -= cooling

    low, high = position.min(axis=0), position.max(axis=0)
    extent = np.where(high - low > 1e-9, high - low, 1.0)
    scaled = (position - low) / extent
    xs = left + scaled[:, 0] * span_x
    ys = top + scaled[:, 1] * span_y
    return {node: (round(float(xs[i]), 1), round(float(ys[i]), 1)) for i, node in enumerate(nodes)}


def layout_of_graph(graph: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """graph_layout of a memories.pictures.memory_graph answer."""
    return graph_layout(
        [node["id"] for node in graph["nodes"]],
        ((edge["source"], edge["target"], edge["weight"]) for edge in graph["edges"]),
    )
