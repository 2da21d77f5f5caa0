"""Whether a recall `about` a question holds what answers it: the keys a budgeted recall shows.

    .venv/bin/python bench/recall_about.py [--budget 1000] [--database postgres] [--verbose]

`recall_keys(mind, about, budget)` is the reusable part: the keys of the memories that a
recall about `about` shows within `budget` tokens, from memories.recall itself (the code
behind GET /memory/recall?about=…&budget=…, called in this process, no HTTP). Other
evaluations import it (Django set up first, e.g. inside common.BenchDatabase) to ask whether
a question's evidence is inside the recall an agent would read at the start of a task.

Run as a script, it loads bench/search_eval_data.json into a fresh, migrated database (as
search_eval.py does, the same texts reversed in a second mind that must never show up),
gives every memory its vector when embeddings are on, and prints for each question set the
share of questions with one of their expected keys inside the recall, asked two ways:

- about:    a recall about the question, within the budget (hybrid ranking while
            embeddings are on, keyword otherwise: the mode column says which ran);
- priority: the same budget without `about`, priority order: what an agent reads when it
            does not say what the task is.

Nothing is asserted; the shares are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

if TYPE_CHECKING:
    from minds.models import Mind

RECALL_BUDGET = 1000  # tokens: a modest share of a model's context at the start of a task


def recall_keys(mind: Mind, about: str, budget: int = RECALL_BUDGET) -> set[str]:
    """The keys of the memories a recall of `mind` about `about` shows within `budget`
    tokens (critical memories included, whatever they are about)."""
    from memories.recall import recall_render_json, recall_selection

    answer = recall_render_json(selection=recall_selection(mind=mind, about=about), budget=budget)
    return {memory["key"] for memory in answer["memories"]}


def priority_keys(mind: Mind, budget: int = RECALL_BUDGET) -> set[str]:
    """The keys a recall of `mind` without `about` shows within `budget` tokens."""
    from memories.recall import recall_render_json, recall_selection

    answer = recall_render_json(selection=recall_selection(mind=mind), budget=budget)
    return {memory["key"] for memory in answer["memories"]}


def recall_mode(mind: Mind, about: str) -> str:
    """How a recall about `about` ranked: hybrid, or keyword (embeddings off or failing)."""
    from memories.recall import recall_render_json, recall_selection

    answer = recall_render_json(selection=recall_selection(mind=mind, about=about), budget=1)
    return str(answer["mode"])


def share_inside(
    questions: list[dict[str, Any]], shown: Callable[[str], set[str]], verbose: bool = False
) -> float:
    """The share of `questions` with an expected key among `shown(question)`."""
    inside = 0
    for item in questions:
        if set(item["expected"]) & shown(item["q"]):
            inside += 1
        elif verbose:
            print(f"    outside: {item['q']!r} wants {item['expected']}")
    return inside / max(len(questions), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=RECALL_BUDGET, help="tokens per recall")
    parser.add_argument("--database", choices=common.DATABASES, default="sqlite")
    parser.add_argument("--verbose", action="store_true", help="list the questions left outside")
    args = parser.parse_args()

    from bench.search_eval import DATA, embed_mind, load_embedder, memory_minds, question_sets

    data = json.loads(DATA.read_text())
    with common.BenchDatabase(database=args.database):
        mind, other = memory_minds(data["memories"])
        embedder, unavailable = load_embedder()
        if embedder is not None:
            for each in (mind, other):
                embed_mind(embedder, mind=each)

        sets = question_sets(data)
        mode = recall_mode(mind, sets[0][1][0]["q"])
        by_priority = priority_keys(mind, args.budget)
        print(
            f"{len(data['memories'])} memories; a {args.budget:,}-token recall without about "
            f"shows {len(by_priority)} of them"
        )
        print(f"{'recall':18}{'mode':>9}" + "".join(f"{name:>16}" for name, _ in sets))
        rows = [
            ("about the question", mode, lambda q: recall_keys(mind, q, args.budget)),
            ("priority order", "-", lambda q: by_priority),
        ]
        for name, ran, shown in rows:
            shares = [share_inside(questions, shown, args.verbose) for _, questions in sets]
            print(f"{name:18}{ran:>9}" + "".join(f"{share:16.3f}" for share in shares))
        if embedder is None:
            print(f"by meaning: {unavailable}")


if __name__ == "__main__":
    main()
