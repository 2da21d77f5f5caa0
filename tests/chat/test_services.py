"""The chat's core: numbering per mind, replies within the mind, polls that mark read, the
agent's online window, the limits, the audit trail, the webhook event and keeping a
message as a memory (API.md §9.9)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from chat import selectors, services
from chat.models import ChatEvent, ChatMessage
from chat.rules import MAX_CONTENT_LENGTH, ONLINE_WINDOW, POLL_MAX
from core.errors import Invalid, NotFound
from memories.models import Memory
from tests.factories import AGENT

pytestmark = pytest.mark.django_db


def send(mind, user, content="Hello", **body):
    return services.chat_send(mind=mind, user=user, body={"content": content, **body})


def reply(mind, content="Hi", **body):
    return services.chat_reply(mind=mind, actor=AGENT, body={"content": content, **body})


def test_messages_are_numbered_per_mind(mind, owner, stranger_mind):
    assert [send(mind, owner).number, reply(mind).number, send(mind, owner).number] == [1, 2, 3]
    theirs = stranger_mind.mind
    assert services.chat_reply(mind=theirs, actor=AGENT, body={"content": "x"}).number == 1


def test_a_message_as_json(mind, owner):
    message = send(mind, owner, "What is my name?")
    answer = reply(mind, "Michael", reply_to_id=message.number)
    assert selectors.message_to_dict(message) == {
        "id": 1,
        "role": "human",
        "content": "What is my name?",
        "reply_to_id": None,
        "author": owner.email,
        "created_at": selectors.message_to_dict(message)["created_at"],
        "read_at": None,
    }
    as_json = selectors.message_to_dict(answer)
    assert as_json["author"] is None and as_json["role"] == "agent"
    assert as_json["reply_to_id"] == 1 and as_json["created_at"].endswith("Z")


def test_a_reply_names_a_message_of_the_same_mind(mind, owner, stranger_mind):
    services.chat_send(
        mind=stranger_mind.mind, user=stranger_mind.mind.owner, body={"content": "x"}
    )
    with pytest.raises(Invalid) as refused:
        reply(mind, reply_to_id=1)  # message 1 is the stranger's mind's
    assert set(refused.value.fields) == {"reply_to_id"}
    send(mind, owner)
    assert reply(mind, reply_to_id=1).reply_to == 1
    with pytest.raises(Invalid):
        reply(mind, reply_to_id=99)
    assert ChatMessage.objects.filter(mind=mind).count() == 2  # nothing written when refused


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "   \n"}, "content"),
        ({"content": 5}, "content"),
        ({"content": "x" * (MAX_CONTENT_LENGTH + 1)}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "x", "reply_to_id": 0}, "reply_to_id"),
        ({"content": "x", "reply_to_id": "1"}, "reply_to_id"),
        ({"content": "x", "reply_to_id": True}, "reply_to_id"),
        ({"content": "x", "role": "agent"}, "role"),
        ([], "non_field_errors"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(mind, owner, body, field):
    with pytest.raises(Invalid) as refused:
        services.chat_send(mind=mind, user=owner, body=body)
    assert field in refused.value.fields
    assert not ChatMessage.objects.exists()


def test_the_longest_content_is_taken(mind, owner):
    assert len(send(mind, owner, "x" * MAX_CONTENT_LENGTH).content) == MAX_CONTENT_LENGTH


def test_a_poll_hands_over_the_peoples_messages_oldest_first_and_marks_them_read(mind, owner):
    send(mind, owner, "one")
    reply(mind, "not for the agent")
    send(mind, owner, "two")
    poll = services.chat_poll(mind=mind, actor=AGENT)
    assert [m.content for m in poll.messages] == ["one", "two"]
    assert poll.last_id == 3
    assert all(m.read_at is not None for m in poll.messages)
    assert ChatMessage.objects.filter(role="human", read_at__isnull=True).count() == 0
    # Without since: only what it has not read; with since: everything after it.
    assert services.chat_poll(mind=mind, actor=AGENT).messages == []
    assert services.chat_poll(mind=mind, actor=AGENT).last_id == 0
    again = services.chat_poll(mind=mind, actor=AGENT, since=1)
    assert [m.number for m in again.messages] == [3] and again.last_id == 3
    assert services.chat_poll(mind=mind, actor=AGENT, since=3).last_id == 3


def test_a_poll_hands_over_at_most_so_many(mind, owner):
    for i in range(POLL_MAX + 2):
        send(mind, owner, f"m{i}")
    first = services.chat_poll(mind=mind, actor=AGENT)
    assert len(first.messages) == POLL_MAX and first.last_id == POLL_MAX
    rest = services.chat_poll(mind=mind, actor=AGENT, since=first.last_id)
    assert [m.number for m in rest.messages] == [POLL_MAX + 1, POLL_MAX + 2]


def test_the_agent_is_online_for_a_minute_after_its_poll(mind):
    assert selectors.chat_status(mind=mind)["agent_online"] is False
    now = timezone.now()
    services.chat_poll(mind=mind, actor=AGENT, now=now)
    status = selectors.chat_status(mind=mind, now=now + ONLINE_WINDOW)
    assert status["agent_online"] is True and status["last_seen_at"] is not None
    later = now + ONLINE_WINDOW + timedelta(seconds=1)
    assert selectors.chat_status(mind=mind, now=later)["agent_online"] is False


def test_unread_counts_each_side(mind, owner):
    send(mind, owner)
    send(mind, owner)
    reply(mind)
    status = selectors.chat_status(mind=mind)
    assert (status["unread_for_agent"], status["unread_for_human"]) == (2, 1)
    assert selectors.chat_unread(mind=mind, role="agent") == 2
    assert selectors.chat_unread_for_people(mind_ids=[mind.pk]) == {mind.pk: 1}
    assert services.chat_read(mind=mind, user=owner, upto=3) == 1
    assert services.chat_read(mind=mind, user=owner, upto=3) == 0
    assert selectors.chat_unread(mind=mind, role="human") == 0
    assert selectors.chat_unread_for_people(mind_ids=[mind.pk]) == {}


def test_history_is_the_last_messages_newest_last(mind, owner):
    for i in range(5):
        send(mind, owner, f"m{i}")
    messages, total = selectors.chat_history(mind=mind, limit=3)
    assert [m.content for m in messages] == ["m2", "m3", "m4"] and total == 5


def test_every_write_is_audited(mind, owner):
    send(mind, owner)
    reply(mind, reply_to_id=1)
    services.chat_poll(mind=mind, actor=AGENT)
    services.chat_read(mind=mind, user=owner, upto=2)
    services.chat_remember(mind=mind, user=owner, number=1)
    rows = list(
        ChatEvent.objects.filter(mind=mind)
        .order_by("id")
        .values_list("action", "actor_type", "actor", "number", "count")
    )
    assert rows == [
        ("send", "user", owner.email, 1, 1),
        ("reply", "agent", AGENT.name, 2, 1),
        ("read", "agent", AGENT.name, 1, 1),
        ("read", "user", owner.email, 2, 1),
        ("remember", "user", owner.email, 1, 1),
    ]


def test_a_message_kept_as_a_memory_is_a_verified_persons_note(mind, owner):
    reply(mind, "The deploy key lives in the vault")
    result = services.chat_remember(mind=mind, user=owner, number=1)
    memory = Memory.objects.get(pk=result.memory.pk)
    assert memory.source == "user" and memory.verified
    assert memory.category == "note" and memory.tags == ["chat"]
    assert memory.content == "The deploy key lives in the vault"
    again = services.chat_remember(mind=mind, user=owner, number=1)
    assert again.memory.pk == memory.pk and Memory.objects.filter(mind=mind).count() == 1
    with pytest.raises(NotFound):
        services.chat_remember(mind=mind, user=owner, number=2)


def test_deleting_the_mind_deletes_its_chat(mind, owner):
    send(mind, owner)
    mind.delete()
    assert not ChatMessage.objects.exists() and not ChatEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_writers_at_once_never_take_the_same_number(mind, owner):
    if connection.vendor == "sqlite" and connection.settings_dict["NAME"].startswith(
        "file:memorydb"
    ):
        pytest.skip("an in-memory SQLite database is one connection")
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(5):
                reply(mind, f"{n}-{i}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    numbers = sorted(ChatMessage.objects.filter(mind=mind).values_list("number", flat=True))
    assert numbers == list(range(1, 21))
