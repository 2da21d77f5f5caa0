"""as_of on GET /memory, /memory/{id}, /memory/recall and /memory/search: the parameter,
who may ask, and what stays forgotten."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.fields import iso
from minds.models import Mind
from tests.api.memory_helpers import assert_invalid, json_of
from tests.conftest import bearer_client, jwt_for
from tests.factories import PERSON, share_make, upsert


@pytest.fixture
def past(mind):
    """The mind made a day ago; a memory stored two hours ago, changed an hour ago."""
    Mind.objects.filter(pk=mind.pk).update(created_at=timezone.now() - timedelta(days=1))
    mind.refresh_from_db()
    two_hours_ago = timezone.now() - timedelta(hours=2)
    memory = upsert(mind, "editor", "Uses Vim", now=two_hours_ago).memory
    services.memory_change(
        memory=memory, actor=PERSON, body={"content": "Uses Neovim"},
        now=timezone.now() - timedelta(hours=1),
    )  # fmt: skip
    return memory, iso(two_hours_ago + timedelta(minutes=1))


@pytest.mark.parametrize(
    "path", ["/memory", "/memory/recall", "/memory/search?q=vim", "/memory/mem_abc"]
)
@pytest.mark.parametrize("value", ["yesterday", "2025-13-40", "1700000000"])
def test_a_time_that_is_no_iso_8601_is_refused_naming_as_of(agent, mind, path, value):
    joiner = "&" if "?" in path else "?"
    assert_invalid(agent.get(f"{path}{joiner}as_of={value}"), "as_of")


def test_a_time_to_come_is_refused_naming_as_of(agent, mind):
    tomorrow = iso(timezone.now() + timedelta(days=1))
    body = assert_invalid(agent.get(f"/memory?as_of={tomorrow}"), "as_of")
    assert "past" in body["fields"]["as_of"][0]


def test_values_then_are_answered(agent, past):
    memory, then = past

    assert agent.get(f"/memory/{memory.pk}?as_of={then}").json()["content"] == "Uses Vim"
    listed = agent.get(f"/memory?as_of={then}").json()
    assert [m["content"] for m in listed["memories"]] == ["Uses Vim"]
    assert listed["as_of"] == then
    found = agent.get(f"/memory/search?q=vim&mode=keyword&as_of={then}").json()
    assert [r["content"] for r in found["results"]] == ["Uses Vim"]
    recalled = json_of(agent.get(f"/memory/recall?format=json&as_of={then}"))
    assert [m["content"] for m in recalled["memories"]] == ["Uses Vim"]


def test_a_naive_time_is_utc(agent, past):
    memory, then = past
    naive = then.removesuffix("Z")

    assert agent.get(f"/memory/{memory.pk}?as_of={naive}").json()["content"] == "Uses Vim"


def test_before_the_mind_existed_it_is_empty(agent, past):
    long_ago = iso(timezone.now() - timedelta(days=30))

    assert agent.get(f"/memory?as_of={long_ago}").json()["memories"] == []
    assert json_of(agent.get(f"/memory/recall?format=json&as_of={long_ago}"))["total"] == 0


def test_a_memory_deleted_since_is_answered_then_and_404_now(human, past):
    memory, then = past
    services.memory_delete(memory=memory, actor=PERSON)

    assert human.get(f"/memory/{memory.pk}").status_code == 404
    assert human.get(f"/memory/{memory.pk}?as_of={then}").json()["content"] == "Uses Vim"


def test_another_minds_memory_is_404(stranger_agent, other_human, past):
    memory, then = past

    assert stranger_agent.get(f"/memory/{memory.pk}?as_of={then}").status_code == 404
    assert other_human.get(f"/memory/{memory.pk}?as_of={then}").status_code == 404
    assert stranger_agent.get(f"/memory?as_of={then}").json()["memories"] == []


def test_purged_content_is_not_recovered(human, past):
    memory, then = past
    assert human.delete(f"/memory/{memory.pk}?purge=true").status_code == 200

    assert human.get(f"/memory/{memory.pk}?as_of={then}").status_code == 404
    assert human.get(f"/memory?as_of={then}").json()["memories"] == []
    found = human.get(f"/memory/search?q=vim&as_of={then}").json()
    assert found["results"] == []


def test_a_person_the_mind_is_shared_with_for_reading_can_ask(other_user, mind, past):
    memory, then = past
    share_make(mind, other_user, acl="read")
    reader = bearer_client(jwt_for(other_user))

    assert reader.get(f"/memory/{memory.pk}?as_of={then}").json()["content"] == "Uses Vim"
    listed = reader.get(f"/memory?mind={mind.pk}&as_of={then}").json()
    assert [m["key"] for m in listed["memories"]] == ["editor"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_search_as_of_is_by_keyword_only(agent, past, mode):
    _, then = past
    body = assert_invalid(agent.get(f"/memory/search?q=vim&mode={mode}&as_of={then}"), "mode")
    assert "as_of" in body["fields"]["mode"][0]


def test_recall_as_of_takes_no_topic(agent, past):
    _, then = past
    assert_invalid(agent.get(f"/memory/recall?about=editor&as_of={then}"), "about")
