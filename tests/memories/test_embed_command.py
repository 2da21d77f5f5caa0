"""`manage.py embed`: every memory without a current vector gets one, with progress shown."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories.models import EmbeddingJob, MemoryVector
from tests.factories import remember


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("embed", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def lose_the_jobs():
    EmbeddingJob.objects.all().delete()


def test_embed_gives_every_memory_a_vector_and_shows_progress(mind):
    for i in range(5):
        remember(mind, f"k{i}", f"memory number {i}")
    lose_the_jobs()  # as after a restore of an old backup: only the command knows

    out, err = run("--batch-size", "2")

    assert "Embedded 5 memories" in out
    assert MemoryVector.objects.filter(mind=mind).count() == 5
    assert not EmbeddingJob.objects.exists()
    lines = err.strip().splitlines()
    assert lines[0].startswith("[") and " 2/5 " in lines[0] and "/s ETA " in lines[0]
    assert " 5/5 " in lines[-1] and lines[-1].endswith("s") and "in " in lines[-1]


def test_embed_check_reports_counts_and_embeds_nothing(mind):
    remember(mind, "a")
    remember(mind, "b")
    out, _ = run("--check")
    assert "2 memories, 0 embedded, 2 without a current vector, 2 queued, 0 parked." in out
    assert not MemoryVector.objects.exists()


def test_embed_mind_limits_to_that_mind(mind, stranger_mind):
    remember(mind, "a")
    remember(stranger_mind.mind, "b")
    lose_the_jobs()
    out, _ = run("--mind", mind.pk)
    assert "Embedded 1 memories" in out
    assert list(MemoryVector.objects.values_list("mind_id", flat=True)) == [mind.pk]
    out, _ = run("--check", "--mind", stranger_mind.mind.pk)
    assert "1 memories, 0 embedded" in out


def test_embed_refuses_an_unknown_mind_and_embeddings_off(mind, settings):
    with pytest.raises(CommandError, match="No mind"):
        run("--mind", "m_nosuchmind")
    settings.SYNAPSE_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="off"):
        run()
