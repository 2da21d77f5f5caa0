"""Which mind a request acts on (api/scoping.py): a Mind Key acts for its own mind only, and
naming another one with ?mind= or X-Mind-Id is refused, never silently ignored."""

from __future__ import annotations

import pytest

from api.scoping import KEY_NAMES_ANOTHER_MIND
from memories.models import Memory
from tests.factories import remember

STORE = {"category": "fact", "key": "fact_city", "content": "Lives in Berlin"}


def naming(mind_id: str, how: str) -> dict:
    """Request arguments that name `mind_id` by query parameter or by header."""
    if how == "query":
        return {"path_suffix": f"?mind={mind_id}", "headers": {}}
    return {"path_suffix": "", "headers": {"HTTP_X_MIND_ID": mind_id}}


@pytest.mark.parametrize("how", ["query", "header"])
def test_a_mind_key_naming_its_own_mind_is_fine(agent, mind, how):
    named = naming(mind.pk, how)
    response = agent.post(
        "/memory" + named["path_suffix"], STORE, format="json", **named["headers"]
    )
    assert response.status_code == 201, response.content
    listed = agent.get("/memory" + named["path_suffix"], **named["headers"])
    assert listed.status_code == 200 and listed.json()["total"] == 1


@pytest.mark.parametrize("how", ["query", "header"])
def test_a_mind_key_naming_another_mind_is_400_and_writes_nothing(agent, mind, stranger_mind, how):
    remember(stranger_mind.mind, "theirs", "their secret")
    named = naming(stranger_mind.mind.pk, how)
    stored = agent.post("/memory" + named["path_suffix"], STORE, format="json", **named["headers"])
    listed = agent.get("/memory" + named["path_suffix"], **named["headers"])
    recalled = agent.get("/memory/recall" + named["path_suffix"], **named["headers"])
    for response in (stored, listed, recalled):
        assert response.status_code == 400, response.content
        assert response.json()["fields"] == {"mind": [KEY_NAMES_ANOTHER_MIND]}
        assert "their secret" not in response.content.decode()
    assert not Memory.objects.filter(mind=mind).exists()
    assert Memory.objects.filter(mind=stranger_mind.mind).count() == 1


@pytest.mark.parametrize("how", ["query", "header"])
def test_another_mind_that_exists_and_one_that_does_not_get_the_same_answer(
    agent, stranger_mind, how
):
    answers = []
    for mind_id in (stranger_mind.mind.pk, "m_doesnotexist"):
        named = naming(mind_id, how)
        response = agent.get("/memory/stats" + named["path_suffix"], **named["headers"])
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1]
    assert answers[0][0] == 400


def test_own_mind_in_one_place_and_another_in_the_other_is_refused(agent, mind, stranger_mind):
    response = agent.get(f"/memory?mind={mind.pk}", HTTP_X_MIND_ID=stranger_mind.mind.pk)
    assert response.status_code == 400
    response = agent.get(f"/memory?mind={stranger_mind.mind.pk}", HTTP_X_MIND_ID=mind.pk)
    assert response.status_code == 400


def test_a_person_naming_a_mind_not_theirs_is_still_404(other_human, mind):
    response = other_human.get(f"/memory?mind={mind.pk}")
    assert response.status_code == 404
