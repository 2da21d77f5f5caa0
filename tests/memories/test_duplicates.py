"""Near-repeats: the store's warning (by words) and the mind's groups (by words and vectors)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.actors import Actor
from memories.hygiene.dismissals import pair_keep_both
from memories.hygiene.duplicates import CHECK_MAX_ITEMS, duplicate_groups
from memories.hygiene.lexical import Text, similarity
from memories.models import Memory
from memories.services import memory_upsert_many
from tests.factories import embed, remember, upsert
from tests.fake_embedder import fake_embedder  # noqa: F401

PERSON = Actor(kind="user", name="owner@example.com")
BROWSER = "Uses Firefox with uBlock Origin as his main browser."
BROWSER_AGAIN = "Main browser is Firefox, with the uBlock Origin extension."


@pytest.fixture
def off(settings):
    settings.SYNAPSE_EMBEDDINGS = "off"


def test_lexical_similarity_tells_a_repeat_from_a_look_alike():
    assert similarity(Text(BROWSER), Text(BROWSER_AGAIN)) >= 0.5
    assert similarity(Text("Knows Python well."), Text("Teaches Python on Fridays.")) < 0.5


def test_a_near_repeat_under_another_key_is_stored_with_a_warning(mind, off):
    first = remember(mind, "preference_browser", BROWSER)
    result = upsert(mind, "preference_web_browser", BROWSER_AGAIN)
    assert result.action == "created"
    (warning,) = result.warnings
    assert warning.startswith(f"Nearly repeats {first.pk} (\u201cpreference_browser\u201d)")
    assert "similarity 0." in warning and "stored anyway" in warning


def test_no_warning_for_a_distinct_memory_or_the_same_key(mind, off):
    remember(mind, "skill_python", "Knows Python well.")
    assert upsert(mind, "skill_python_teaching", "Teaches Python on Fridays.").warnings == []
    remember(mind, "preference_browser", BROWSER)
    assert upsert(mind, "preference_browser", BROWSER_AGAIN).warnings == []


def test_expired_superseded_and_other_minds_memories_are_not_named(mind, stranger_mind, off):
    remember(stranger_mind.mind, "preference_browser", BROWSER)
    soon = timezone.now() + timedelta(seconds=1)
    gone = remember(mind, "old_browser", BROWSER, expires_at=soon)
    replaced = remember(mind, "browser_before", BROWSER)
    Memory.objects.filter(pk=replaced.pk).update(superseded_by=gone)
    later = timezone.now() + timedelta(minutes=1)
    assert upsert(mind, "preference_web_browser", BROWSER_AGAIN, now=later).warnings == []


def test_a_kept_pair_is_not_warned_about_again(mind, off):
    first = remember(mind, "preference_browser", BROWSER)
    second = upsert(mind, "preference_web_browser", BROWSER_AGAIN).memory
    pair_keep_both(mind=mind, actor=PERSON, kind="duplicate", a=second.pk, b=first.pk)
    assert upsert(mind, "preference_web_browser", BROWSER_AGAIN + " Really.").warnings == []


def test_a_sync_warns_per_item_and_a_large_one_skips_the_check(mind, off):
    first = remember(mind, "preference_browser", BROWSER)
    items = [
        {"category": "fact", "key": "browser_again", "content": BROWSER_AGAIN},
        {"category": "fact", "key": "other", "content": "Drinks sparkling water all day."},
    ]
    warned, quiet = memory_upsert_many(mind=mind, actor=PERSON, items=items)
    assert first.pk in warned.warnings[0] and quiet.warnings == []
    many = [
        {"category": "note", "content": f"{BROWSER_AGAIN} {i}"} for i in range(CHECK_MAX_ITEMS + 1)
    ]
    results = memory_upsert_many(mind=mind, actor=PERSON, items=many)
    assert all(r.warnings == [] for r in results)


def test_groups_by_words_with_embeddings_off(mind, off):
    first = remember(mind, "preference_browser", BROWSER)
    second = remember(mind, "preference_web_browser", BROWSER_AGAIN)
    remember(mind, "skill_python", "Knows Python well.")
    (group,) = duplicate_groups(mind=mind)
    assert {m.pk for m in group.memories} == {first.pk, second.pk}
    assert group.memories[0] == second  # the most recently updated first
    pair_keep_both(mind=mind, actor=PERSON, kind="duplicate", a=first.pk, b=second.pk)
    assert duplicate_groups(mind=mind) == []


def test_groups_by_meaning_where_vectors_exist(mind, fake_embedder):  # noqa: F811
    # Same words in another order and case: far apart for no lexical measure, equal vectors.
    a = remember(mind, "pets_a", "collie dog pet")
    b = remember(mind, "pets_b", "Pets: dogs, a collie.")
    c = remember(mind, "other", "Quarterly budget report")
    embed(a, b, c)
    groups = duplicate_groups(mind=mind)
    assert [{m.pk for m in g.memories} for g in groups] == [{a.pk, b.pk}]
    assert groups[0].similarity >= 0.94


def test_groups_join_chains_and_leave_other_minds_out(mind, stranger_mind, off):
    texts = [BROWSER, BROWSER_AGAIN, "Main browser: Firefox with the uBlock Origin extension."]
    made = [remember(mind, f"browser_{i}", t) for i, t in enumerate(texts)]
    remember(stranger_mind.mind, "browser", BROWSER)
    remember(mind, "skill_python", "Knows Python well.")
    remember(mind, "fact_water", "Drinks sparkling water all day, no soft drinks.")
    (group,) = duplicate_groups(mind=mind)
    assert {m.pk for m in group.memories} == {m.pk for m in made}


def test_texts_that_state_different_values_are_no_group(mind, off):
    remember(mind, "standup", "Standup is at 9:30 every weekday morning")
    remember(mind, "standup_now", "Standup is at 10:00 every weekday morning")
    remember(mind, "browser", BROWSER)
    remember(mind, "browser_again", BROWSER_AGAIN)
    (group,) = duplicate_groups(mind=mind)
    assert {m.key for m in group.memories} == {"browser", "browser_again"}
