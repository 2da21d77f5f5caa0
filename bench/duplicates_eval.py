"""Near-repeat detection: how many paraphrased duplicates are flagged, and how many distinct
but close pairs are, at write time (the store's warning) and in GET /memory/duplicates.

    .venv/bin/python bench/duplicates_eval.py [--verbose] [--pairs N]

bench/duplicates_eval_data.json was written by hand for this project: 40 pairs of memories
that say the same thing in other words, and 40 pairs of distinct memories about the same
subject ("Knows Python well" / "Teaches Python on Fridays"), about the person of
bench/search_eval_data.json. Every third pair of each list is held out ("held"): the
thresholds of memories/hygiene/duplicates.py were chosen on the others ("dev") only.

One mind holds the 64 memories of search_eval_data.json and the first memory of every
pair; the second of each pair is then stored with memories.services.memory_store, as an
agent would, and its warnings read: a pair is flagged when a warning names its partner.
Then, with embeddings on (the default model) and off, memories.hygiene.duplicates
.duplicate_groups: a pair is flagged when both are in one group. Printed per split: the
share of duplicates flagged (target at least 0.9) and of distinct pairs flagged (target at
most 0.05), and, for tuning, the same shares at other thresholds on the dev part.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, search_eval

DATA = Path(__file__).with_name("duplicates_eval_data.json")
SPLITS = ("dev", "held")


def load() -> dict:
    return json.loads(DATA.read_text())


def shares(flagged: dict[int, bool], pairs: list[dict], split: str) -> tuple[float, float]:
    """(share of duplicates flagged, share of distinct pairs flagged) in `split`."""
    dup = [flagged[i] for i, p in enumerate(pairs) if p["split"] == split and p["duplicate"]]
    distinct = [
        flagged[i] for i, p in enumerate(pairs) if p["split"] == split and not p["duplicate"]
    ]
    return sum(dup) / max(len(dup), 1), sum(distinct) / max(len(distinct), 1)


def row(name: str, flagged: dict[int, bool], pairs: list[dict]) -> str:
    cells = []
    for split in SPLITS:
        dup, distinct = shares(flagged, pairs, split)
        cells.append(f"{split}: duplicates {dup:.2f}, distinct {distinct:.2f}")
    return f"{name:<44} " + " | ".join(cells)


def run(*, limit: int | None = None, verbose: bool = False, modes=("on", "off")) -> dict:
    """Measure; the figures by name (the tests run it small with embeddings off)."""
    data = load()
    pairs = data["pairs"]
    if limit:
        pairs = [p for p in pairs if p["duplicate"]][:limit] + [
            p for p in pairs if not p["duplicate"]
        ][:limit]
    figures: dict = {}
    print(common.cpu())
    with common.BenchDatabase():
        from django.conf import settings

        from memories import services
        from memories.actors import Actor
        from memories.hygiene import duplicates, lexical
        from memories.models import Memory

        background = json.loads(search_eval.DATA.read_text())["memories"]
        mind, _ = search_eval.memory_minds(background, name="Duplicates")
        firsts = [Memory.objects.create(mind=mind, **p["a"]) for p in pairs]
        actor = Actor(kind="agent", name="eval")
        at_write: dict[int, bool] = {}
        seconds = []
        for i, (p, first) in enumerate(zip(pairs, firsts, strict=True)):
            result = services.memory_store(mind=mind, actor=actor, body=p["b"])
            seconds.append(result.memory)
            at_write[i] = any(first.pk in w for w in result.warnings)
            if verbose and at_write[i] != p["duplicate"]:
                print(f"  write {'missed' if p['duplicate'] else 'flagged'}: {result.warnings}")
        print(
            f"\n{len(pairs)} pairs; thresholds: lexical {duplicates.LEXICAL_THRESHOLD}, "
            f"cosine {duplicates.COSINE_THRESHOLD}"
        )
        print(row("store warning (words; either mode)", at_write, pairs))
        figures["write"] = {s: shares(at_write, pairs, s) for s in SPLITS}
        lexical_scores = [
            lexical.similarity(lexical.Text(a.content), lexical.Text(b.content))
            for a, b in zip(firsts, seconds, strict=True)
        ]
        for mode in modes:
            settings.SYNAPSE_EMBEDDINGS = "local" if mode == "on" else "off"
            cosines: list[float | None] = [None] * len(pairs)
            if mode == "on":
                embedder, why = search_eval.load_embedder()
                if embedder is None:
                    print(f"embeddings on: {why}")
                    continue
                search_eval.embed_mind(embedder, mind=mind)
                vectors = {
                    m.pk: m for m in Memory.objects.filter(mind=mind).select_related("vector")
                }
                import numpy as np

                def vec(memory_id: str, vectors=vectors):
                    return np.frombuffer(bytes(vectors[memory_id].vector.vector), dtype=np.float32)

                cosines = [
                    float(vec(a.pk) @ vec(b.pk)) for a, b in zip(firsts, seconds, strict=True)
                ]
            groups = duplicates.duplicate_groups(mind=mind)
            group_of = {m.pk: n for n, g in enumerate(groups) for m in g.memories}
            listed = {
                i: group_of.get(a.pk, -1) == group_of.get(b.pk, -2)
                for i, (a, b) in enumerate(zip(firsts, seconds, strict=True))
            }
            print(row(f"GET /memory/duplicates, embeddings {mode}", listed, pairs))
            others = sum(
                1
                for g in groups
                if not any(m.pk in {x.pk for x in firsts + seconds} for m in g.memories)
            )
            print(f"{'':<44} groups {len(groups)}, of background memories only: {others}")
            figures[mode] = {s: shares(listed, pairs, s) for s in SPLITS}
            if verbose:
                for i, p in enumerate(pairs):
                    if listed[i] != p["duplicate"]:
                        print(
                            f"  list {'missed' if p['duplicate'] else 'flagged'} "
                            f"({lexical_scores[i]:.2f}, {cosines[i]}): {p['a']['content']} / "
                            f"{p['b']['content']}"
                        )
            if mode == "on":
                print("  dev, by cosine alone:")
                for t in (0.88, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95):
                    print(
                        "   ",
                        row(
                            f"cosine >= {t}",
                            {i: (c or 0) >= t for i, c in enumerate(cosines)},
                            pairs,
                        ),
                    )
        print("  dev, by words alone:")
        for t in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
            print(
                "   ",
                row(f"lexical >= {t}", {i: s >= t for i, s in enumerate(lexical_scores)}, pairs),
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list the pairs misjudged")
    parser.add_argument("--pairs", type=int, default=None, help="only the first N of each kind")
    args = parser.parse_args()
    run(limit=args.pairs, verbose=args.verbose)


if __name__ == "__main__":
    main()
