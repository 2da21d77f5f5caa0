"""memory_flags: what the hygiene check found about single memories, while it still holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.actors import Actor
from memories.hygiene.dismissals import pair_keep_both
from memories.hygiene.flags import MOST_PER_MEMORY, flagged_memories, memory_flags
from memories.hygiene.health import hygiene_check
from memories.selectors import diff_until
from memories.services import (
    memory_delete,
    memory_supersede,
    memory_verify,
    memory_verify_matching,
)
from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db


def _person(mind):
    return Actor.for_user(mind.owner)


def _pairs(mind):
    """A contradiction (office / office_now) and a near-repeat (coffee / coffee_again)."""
    found = {
        "office": agent_store(mind, key="office", content="The office is in Berlin"),
        "office_now": agent_store(mind, key="office_now", content="The office is in Munich"),
        "coffee": agent_store(
            mind, key="coffee", content="Likes strong black coffee in the morning"
        ),
        "coffee_again": agent_store(
            mind, key="coffee_again", content="Likes strong black coffee every morning"
        ),
        "plain": agent_store(mind, key="plain", content="Has a cat called Miso"),
    }
    return found


def _flags(mind, *memories):
    return memory_flags(mind=mind, memory_ids=[m.pk for m in memories])


def test_nothing_before_the_first_check(mind):
    m = _pairs(mind)
    assert _flags(mind, *m.values()) == {}


def test_a_contradiction_and_a_near_repeat_are_flagged_both_ways(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    flags = _flags(mind, *m.values())
    assert set(flags) == {m["office"].pk, m["office_now"].pk, m["coffee"].pk, m["coffee_again"].pk}
    (office,) = flags[m["office"].pk]
    assert office.kind == "contradiction" and office.label == "Contradicts"
    assert office.other.pk == m["office_now"].pk and "Berlin" in office.reason
    (coffee,) = flags[m["coffee"].pk]
    assert coffee.label == "Near-repeat of" and coffee.other.key == "coffee_again"
    assert flags[m["coffee_again"].pk][0].other.pk == m["coffee"].pk
    # flagged_memories: the flagged ones in the order asked for, with their rows.
    listed = flagged_memories(mind=mind, memory_ids=[m["plain"].pk, m["coffee"].pk])
    assert [(memory.pk, len(f)) for memory, f in listed] == [(m["coffee"].pk, 1)]


def test_a_changed_content_drops_the_flag_until_the_next_check(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    agent_store(mind, key="office_now", content="The office is in Berlin, by the river Spree")
    assert _flags(mind, m["office"], m["office_now"]) == {}


def test_a_verify_keeps_the_flag(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    memory_verify(memory=m["office_now"], actor=_person(mind))
    assert set(_flags(mind, m["office"], m["office_now"])) == {m["office"].pk, m["office_now"].pk}


def test_a_pair_kept_is_not_flagged(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    pair_keep_both(
        mind=mind, actor=_person(mind), kind="contradiction", a=m["office"].pk, b=m["office_now"].pk
    )
    flags = _flags(mind, *m.values())
    assert m["office"].pk not in flags and m["coffee"].pk in flags


def test_a_deleted_or_superseded_other_is_not_a_target(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    memory_delete(memory=m["office_now"], actor=_person(mind))
    memory_supersede(memory=m["coffee_again"], by=m["coffee"].pk, actor=_person(mind))
    assert _flags(mind, *m.values()) == {}


def test_an_expired_other_is_not_a_target(mind):
    now = timezone.now()
    a = agent_store(mind, key="office", content="The office is in Berlin")
    b = agent_store(
        mind,
        key="office_now",
        content="The office is in Munich",
        expires_at=now + timedelta(days=1),
    )
    hygiene_check(mind=mind, now=now)
    assert a.pk in memory_flags(mind=mind, memory_ids=[a.pk], now=now)
    assert memory_flags(mind=mind, memory_ids=[a.pk, b.pk], now=now + timedelta(days=2)) == {}


def test_another_minds_memories_are_never_flagged_or_targets(mind, stranger_mind):
    m = _pairs(mind)
    theirs = _pairs(stranger_mind.mind)
    hygiene_check(mind=mind)
    hygiene_check(mind=stranger_mind.mind)
    # Their ids asked of this mind: nothing; this mind's flags name only this mind's memories.
    assert _flags(mind, *theirs.values()) == {}
    targets = {f.other.mind_id for flags in _flags(mind, *m.values()).values() for f in flags}
    assert targets == {mind.pk}


def test_a_large_group_names_a_few(mind):
    for n in range(MOST_PER_MEMORY + 3):
        agent_store(mind, key=f"tea_{n}", content=f"Drinks green tea at four every afternoon {n}")
    hygiene_check(mind=mind)
    first = agent_store(mind, key="tea_0", content="Drinks green tea at four every afternoon 0")
    assert len(_flags(mind, first)[first.pk]) == MOST_PER_MEMORY


def test_three_queries_however_many_ids(mind, django_assert_max_num_queries):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    with django_assert_max_num_queries(3):
        assert len(_flags(mind, *m.values())) == 4


def test_verify_matching_can_leave_flagged_memories_out(mind):
    m = _pairs(mind)
    hygiene_check(mind=mind)
    result = memory_verify_matching(
        mind=mind, actor=_person(mind), seen_at=diff_until(mind=mind), skip_flagged=True
    )
    assert (result.verified, result.skipped) == (1, 4)
    m["plain"].refresh_from_db()
    m["office"].refresh_from_db()
    assert m["plain"].verified and not m["office"].verified
    everything = memory_verify_matching(
        mind=mind, actor=_person(mind), seen_at=diff_until(mind=mind)
    )
    assert (everything.verified, everything.skipped) == (4, 0)
