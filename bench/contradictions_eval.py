"""Contradiction detection: precision and recall of GET /memory/contradictions on a realistic
mind holding contradicting pairs and agreeing look-alikes.

    .venv/bin/python bench/contradictions_eval.py [--verbose] [--pairs N]

bench/contradictions_eval_data.json was written by hand for this project: 40 pairs of
memories that state different values about the same thing ("The office is in Berlin" /
"The office moved to Munich") and 40 pairs that look alike and agree ("Anna lives in
Hamburg" / "Anna moved to Hamburg in 2019"), about the person of
bench/search_eval_data.json. Every third pair of each list is held out ("held"): the rules
and thresholds of memories/hygiene/contradictions.py were chosen on the others ("dev").

One mind holds the 64 memories of search_eval_data.json and both memories of every pair.
With embeddings on (the default model, every memory embedded as the worker would) and off,
memories.hygiene.contradictions.contradiction_pairs lists the pairs. Printed per split:
precision (flagged labelled contradictions over every flag touching the split's memories)
and recall (labelled contradictions flagged); flags between memories of different pairs or
of the background count against precision overall. Targets: both at least 0.8.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, search_eval

DATA = Path(__file__).with_name("contradictions_eval_data.json")
SPLITS = ("dev", "held")


def load() -> dict:
    return json.loads(DATA.read_text())


def run(*, limit: int | None = None, verbose: bool = False, modes=("on", "off")) -> dict:
    """Measure; the figures by mode and split (the tests run it small with embeddings off)."""
    pairs = load()["pairs"]
    if limit:
        pairs = [p for p in pairs if p["contradicts"]][:limit] + [
            p for p in pairs if not p["contradicts"]
        ][:limit]
    figures: dict = {}
    print(common.cpu())
    with common.BenchDatabase():
        from django.conf import settings

        from memories.hygiene import contradictions
        from memories.models import Memory

        background = json.loads(search_eval.DATA.read_text())["memories"]
        mind, _ = search_eval.memory_minds(background, name="Contradictions")
        made = [
            (Memory.objects.create(mind=mind, **p["a"]), Memory.objects.create(mind=mind, **p["b"]))
            for p in pairs
        ]
        split_of = {m.pk: p["split"] for p, ms in zip(pairs, made, strict=True) for m in ms}
        labelled = {tuple(sorted((a.pk, b.pk))): p for p, (a, b) in zip(pairs, made, strict=True)}
        contents = {m.pk: m.content for ms in made for m in ms}
        print(f"\n{len(pairs)} pairs in a mind of {len(background) + 2 * len(pairs)} memories")
        for mode in modes:
            settings.SYNAPSE_EMBEDDINGS = "local" if mode == "on" else "off"
            if mode == "on":
                embedder, why = search_eval.load_embedder()
                if embedder is None:
                    print(f"embeddings on: {why}")
                    continue
                search_eval.embed_mind(embedder, mind=mind)
            found = contradictions.contradiction_pairs(mind=mind, within=timedelta(days=7))
            flagged = {tuple(sorted((c.a.pk, c.b.pk))): c for c in found}
            figures[mode] = {}
            cells = []
            for split in (*SPLITS, "all"):
                positives = [
                    k
                    for k, p in labelled.items()
                    if p["contradicts"] and split in (p["split"], "all")
                ]
                touching = [
                    k
                    for k in flagged
                    if split == "all" or split in (split_of.get(k[0]), split_of.get(k[1]))
                ]
                hits = [k for k in touching if k in labelled and labelled[k]["contradicts"]]
                precision = len(hits) / max(len(touching), 1)
                recall = sum(1 for k in positives if k in flagged) / max(len(positives), 1)
                figures[mode][split] = (precision, recall, len(touching))
                cells.append(
                    f"{split}: precision {precision:.2f}, recall {recall:.2f} "
                    f"({len(touching)} flagged)"
                )
            print(f"embeddings {mode:<4} " + " | ".join(cells))
            if verbose:
                for k, p in labelled.items():
                    if p["contradicts"] and k not in flagged:
                        print(f"  missed: {contents[k[0]]} / {contents[k[1]]}")
                for k, c in flagged.items():
                    if k not in labelled or not labelled[k]["contradicts"]:
                        print(f"  wrong: {c.a.content} / {c.b.content} ({c.reason})")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list the pairs misjudged")
    parser.add_argument("--pairs", type=int, default=None, help="only the first N of each kind")
    args = parser.parse_args()
    run(limit=args.pairs, verbose=args.verbose)


if __name__ == "__main__":
    main()
