"""/chat (API.md §9.9): the agent polls, replies and asks its status with its Mind Key;
people read the history and unread counts and write with their login. The public client's
`chat` calls against a live server."""

from __future__ import annotations

import pytest
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from chat.models import ChatMessage
from chat.rules import HISTORY_MAX, MAX_CONTENT_LENGTH
from tests.api.memory_helpers import assert_invalid
from tests.conftest import bearer_client, jwt_for
from tests.factories import share_make, user_make

pytestmark = pytest.mark.django_db

MESSAGE_FIELDS = {"id", "role", "content", "reply_to_id", "author", "created_at", "read_at"}
AGENT_SIDE = ["/chat/poll", "/chat/status"]
PEOPLE_SIDE = ["/chat/history", "/chat/unread"]


def send(client, content="Hello", **body):
    response = client.post("/chat/send", {"content": content, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def reply(client, content="Hi", **body):
    response = client.post("/chat/reply", {"content": content, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_person_writes_the_agent_polls_and_replies(human, agent, owner):
    sent = send(human, "What is on today?")
    assert set(sent) == MESSAGE_FIELDS
    assert sent | {"created_at": None} == {
        "id": 1,
        "role": "human",
        "content": "What is on today?",
        "reply_to_id": None,
        "author": owner.email,
        "created_at": None,
        "read_at": None,
    }
    polled = agent.get("/chat/poll").json()
    assert [m["id"] for m in polled["messages"]] == [1] and polled["last_id"] == 1
    assert polled["messages"][0]["read_at"] is not None
    assert agent.get("/chat/poll?since=1").json() == {"messages": [], "last_id": 1}
    answer = reply(agent, "Two meetings", reply_to_id=1)
    assert answer["role"] == "agent" and answer["author"] is None and answer["reply_to_id"] == 1
    assert human.get("/chat/unread?role=human").json() == {"unread": 1}
    history = human.get("/chat/history").json()
    assert [m["id"] for m in history["messages"]] == [1, 2] and history["total"] == 2
    assert human.get("/chat/unread?role=human").json() == {"unread": 0}  # read now
    assert human.get("/chat/unread").json() == {"unread": 0}  # the agent read message 1


def test_status_says_whether_the_agent_is_online(agent, human):
    assert agent.get("/chat/status").json() == {
        "agent_online": False,
        "last_seen_at": None,
        "unread_for_agent": 0,
        "unread_for_human": 0,
    }
    send(human)
    agent.get("/chat/poll")
    reply(agent)
    status = agent.get("/chat/status").json()
    assert status["agent_online"] is True and status["last_seen_at"].endswith("Z")
    assert (status["unread_for_agent"], status["unread_for_human"]) == (0, 1)


@pytest.mark.parametrize("path", ["/chat/poll/", "/chat/status/", "/chat/status"])
def test_paths_work_with_and_without_a_trailing_slash(agent, path):
    assert agent.get(path).status_code == 200


def test_history_is_the_last_messages_newest_last(human):
    for i in range(4):
        send(human, f"m{i}")
    body = human.get("/chat/history/?limit=2").json()
    assert [m["content"] for m in body["messages"]] == ["m2", "m3"] and body["total"] == 4


# --- Each side's calls are its own -------------------------------------------------------------


@pytest.mark.parametrize("path", AGENT_SIDE)
def test_a_person_gets_403_on_the_agents_side(human, path):
    response = human.get(path)
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert "Mind Key" in response.json()["detail"]


def test_a_person_cannot_reply_as_the_agent(human):
    response = human.post("/chat/reply", {"content": "I am the agent"}, format="json")
    assert response.status_code == 403
    assert not ChatMessage.objects.exists()


@pytest.mark.parametrize("path", PEOPLE_SIDE)
def test_the_agent_gets_403_on_the_peoples_side(agent, path):
    response = agent.get(path)
    assert response.status_code == 403
    assert "person's login" in response.json()["detail"]


def test_the_agent_cannot_send_as_a_person(agent):
    assert agent.post("/chat/send", {"content": "x"}, format="json").status_code == 403
    assert not ChatMessage.objects.exists()


@pytest.mark.parametrize("path", [*AGENT_SIDE, *PEOPLE_SIDE])
def test_no_credentials_is_401(anon, path):
    assert anon.get(path).status_code == 401


# --- Bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "  "}, "content"),
        ({"content": "x" * (MAX_CONTENT_LENGTH + 1)}, "content"),
        ({"content": ["x"]}, "content"),
        ({"content": "x", "reply_to_id": 7}, "reply_to_id"),
        ({"content": "x", "reply_to_id": -1}, "reply_to_id"),
        ({"content": "x", "reply_to_id": "one"}, "reply_to_id"),
        ({"content": "x", "author": "someone@else"}, "author"),
    ],
)
@pytest.mark.parametrize("side", ["human", "agent"])
def test_bad_bodies_are_400_naming_the_field(request, side, body, field):
    client = request.getfixturevalue(side)
    path = "/chat/send" if side == "human" else "/chat/reply"
    assert_invalid(client.post(path, body, format="json"), field)
    assert not ChatMessage.objects.exists()


def test_a_body_that_is_not_an_object_is_400(human):
    assert_invalid(human.post("/chat/send", [1], format="json"), "non_field_errors")


@pytest.mark.parametrize(
    ("client", "path", "field"),
    [
        ("agent", "/chat/poll?since=x", "since"),
        ("agent", "/chat/poll?since=-1", "since"),
        ("human", "/chat/history?limit=0", "limit"),
        ("human", f"/chat/history?limit={HISTORY_MAX + 1}", "limit"),
        ("human", "/chat/unread?role=robot", "role"),
        ("agent", "/chat/status?mind=m_someoneelse", "mind"),
    ],
)
def test_bad_parameters_are_400_naming_them(request, client, path, field):
    assert_invalid(request.getfixturevalue(client).get(path), field)


def test_a_reply_to_another_minds_message_is_400(agent, stranger_agent, human):
    send(human)  # message 1 of the owner's mind
    response = stranger_agent.post("/chat/reply", {"content": "x", "reply_to_id": 1}, format="json")
    assert_invalid(response, "reply_to_id")


# --- Isolation and sharing ------------------------------------------------------------------


def test_another_minds_agent_sees_nothing_of_this_chat(human, stranger_agent):
    send(human, "owner's secret message")
    polled = stranger_agent.get("/chat/poll?since=0").json()
    assert polled == {"messages": [], "last_id": 0}
    assert stranger_agent.get("/chat/status").json()["unread_for_agent"] == 0
    assert ChatMessage.objects.get().read_at is None  # the owner's agent has not read it


def test_a_person_naming_a_mind_not_theirs_gets_404(human, other_human, mind):
    send(human)
    for path in ("/chat/history", "/chat/unread"):
        assert other_human.get(f"{path}?mind={mind.pk}").status_code == 404
    response = other_human.post(f"/chat/send?mind={mind.pk}", {"content": "x"}, format="json")
    assert response.status_code == 404
    assert ChatMessage.objects.count() == 1


def test_a_reader_reads_and_a_writer_writes(mind):
    reader, writer = user_make("reader@example.com"), user_make("writer@example.com")
    share_make(mind, reader, "read")
    share_make(mind, writer, "write")
    as_reader, as_writer = bearer_client(jwt_for(reader)), bearer_client(jwt_for(writer))
    sent = as_writer.post(f"/chat/send?mind={mind.pk}", {"content": "hi"}, format="json")
    assert sent.status_code == 201 and sent.json()["author"] == "writer@example.com"
    refused = as_reader.post(f"/chat/send?mind={mind.pk}", {"content": "hi"}, format="json")
    assert refused.status_code == 403
    assert as_reader.get(f"/chat/history?mind={mind.pk}").json()["total"] == 1
    assert as_reader.get(f"/chat/unread?mind={mind.pk}&role=agent").json() == {"unread": 1}


# --- The public client ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_clients_chat_calls_work_unchanged(live_server, owner, owner_mind):
    person = bearer_client(jwt_for(owner))
    sdk = Synapse(
        base_url=live_server.url, mind_key=owner_mind.key, jwt=jwt_for(owner), max_retries=0
    )
    assert sdk.chat.poll() == {"messages": [], "last_id": 0}
    person.post("/chat/send", {"content": "Ping"}, format="json")
    person.post("/chat/send", {"content": "Are you there?"}, format="json")
    polled = sdk.chat.poll()
    assert [m["content"] for m in polled["messages"]] == ["Ping", "Are you there?"]
    assert sdk.chat.poll(since_id=1)["messages"][0]["id"] == 2
    answer = sdk.chat.reply("Pong", reply_to_id=1)
    assert answer["id"] == 3 and answer["reply_to_id"] == 1
    assert sdk.chat.reply("And hello")["reply_to_id"] is None
    status = sdk.chat.status()
    assert status["agent_online"] is True and status["unread_for_human"] == 2
    assert sdk.chat.unread() == {"unread": 0}
    assert sdk.chat.unread(role="human") == {"unread": 2}
    history = sdk.chat.history(limit=3)
    assert [m["id"] for m in history["messages"]] == [2, 3, 4] and history["total"] == 4
    assert sdk.chat.unread(role="human") == {"unread": 0}
    with pytest.raises(SynapseError) as refused:
        sdk.chat.reply("")
    assert refused.value.status == 400 and "content" in refused.value.body
