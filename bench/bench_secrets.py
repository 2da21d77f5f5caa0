"""What the credential check (memories/secrets.py) costs a write: memory_body_clean of the
same bodies with SYNAPSE_SECRETS=allow (the baseline: no check) and redact, in one run.

    .venv/bin/python bench/bench_secrets.py

Pure CPU, no database: the figures add to every store, sync item and update.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synapse_site.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench import common  # noqa: E402
from memories.actors import Actor  # noqa: E402
from memories.rules import memory_body_clean  # noqa: E402

AGENT = Actor(kind="agent", name="bench")
SENTENCE = "The user prefers dark mode in every editor and short answers in the morning."
BODIES = {
    "short sentence": {"category": "preference", "content": SENTENCE, "tags": ["editor"]},
    "2 KB note": {"category": "note", "content": (SENTENCE + " ") * 26, "tags": ["a", "b"]},
    "note with a URL and a hash": {
        "category": "project",
        "content": SENTENCE + " Fixed in 9c1185a5c5e9fc54612808977ee8f548b2258d31, see "
        "https://docs.example.com/release-notes/2026",
    },
    "note with a credential": {
        "category": "fact",
        "content": SENTENCE + " The deploy key is AKIA" + "IOSFODNN7EXAMPLQ.",
    },
    "50,000 characters": {"category": "note", "content": (SENTENCE + "\n") * 640},
}


def timings(body: dict, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        memory_body_clean(body, actor=AGENT)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    print(common.cpu())
    for name, body in BODIES.items():
        repeat = 50 if len(body["content"]) > 10_000 else 2000
        figures = []
        for mode in ("allow", "redact"):
            settings.SYNAPSE_SECRETS = mode
            timings(body, 20)  # warm up
            figures.append(common.Figure(f"{name}, {mode}", timings(body, repeat)))
        print(common.format_table(figures, baseline=figures[0]))
        print()


if __name__ == "__main__":
    main()
