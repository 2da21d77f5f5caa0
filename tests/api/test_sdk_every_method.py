"""Every `memory` and `webhooks` method of synapse-memory-sdk, plus visualization.tags(),
against a live server.

The client is used unchanged: it fixes the paths and query parameters.
"""

from __future__ import annotations

import csv
import io
import time

import pytest
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from tests.conftest import jwt_for
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live_server, owner_mind) -> Synapse:
    return Synapse(base_url=live_server.url, mind_key=owner_mind.key, max_retries=0)


def test_every_memory_method(sdk, live_server, owner, owner_mind):
    start = int(time.time()) - 1
    editor = sdk.memory.store(
        category="preference",
        key="preference_editor",
        content='Uses Neovim, with a "quoted" config',
        tags=["Tools", "editor"],
        priority="high",
    )
    shell = sdk.memory.store(category="preference", content="Uses fish shell", tags=["tools"])
    soon = sdk.memory.store(
        category="context",
        key="context_sprint",
        content="Sprint ends Friday",
        tags=["work"],
        expires_at=int(time.time()) + 3600,
    )
    assert editor["action"] == shell["action"] == "created"

    assert "preference_editor" in sdk.memory.recall()
    listed = sdk.memory.list(category="preference")
    assert listed["total"] == 2 and set(listed) == {"memories", "total", "limit", "offset"}
    found = sdk.memory.search("neovim")
    assert [r["id"] for r in found["results"]] == [editor["id"]]

    updated = sdk.memory.update(editor["id"], content="Uses Helix")
    assert updated["content"] == "Uses Helix" and updated["id"] == editor["id"]

    stats = sdk.memory.stats()
    assert stats["total"] == 3 and stats["by_category"]["preference"] == 2
    assert stats["by_priority"]["high"] == 1

    unverified = sdk.memory.unverified(limit=2)
    assert unverified["total"] == 3 and len(unverified["memories"]) == 2
    assert unverified["memories"][0]["id"] == editor["id"]  # the high-priority one first

    audit = sdk.memory.audit(limit=10)
    assert audit["total"] == 4
    assert audit["entries"][0]["action"] == "update"
    assert audit["entries"][0]["changes"]["content"]["old"].startswith("Uses Neovim")
    assert [e["action"] for e in sdk.memory.audit(action="create")["entries"]] == ["create"] * 3

    related = sdk.memory.related(editor["id"])
    assert [m["id"] for m in related["memories"]] == [shell["id"]]
    assert related["memories"][0]["shared_tags"] == ["tools"]

    by_tag = sdk.memory.by_tag("TOOLS")
    assert {m["id"] for m in by_tag["memories"]} == {editor["id"], shell["id"]}

    expiring = sdk.memory.expiring(within_seconds=7200)
    assert [m["id"] for m in expiring["memories"]] == [soon["id"]]
    assert sdk.memory.expiring(within_seconds=60)["total"] == 0

    sdk.memory.store(category="fact", key="fact_office", content="The office is in Berlin.")
    moved = sdk.memory.store(
        category="fact", key="fact_office_moved", content="The office moved to Munich."
    )
    contradictions = sdk.memory.contradictions(within_seconds=86400)
    assert contradictions["total"] == 1
    assert contradictions["contradictions"][0]["a"]["id"] == moved["id"]
    assert "Munich" in contradictions["contradictions"][0]["reason"]
    sdk.memory.delete(moved["id"])
    sdk.memory.delete(sdk.memory.store(category="fact", key="fact_office", content="x")["id"])

    health = sdk.memory.health()
    assert health["total"] == 3 and health["unverified_share"] == 1.0
    assert {a["kind"] for a in health["attention"]} >= {"unverified_important", "expiring_soon"}

    tags = sdk.visualization.tags()
    assert tags["tags"][0] == {"tag": "tools", "count": 2}
    assert tags["total_memories"] == 3

    synced = sdk.memory.sync(
        [
            {"category": "fact", "key": "fact_city", "content": "Lives in Berlin"},
            {"category": "preference", "key": "preference_editor", "content": "Uses Helix"},
            {"category": "nonsense", "content": "refused"},
        ]
    )
    assert (synced["created"], synced["updated"], synced["unchanged"]) == (1, 0, 1)
    assert synced["errors"][0]["index"] == 2
    city_id = synced["results"][0]["id"]

    changes = sdk.memory.diff(since=start)
    assert {m["id"] for m in changes["created"]} == {
        editor["id"],
        shell["id"],
        soon["id"],
        city_id,
    }
    assert sdk.memory.delete(shell["id"]) == {"deleted": True, "id": shell["id"]}
    # The next window starts where the last one ended: only the delete is new.
    later = sdk.memory.diff(since=changes["until"])
    assert later["created"] == [] and later["updated"] == []
    assert later["deleted"] == [shell["id"]]

    exported = sdk.memory.export()
    assert exported["total"] == 3
    assert {m["key"] for m in exported["memories"]} >= {"preference_editor", "fact_city"}
    rows = list(csv.DictReader(io.StringIO(sdk.memory.export(format="csv"))))
    assert {r["key"]: r["content"] for r in rows}["preference_editor"] == "Uses Helix"

    with pytest.raises(SynapseError) as exc:
        sdk.memory.related("mem_doesnotexist")
    assert exc.value.status == 404


def test_sdk_errors_name_the_field(sdk):
    with pytest.raises(SynapseError) as exc:
        sdk.memory.diff(since="yesterday")
    assert exc.value.status == 400 and "since" in str(exc.value)
    with pytest.raises(SynapseError) as exc:
        sdk.memory.audit(action="explode")
    assert exc.value.status == 400 and "action" in str(exc.value)
    with pytest.raises(SynapseError) as exc:
        sdk.memory.export(format="xml")
    assert exc.value.status == 400 and "format" in str(exc.value)


def test_sdk_human_sync_is_verified(live_server, owner, owner_mind):
    person = Synapse(base_url=live_server.url, mind_key=jwt_for(owner), max_retries=0)
    synced = person.memory.sync([{"category": "identity", "key": "user_name", "content": "Olive"}])
    assert synced["created"] == 1
    assert person.memory.unverified()["total"] == 0
    assert person.memory.stats()["verified"] == 1


def test_every_webhook_method(sdk, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    secret = whsec(b"0123456789abcdef0123")
    with receiving() as receiver:
        hook = sdk.webhooks.register(url=receiver.url, events="memory.*", secret=secret)
        assert hook["events"] == ["memory.*"] and "secret" not in hook
        generated = sdk.webhooks.register(url=receiver.url, events="memory.deleted")
        assert generated["secret"].startswith("whsec_")

        listed = sdk.webhooks.list()
        assert listed["total"] == 2
        assert [w["id"] for w in listed["webhooks"]] == [hook["id"], generated["id"]]
        assert sdk.webhooks.get(hook["id"]) == hook

        ping = sdk.webhooks.test(hook["id"])
        assert ping["event"] == "ping" and ping["status"] == "delivered"
        assert ping["attempt_log"][0]["response_status"] == 200

        changed = sdk.webhooks.update(hook["id"], events="memory.created,memory.deleted")
        assert changed["events"] == ["memory.created", "memory.deleted"]
        sdk.memory.store(category="fact", key="fact_city", content="Lives in Berlin")
        assert sending.deliver_due() == 1
        payloads = receiver.verified(secret)
        assert [p["type"] for p in payloads] == ["ping", "memory.created"]
        assert payloads[1]["data"]["memory"]["key"] == "fact_city"

        assert sdk.webhooks.update(generated["id"], enabled=False)["enabled"] is False
        assert sdk.webhooks.delete(generated["id"]) == {"deleted": True, "id": generated["id"]}
    with pytest.raises(SynapseError) as exc:
        sdk.webhooks.get(generated["id"])
    assert exc.value.status == 404
    with pytest.raises(SynapseError) as exc:
        sdk.webhooks.register(url="http://8.8.8.8/hook")  # plain http to a public host
    assert exc.value.status == 400 and "url" in str(exc.value)
    assert sdk.webhooks.list()["total"] == 1
