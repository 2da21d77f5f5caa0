"""`manage.py embed [--mind ID] [--check]`: give every memory a vector of the current model,
in the foreground, with a progress bar (the background worker does the same, unseen).
Parked jobs (refused by the embedder again and again) are tried again first."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from memories.embeddings import EmbeddingsError, get_embedder, outbox
from memories.models import Memory, MemoryVector
from minds.models import Mind

BAR_WIDTH = 30


class Progress:
    """A plain-text bar on one line of `stream`: done/total, rate, time left."""

    def __init__(self, total: int, stream: OutputWrapper) -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        self.started = time.monotonic()
        self.live = stream.isatty()

    def advance(self, count: int) -> None:
        self.done += count
        self.show(final=False)

    def show(self, *, final: bool) -> None:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        total = max(self.total, self.done)
        filled = BAR_WIDTH * self.done // total if total else BAR_WIDTH
        left = (total - self.done) / rate if rate else 0.0
        line = (
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done:,}/{total:,} "
            f"{rate:,.0f}/s " + (f"in {elapsed:.1f}s" if final else f"ETA {_duration(left)}")
        )
        # On a terminal the line is redrawn; in a log, one line per batch.
        self.stream.write("\r" + line + " " * 8 if self.live else line + "\n", ending="")
        if final and self.live:
            self.stream.write("")
        self.stream.flush()


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


class Command(BaseCommand):
    help = (
        "Queue every memory that has no vector of the current embedding model, retry the "
        "parked jobs, and embed them now, with a progress bar on stderr (the background "
        "worker would do it too, unseen). --check only reports the counts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--mind", help="Only this mind's memories (its id, m_...).")
        parser.add_argument(
            "--check", action="store_true", help="Report counts only; embed nothing."
        )
        parser.add_argument(
            "--batch-size", type=int, default=outbox.BATCH_SIZE, help="Memories per batch."
        )

    def handle(
        self, *args: Any, mind: str | None, check: bool, batch_size: int, **options: Any
    ) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be 1 or more.")
        if mind is not None and not Mind.objects.filter(pk=mind).exists():
            raise CommandError(f"No mind with the id {mind!r}.")
        try:
            embedder = get_embedder()
        except EmbeddingsError as exc:
            raise CommandError(str(exc)) from None
        if embedder is None:
            raise CommandError("Embeddings are off (SYNAPSE_EMBEDDINGS=off): nothing to do.")
        memories = Memory.objects.all()
        vectors = MemoryVector.objects.filter(model=embedder.model)
        if mind is not None:
            memories, vectors = memories.filter(mind_id=mind), vectors.filter(mind_id=mind)
        total, embedded = memories.count(), vectors.count()
        if check:
            self.stdout.write(
                f"model {embedder.model}: {total:,} memories, {embedded:,} embedded, "
                f"{total - embedded:,} without a current vector, "
                f"{outbox.pending_count(mind_id=mind):,} queued, "
                f"{outbox.parked_count(mind_id=mind):,} parked."
            )
            return
        outbox.queue_missing(model=embedder.model, mind_id=mind)
        outbox.retry_parked(mind_id=mind)
        progress = Progress(outbox.pending_count(mind_id=mind), self.stderr)
        refused = 0

        def advance(batch: outbox.Batch) -> None:
            nonlocal refused
            refused += batch.refused
            progress.advance(batch.taken - batch.requeued)

        stored = outbox.embed_pending(
            embedder=embedder, batch_size=batch_size, mind_id=mind, progress=advance
        )
        progress.show(final=True)
        self.stdout.write(f"Embedded {stored:,} memories with {embedder.model}.")
        if refused:
            self.stdout.write(
                f"The embedder refused {refused:,}: they are tried again later, and parked "
                f"after {outbox.MAX_ATTEMPTS} attempts (the worker's log says why)."
            )
