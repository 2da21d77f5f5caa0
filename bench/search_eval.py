"""Search quality on a realistic memory set: hit@3 and MRR@10 for our search and baselines.

    .venv/bin/python bench/search_eval.py [--verbose] [--database postgres]

Loads bench/search_eval_data.json (one person's memories across all eight categories, and
questions an agent would ask, each with the key(s) that answer it) into a fresh, migrated
SQLite database in a temp directory, then asks every question three ways in the same run:

- ours:        memory_search(), the code behind GET /memory/search;
- all-words:   FTS5 with every word of the question required (implicit AND, each word
               quoted), ranked by plain bm25: what a naive "just MATCH the input" gives;
- content-any: any word (OR, all words, quoted) over the content column only, plain bm25:
               our any-word idea without the key/tags columns, weights or stop words;
- ours with other bm25 column weights (key/tags/content), the ablation behind the choice.

A question "hits at 3" when one of its expected keys is among the first three results;
MRR@10 averages 1/rank of the first expected key in the first ten (0 when absent).
Nothing is asserted; the numbers are printed beside each other.
`--database postgres` measures ours on a throwaway PostgreSQL database (the baselines and
weight ablations are FTS5 queries, SQLite only).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

DATA = Path(__file__).with_name("search_eval_data.json")


def quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def words_of(question: str) -> list[str]:
    # Only the characters FTS5 would tokenize anyway; quotes are doubled by quoted().
    return [w for w in question.split() if any(ch.isalnum() for ch in w)]


def fts_baseline(expression: str, *, mind_id: str, limit: int = 10) -> list[str]:
    from django.db import connection

    from memories.search.sqlite import FTS_TABLE, mind_token

    sql = (
        f"SELECT m.key FROM {FTS_TABLE} CROSS JOIN memories_memory AS m "
        f"ON m.rowid = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s "
        f"ORDER BY bm25({FTS_TABLE}) LIMIT %s"
    )
    full = f'mind_id : "{mind_token(mind_id)}" AND ({expression})'
    with connection.cursor() as cursor:
        cursor.execute(sql, [full, mind_id, limit])
        return [row[0] for row in cursor.fetchall()]


def all_words(question: str, *, mind) -> list[str]:
    terms = " ".join(quoted(w) for w in words_of(question))
    return fts_baseline(f"{{key tags content}} : ({terms})", mind_id=mind.pk)


def content_any(question: str, *, mind) -> list[str]:
    terms = " OR ".join(quoted(w) for w in words_of(question))
    return fts_baseline(f"content : ({terms})", mind_id=mind.pk)


def ours(question: str, *, mind) -> list[str]:
    from memories.selectors import memory_search

    return [hit.memory.key for hit in memory_search(mind=mind, q=question, limit=10).hits]


def with_weights(weights: dict[str, float]) -> Callable:
    """`ours` with other bm25 column weights: the ablation behind the chosen ones."""

    def method(question: str, *, mind) -> list[str]:
        from memories.search import sqlite

        chosen = sqlite.WEIGHTS
        sqlite.WEIGHTS = weights
        try:
            return ours(question, mind=mind)
        finally:
            sqlite.WEIGHTS = chosen

    return method


def evaluate(method: Callable, questions: list[dict], *, mind) -> tuple[float, float, list]:
    hits, reciprocal, misses = 0, 0.0, []
    for item in questions:
        ranked = method(item["q"], mind=mind)
        expected = set(item["expected"])
        rank = next((i for i, key in enumerate(ranked[:10], 1) if key in expected), None)
        if rank is not None and rank <= 3:
            hits += 1
        else:
            misses.append((item["q"], item["expected"], ranked[:3]))
        reciprocal += 1 / rank if rank else 0.0
    return hits / len(questions), reciprocal / len(questions), misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list the questions missed")
    parser.add_argument("--database", choices=common.DATABASES, default="sqlite")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())

    with common.BenchDatabase(database=args.database):
        from memories.models import Memory

        _, mind, _ = common.create_mind("Eval")
        _, other, _ = common.create_mind("Someone else")
        for item in data["memories"]:
            Memory.objects.create(mind=mind, **item)
            # The same texts in another mind: they must neither show up nor change the order.
            Memory.objects.create(mind=other, **{**item, "content": item["content"][::-1]})

        methods = [
            ("ours", ours),
            ("all-words AND", all_words),
            ("content-only OR", content_any),
            ("ours, weights 1/1/1", with_weights({"key": 1.0, "tags": 1.0, "content": 1.0})),
            ("ours, weights 4/3/1", with_weights({"key": 4.0, "tags": 3.0, "content": 1.0})),
        ]
        if args.database != "sqlite":
            methods = methods[:1]
        print(
            f"{len(data['memories'])} memories (8 categories), {len(data['questions'])} questions"
        )
        print(f"{'method':20} {'hit@3':>6} {'MRR@10':>7}")
        for name, method in methods:
            hit3, mrr, misses = evaluate(method, data["questions"], mind=mind)
            print(f"{name:20} {hit3:6.3f} {mrr:7.3f}")
            if args.verbose:
                for q, expected, got in misses:
                    print(f"    miss: {q!r} wants {expected}, top 3 {got}")


if __name__ == "__main__":
    main()
