"""memories/search/semantic.py: the per-process matrices, closeness and the fusion."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from memories.embeddings import get_embedder
from memories.models import MemoryVector, VectorsVersion
from memories.search import semantic
from memories.search.query import meaning_text
from tests.factories import embed, remember

pytestmark = pytest.mark.django_db

AT = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def embedder():
    found = get_embedder()
    assert found is not None
    return found


def matrix_of(mind, embedder) -> semantic.MindMatrix:
    return semantic.mind_matrix(
        mind_id=mind.pk, model=embedder.model, dimensions=embedder.dimensions
    )


def test_two_minds_with_the_same_marker_get_their_own_vectors(mind, stranger_mind, embedder):
    # Same number of vectors, stored at the same instant: only the key tells them apart.
    mine = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    theirs = remember(stranger_mind.mind, "fact_cat", "Has a cat named Whiskers.")
    embed(mine, theirs)
    MemoryVector.objects.update(embedded_at=AT)
    semantic.forget_cached()
    assert matrix_of(mind, embedder).ids == [mine.pk]
    assert matrix_of(stranger_mind.mind, embedder).ids == [theirs.pk]
    assert matrix_of(mind, embedder).ids == [mine.pk]


def test_the_matrix_is_read_again_only_when_the_vectors_change(mind, embedder):
    first = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    embed(first)
    semantic.forget_cached()
    read = matrix_of(mind, embedder)
    assert matrix_of(mind, embedder) is read
    second = remember(mind, "fact_cat", "Has a cat named Whiskers.")
    embed(second)
    again = matrix_of(mind, embedder)
    assert again is not read and sorted(again.ids) == sorted([first.pk, second.pk])
    MemoryVector.objects.filter(memory=second).delete()
    assert matrix_of(mind, embedder).ids == [first.pk]


def version_of(mind) -> int | None:
    return VectorsVersion.objects.filter(mind=mind).values_list("version", flat=True).first()


def test_every_change_to_a_minds_vectors_moves_its_version_and_only_its(
    mind, stranger_mind, embedder
):
    dog = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    cat = remember(stranger_mind.mind, "fact_cat", "Has a cat named Whiskers.")
    assert version_of(mind) is None  # no vector yet
    embed(dog, cat)
    stored, theirs = version_of(mind), version_of(stranger_mind.mind)
    assert stored is not None and theirs is not None
    embed(dog)  # replaced, as the worker's upsert does
    replaced = version_of(mind)
    assert replaced is not None and replaced > stored
    remember(mind, "fact_dog", "Has two border collies.")  # new text: the vector is deleted
    changed = version_of(mind)
    assert changed is not None and changed > replaced
    assert not MemoryVector.objects.filter(memory=dog).exists()
    embed(dog)
    MemoryVector.objects.filter(memory=dog).update(vector=b"\0" * 12)
    updated = version_of(mind)
    assert updated is not None
    dog.delete()  # the vector goes with its memory
    deleted = version_of(mind)
    assert deleted is not None and deleted > updated
    assert version_of(stranger_mind.mind) == theirs


def test_a_mind_with_vectors_deletes_with_its_version(mind, embedder):
    embed(remember(mind, "fact_dog", "Has a border collie named Pixel."))
    mind_id = mind.pk
    mind.delete()
    assert not VectorsVersion.objects.filter(mind_id=mind_id).exists()
    assert not MemoryVector.objects.filter(mind_id=mind_id).exists()


def test_the_migration_made_the_triggers_the_code_makes_again():
    from importlib import import_module

    frozen = import_module("memories.migrations.0009_vectors_version").TRIGGERS
    assert frozen == semantic.VERSION_TRIGGERS


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_migrate_makes_missing_triggers_again_and_moves_every_version(mind, embedder):
    # A later migration altering the vectors' table on SQLite remakes it without triggers.
    first = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    embed(first)
    semantic.forget_cached()
    cached = matrix_of(mind, embedder)
    before = version_of(mind)
    with connection.cursor() as cursor:
        for name in semantic.VERSION_TRIGGERS["sqlite"]:
            cursor.execute(f"DROP TRIGGER {name}")
    MemoryVector.objects.filter(memory=first).delete()  # unseen by the version
    assert version_of(mind) == before
    call_command("migrate", verbosity=0)
    assert version_of(mind) == (before or 0) + 1
    assert matrix_of(mind, embedder) is not cached and matrix_of(mind, embedder).ids == []
    embed(first)  # the triggers follow the vectors again
    assert version_of(mind) == (before or 0) + 2
    assert semantic.ensure_version_triggers() is False  # nothing missing


def test_rows_are_the_stored_vectors(mind, embedder):
    memory = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    embed(memory)
    semantic.forget_cached()
    found = matrix_of(mind, embedder)
    stored = np.frombuffer(MemoryVector.objects.get(memory=memory).vector, dtype=np.float32)
    assert found.matrix.shape == (1, embedder.dimensions)
    assert np.array_equal(found.matrix[0], stored)


def test_a_vector_of_another_length_is_left_out(mind, embedder):
    memory = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    embed(memory)
    MemoryVector.objects.filter(memory=memory).update(vector=b"\0" * 12)
    semantic.forget_cached()
    assert matrix_of(mind, embedder).ids == []


def test_the_cache_keeps_within_its_size(mind, stranger_mind, embedder, monkeypatch):
    embed(remember(mind, "fact_dog", "Has a border collie named Pixel."))
    embed(remember(stranger_mind.mind, "fact_cat", "Has a cat named Whiskers."))
    semantic.forget_cached()
    monkeypatch.setattr(semantic, "CACHE_BYTES", 1)
    matrix_of(mind, embedder)
    matrix_of(stranger_mind.mind, embedder)
    assert list(semantic._cache) == [(stranger_mind.mind.pk, embedder.model)]


def test_closeness_ranks_floors_and_limits(mind, embedder):
    dog = remember(mind, "fact_dog", "Has a border collie named Pixel.")
    cat = remember(mind, "fact_cat", "Has a cat named Whiskers.")
    deploy = remember(mind, "project_deploy", "Deployed with Docker Compose on a Hetzner VPS.")
    embed(dog, cat, deploy)
    close = semantic.closeness(
        mind_id=mind.pk, embedder=embedder, question="a pet dog", floor=-1.0, limit=10
    )
    assert close.ranked[0][0] == dog.pk
    assert len(close.ranked) == 3
    assert close.of(deploy.pk) == pytest.approx(dict(close.ranked)[deploy.pk])
    assert close.of("mem_unknown") is None
    top = semantic.closeness(
        mind_id=mind.pk, embedder=embedder, question="a pet dog", floor=-1.0, limit=1
    )
    assert top.ranked == close.ranked[:1]
    floor = (close.ranked[0][1] + close.ranked[1][1]) / 2
    high = semantic.closeness(
        mind_id=mind.pk, embedder=embedder, question="a pet dog", floor=floor, limit=10
    )
    assert high.ranked == close.ranked[:1]


def test_a_mind_without_vectors_embeds_nothing(mind, monkeypatch):
    class Refusing:
        model, dimensions = "m", 3

        def embed_query(self, text):
            raise AssertionError("no vectors: the question need not be embedded")

    remember(mind, "fact_dog", "Has a border collie named Pixel.")
    close = semantic.closeness(
        mind_id=mind.pk, embedder=Refusing(), question="dog", floor=0.0, limit=10
    )
    assert close.ranked == []


# The question's 50 closest memories, besides the ones a test names: half at 0.20 and half at
# 0.30, so a cosine's standing is (cosine - 0.25) / 0.05: 0.30 stands at 1, 0.40 at 3.
BACKGROUND = [(f"bg{i}", 0.30 if i < 25 else 0.20) for i in range(50)]


class Known(semantic.Closeness):
    """Closeness with given cosines (None: no vector), over the BACKGROUND's spread."""

    def __init__(self, cosines: dict[str, float | None], ranked=BACKGROUND, reference=()):
        super().__init__(list(ranked), reference=list(reference))
        self.cosines = cosines

    def of(self, memory_id: str) -> float | None:
        return self.cosines.get(memory_id)

    def need(self, memory_ids: list[str]) -> None:
        """Every cosine is at hand already."""


def fused(keyword, meaning, cosines, ranked=BACKGROUND, reference=()):
    close = Known(cosines, ranked, reference)
    found = semantic.fuse(keyword=keyword, meaning=meaning, close=close)  # type: ignore[arg-type]
    return [(f.memory_id, f.match) for f in found]


def test_a_cosine_stands_by_the_spread_of_the_closest():
    standing = semantic.Standing(Known({}))  # type: ignore[arg-type]
    assert (standing.mean, standing.spread) == pytest.approx((0.25, 0.05))
    assert standing.of(0.40) == pytest.approx(3.0)
    # Copies of one memory: no spread to stand out of, so none is measured against nothing.
    flat = semantic.Standing(Known({}, [("a", 0.5), ("b", 0.5)]))  # type: ignore[arg-type]
    assert flat.spread == semantic.LEAST_SPREAD


def test_fusion_lifts_keyword_matches_that_agree_in_meaning():
    cosines = {"a": 0.40, "b": 0.41, "c": 0.10}
    # "a" is the best keyword match and agrees in meaning (standing 3): lifted above "b" (3.2).
    assert fused(["a", "c"], [("b", 0.41), ("a", 0.40)], cosines) == [
        ("a", "both"),
        ("b", "meaning"),
        ("c", "keyword"),
    ]


def test_fusion_gives_a_keyword_match_far_in_meaning_no_lift():
    # "c" matched a word used in passing (standing 0.2): the memory close in meaning is first.
    assert semantic.AGREEMENT > 0.2
    cosines = {"c": 0.26, "b": 0.30}
    assert fused(["c"], [("b", 0.30)], cosines) == [("b", "meaning"), ("c", "keyword")]


def test_fusion_leaves_out_what_meaning_alone_finds_not_standing_out():
    # Found by meaning alone, a standing of 0.6 (0.28) is kept and 0.4 (0.27) is not; a
    # keyword match stays whatever its cosine.
    cosines = {"best": 0.50, "near": 0.28, "far": 0.27, "worded": 0.05}
    meaning = [("best", 0.50), ("near", 0.28), ("far", 0.27)]
    assert semantic.MEANING_STANDING == 0.5
    assert fused(["worded"], meaning, cosines) == [
        ("best", "meaning"),
        ("near", "meaning"),
        ("worded", "keyword"),
    ]


def test_fusion_keeps_the_closest_memory_whatever_its_standing():
    # A mind of two memories: the closest stands out of next to nothing, and is still an
    # answer; below MEANING_FLOOR it is none.
    ranked = [("closest", 0.31), ("other", 0.30)]
    assert fused([], ranked, dict(ranked), ranked) == [("closest", "meaning")]
    far = [("closest", 0.05), ("other", 0.04)]
    assert fused([], far, dict(far), far) == []


def test_a_small_minds_standings_are_measured_with_unrelated_text():
    # Three memories: the question's cosines with the reference texts (half 0.20, half 0.30)
    # make up the measure, so the two that stand out of unrelated text are both answers.
    mind = [("dog", 0.60), ("cat", 0.45), ("tax", 0.22)]
    reference = [0.30] * 25 + [0.20] * 25
    assert fused([], mind, dict(mind), mind, reference) == [("dog", "meaning"), ("cat", "meaning")]
    standing = semantic.Standing(Known({}, mind, reference))  # type: ignore[arg-type]
    assert standing.of(0.45) > semantic.MEANING_STANDING > standing.of(0.22)


def test_fusion_ranks_a_keyword_match_without_a_vector_as_agreeing():
    # "z" counts as agreeing (AGREEMENT 0.5) and gets its lift: above "b" at 0.6.
    cosines = {"b": 0.28, "z": None}
    assert fused(["z"], [("b", 0.28)], cosines) == [("z", "keyword"), ("b", "meaning")]


def test_fusion_keeps_keyword_order_between_equals_and_lists_each_once():
    cosines = dict.fromkeys("abc", None)
    assert fused(["c", "a", "b"], [], cosines) == [
        ("c", "keyword"),
        ("a", "keyword"),
        ("b", "keyword"),
    ]


@pytest.mark.parametrize(
    ("q", "text"),
    [
        ("does he have any animals", "does he have any animals"),
        ('pets "border collie" -pixel', "pets border collie"),
        ('-"a phrase" dogs', "dogs"),
        ("well-known co-op", "well-known co-op"),
        ('unbalanced "quote', "unbalanced quote"),
    ],
)
def test_the_question_compared_by_meaning_leaves_exclusions_out(q, text):
    assert meaning_text(q) == text


def test_the_selector_refuses_an_unknown_mode(mind):
    from core.errors import Invalid
    from memories.search import memory_search

    with pytest.raises(Invalid) as refused:
        memory_search(mind=mind, q="dog", mode="fuzzy")
    assert list(refused.value.fields) == ["mode"]
