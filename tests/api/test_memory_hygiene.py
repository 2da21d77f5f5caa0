"""GET /memory/duplicates and GET /memory/contradictions?within=."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, assert_isolated
from tests.factories import remember

BROWSER = "Uses Firefox with uBlock Origin as his main browser."
BROWSER_AGAIN = "Main browser is Firefox, with the uBlock Origin extension."


@pytest.fixture(autouse=True)
def off(settings):
    settings.SYNAPSE_EMBEDDINGS = "off"


def test_a_store_that_nearly_repeats_warns_and_still_stores(agent, mind):
    first = remember(mind, "preference_browser", BROWSER)
    response = agent.post(
        "/memory",
        {"category": "preference", "key": "preference_web_browser", "content": BROWSER_AGAIN},
        format="json",
    )
    assert response.status_code == 201
    (warning,) = response.json()["warnings"]
    assert first.pk in warning and "similarity" in warning


def test_duplicates_lists_groups(agent, human, mind):
    first = remember(mind, "preference_browser", BROWSER)
    second = remember(mind, "preference_web_browser", BROWSER_AGAIN)
    remember(mind, "skill_python", "Knows Python well.")
    for client in (agent, human):
        body = client.get("/memory/duplicates").json()
        assert body["total"] == 1
        (group,) = body["duplicates"]
        assert [m["id"] for m in group["memories"]] == [second.pk, first.pk]
        assert 0.5 <= group["similarity"] <= 1
        assert group["memories"][0]["content"] == BROWSER_AGAIN
    assert agent.get("/memory/duplicates/?limit=0").status_code == 400


def test_contradictions_within_a_window(agent, human, mind):
    now = timezone.now()
    old = remember(mind, "fact_office", "The office is in Berlin.", now=now - timedelta(days=3))
    new = remember(mind, "fact_office_moved", "The office moved to Munich.", now=now)
    for client in (agent, human):
        body = client.get("/memory/contradictions").json()
        assert body["total"] == 1
        (pair,) = body["contradictions"]
        assert (pair["a"]["id"], pair["b"]["id"]) == (new.pk, old.pk)
        assert pair["reason"] == "Different place: “Munich” / “Berlin”"
        assert set(pair) == {"a", "b", "similarity", "reason"}
    assert agent.get("/memory/contradictions/?within=86400").json()["total"] == 1
    remember(mind, "fact_office_moved", "The office moved to Munich.", now=now)
    old_pair_only = agent.get("/memory/contradictions?within=1h").json()
    assert old_pair_only["total"] == 1  # the newer one was written within the hour
    older = now - timedelta(hours=2)
    remember(mind, "fact_office_moved", "The office moved to Munich!", now=older)
    assert agent.get("/memory/contradictions?within=1h").json()["total"] == 0
    assert agent.get("/memory/contradictions?within=30m").json() == {
        "contradictions": [],
        "total": 0,
    }


@pytest.mark.parametrize("within", ["0", "-5", "soon", "7y", "1.5h"])
def test_a_bad_window_is_a_400_naming_within(agent, within):
    assert_invalid(agent.get(f"/memory/contradictions?within={within}"), "within")


@pytest.mark.parametrize("path", ["/memory/duplicates", "/memory/contradictions"])
def test_other_minds_never_see_these(path, mind, stranger_mind, stranger_agent, other_human):
    remember(mind, "fact_office", "The office is in Berlin.")
    remember(mind, "fact_office_moved", "The office moved to Munich.")
    remember(mind, "preference_browser", BROWSER)
    remember(mind, "preference_web_browser", BROWSER_AGAIN)
    assert stranger_agent.get(path).json()["total"] == 0
    assert_isolated(path, mind=mind, stranger_agent=stranger_agent, other_human=other_human)


@pytest.mark.parametrize("path", ["/memory/duplicates", "/memory/contradictions"])
def test_anonymous_callers_are_refused(anon, path):
    assert anon.get(path).status_code == 401
