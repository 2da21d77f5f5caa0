"""GET /memory/diff?since=: created, updated and deleted ids in since <= t < until."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from memories import selectors
from memories.services import memory_delete
from tests.api.memory_helpers import assert_invalid, assert_isolated, json_of
from tests.factories import AGENT, remember

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def diff(client, since) -> dict:
    response = client.get("/memory/diff", {"since": since})
    assert response.status_code == 200
    return json_of(response)


def test_diff_sorts_changes_into_created_updated_deleted(agent, mind):
    before = remember(mind, "before", "v1", now=at(0))
    touched = remember(mind, "touched", "v1", now=at(0))
    doomed = remember(mind, "doomed", now=at(0))
    remember(mind, "touched", "v2", now=at(20))  # updated in the window
    new = remember(mind, "new", now=at(30))  # created in the window
    memory_delete(memory=doomed, actor=AGENT, now=at(40))
    body = diff(agent, at(10).isoformat())
    assert set(body) == {"since", "until", "has_more", "created", "updated", "deleted"}
    assert body["has_more"] is False
    assert body["since"] == "2026-03-01T12:10:00Z"
    assert [m["id"] for m in body["created"]] == [new.pk]
    assert [m["id"] for m in body["updated"]] == [touched.pk]
    assert body["updated"][0]["content"] == "v2"
    assert body["deleted"] == [doomed.pk]
    assert before.pk not in str(body)


def test_created_then_deleted_in_the_window_is_only_deleted(agent, mind):
    brief = remember(mind, "brief", now=at(5))
    memory_delete(memory=brief, actor=AGENT, now=at(6))
    body = diff(agent, at(0).timestamp())
    assert body["created"] == [] and body["updated"] == []
    assert body["deleted"] == [brief.pk]


def test_deleted_and_stored_again_has_a_new_id(agent, mind):
    old = remember(mind, "k", "first", now=at(0))
    memory_delete(memory=old, actor=AGENT, now=at(5))
    new = remember(mind, "k", "again", now=at(6))
    body = diff(agent, int(at(1).timestamp()))
    assert body["deleted"] == [old.pk]
    assert [m["id"] for m in body["created"]] == [new.pk]
    assert new.pk != old.pk


def test_since_is_inclusive_and_until_is_the_next_since(agent, mind):
    exact = remember(mind, "exact", now=at(10))
    assert [m["id"] for m in diff(agent, at(10).timestamp())["created"]] == [exact.pk]
    assert diff(agent, (at(10) + timedelta(microseconds=1)).isoformat())["created"] == []

    first = diff(agent, at(0).isoformat())
    later = agent.post("/memory", {"category": "fact", "content": "later"}, format="json").json()
    second = diff(agent, first["until"])
    # Nothing repeated, nothing lost: the write after `until` is in the next window only.
    assert [m["id"] for m in second["created"]] == [later["id"]]
    assert exact.pk not in str(second)
    until = datetime.fromisoformat(second["until"])
    assert abs(until - timezone.now()) < timedelta(seconds=5)


def test_since_accepts_epoch_iso_and_an_unencoded_plus(agent, mind):
    remember(mind, "k", now=at(10))
    for since in (
        int(at(0).timestamp()),
        f"{at(0).timestamp():.3f}",
        "2026-03-01T12:00:00Z",
        "2026-03-01T13:00:00+01:00",
        "2026-03-01T12:00:00",
    ):
        assert len(diff(agent, since)["created"]) == 1, since
    raw = agent.get("/memory/diff?since=2026-03-01T13:00:00+01:00")  # "+" arrives as " "
    assert raw.status_code == 200 and len(json_of(raw)["created"]) == 1


@pytest.mark.parametrize("since", [None, "", "yesterday", "2026-13-01", "nan", "1e400"])
def test_bad_since_names_since(agent, since):
    path = "/memory/diff" if since is None else f"/memory/diff?since={since}"
    assert_invalid(agent.get(path), "since")


def test_diff_isolation(agent, mind, stranger_agent, other_human):
    doomed = remember(mind, "doomed", now=at(0))
    remember(mind, "kept", now=at(1))
    memory_delete(memory=doomed, actor=AGENT, now=at(2))
    body = diff(stranger_agent, 0)
    assert body["created"] == [] and body["updated"] == [] and body["deleted"] == []
    assert_isolated(
        "/memory/diff?since=0", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )


# --- Paging ------------------------------------------------------------------------------------


def follow(client, since, **params) -> list[dict]:
    """Every page from `since`, as a client does: since = until while has_more."""
    pages = []
    while True:
        response = client.get("/memory/diff", {"since": since, **params})
        assert response.status_code == 200
        page = json_of(response)
        pages.append(page)
        if not page["has_more"]:
            return pages
        assert len(pages) < 20
        since = page["until"]


def test_a_long_window_comes_in_pages_that_add_up(agent, mind):
    kept = [remember(mind, f"k{i}", now=at(i)) for i in range(5)]
    doomed = remember(mind, "doomed", now=at(5))
    memory_delete(memory=doomed, actor=AGENT, now=at(6))
    remember(mind, "k1", "changed", now=at(7))
    pages = follow(agent, at(0).isoformat(), limit=2)
    assert [p["has_more"] for p in pages] == [True, True, False]
    # Each page's `until` is the instant of the first change it leaves out.
    assert datetime.fromisoformat(pages[0]["until"]) == at(3)
    created = [m["id"] for p in pages for m in p["created"]]
    updated = [m["id"] for p in pages for m in p["updated"]]
    deleted = [i for p in pages for i in p["deleted"]]
    # k1 changed after the page that listed k0 and k1: it comes once, in its latest state,
    # in the page of its change (created before that page: "updated").
    assert created == [kept[0].pk, kept[2].pk, kept[3].pk, kept[4].pk]
    assert updated == [kept[1].pk] and pages[-1]["updated"][0]["content"] == "changed"
    assert deleted == [doomed.pk]
    assert sum(len(p["created"]) + len(p["updated"]) + len(p["deleted"]) for p in pages) == 6


def test_a_page_never_splits_the_writes_of_one_instant(agent, mind):
    for key in ("a", "b", "c"):
        remember(mind, key, now=at(1))  # one sync's writes share their instant
    remember(mind, "d", now=at(2))
    first, second = follow(agent, at(0).isoformat(), limit=2)
    assert sorted(m["key"] for m in first["created"]) == ["a", "b", "c"]
    assert first["has_more"] and datetime.fromisoformat(first["until"]) == at(2)
    assert [m["key"] for m in second["created"]] == ["d"] and not second["has_more"]


def test_a_client_that_knows_nothing_of_paging_still_gets_everything(agent, mind, monkeypatch):
    monkeypatch.setattr(selectors, "DIFF_PAGE_MAX", 3)
    stored = {remember(mind, f"k{i}", now=at(i)).pk for i in range(10)}
    pages = follow(agent, at(0).timestamp())
    assert len(pages) == 4
    seen = [m["id"] for page in pages for m in page["created"]]
    assert sorted(seen) == sorted(stored)  # each once
