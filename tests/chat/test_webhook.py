"""Every chat message is the webhook event `chat.message`, recorded with the message and
delivered signed to the mind's webhooks that take it."""

from __future__ import annotations

import pytest

from chat import services
from tests.factories import AGENT
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = whsec(b"chat-events-secret!!")


@pytest.fixture(autouse=True)
def _private_allowed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True


def test_a_subscribed_webhook_gets_each_message(mind, owner):
    with receiving() as receiver:
        webhook_create(
            mind=mind, body={"url": receiver.url, "secret": SECRET, "events": ["chat.message"]}
        )
        services.chat_send(mind=mind, user=owner, body={"content": "Are you there?"})
        services.chat_reply(mind=mind, actor=AGENT, body={"content": "Yes", "reply_to_id": 1})
        assert sending.deliver_due() == 2
        payloads = receiver.verified(SECRET)
    assert [p["type"] for p in payloads] == ["chat.message", "chat.message"]
    first, second = (p["data"] for p in payloads)
    assert first["mind_id"] == mind.pk
    assert first["message"]["content"] == "Are you there?"
    assert first["message"]["author"] == owner.email
    assert first["actor"] == {"type": "user", "name": owner.email}
    assert second["message"] | {"created_at": None} == {
        "id": 2,
        "role": "agent",
        "content": "Yes",
        "reply_to_id": 1,
        "author": None,
        "created_at": None,
        "read_at": None,
    }
    assert second["actor"] == {"type": "agent", "name": AGENT.name}


@pytest.mark.parametrize("events", ["chat.*", "*"])
def test_the_chat_family_and_everything_take_it(mind, owner, events):
    with receiving() as receiver:
        webhook_create(mind=mind, body={"url": receiver.url, "secret": SECRET, "events": events})
        services.chat_send(mind=mind, user=owner, body={"content": "ping"})
        assert sending.deliver_due() == 1


def test_a_memory_webhook_does_not_take_it(mind, owner):
    with receiving() as receiver:
        webhook_create(
            mind=mind, body={"url": receiver.url, "secret": SECRET, "events": "memory.*"}
        )
        services.chat_send(mind=mind, user=owner, body={"content": "ping"})
        assert sending.deliver_due() == 0
        assert receiver.received == []
