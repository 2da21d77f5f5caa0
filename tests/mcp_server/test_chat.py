"""The chat's MCP tools: check_messages (the agent's poll) and reply, with the rules of
GET /chat/poll and POST /chat/reply."""

from __future__ import annotations

import pytest

from chat import selectors
from chat.models import ChatMessage
from chat.services import chat_send
from tests.mcp_server.test_tools import Mcp

pytestmark = pytest.mark.django_db


@pytest.fixture
def mcp(owner_mind) -> Mcp:
    return Mcp(owner_mind.key)


def test_the_descriptions_say_when_to_call_them(mcp):
    tools = {t["name"]: t for t in mcp.rpc("tools/list")["result"]["tools"]}
    check = tools["check_messages"]["description"]
    assert "start of every session" in check and "finish a task" in check
    assert "asked you" in tools["reply"]["description"]
    assert tools["reply"]["inputSchema"]["required"] == ["content"]
    assert (
        "check_messages"
        in mcp.rpc("initialize", {"protocolVersion": "2025-06-18"})["result"]["instructions"]
    )


def test_check_messages_hands_over_and_marks_read_then_reply_answers(mcp, mind, owner):
    chat_send(mind=mind, user=owner, body={"content": "Did the deploy work?"})
    checked = mcp.ok("check_messages")
    assert [m["content"] for m in checked["messages"]] == ["Did the deploy work?"]
    assert checked["messages"][0]["author"] == owner.email and checked["last_id"] == 1
    assert mcp.ok("check_messages") == {"messages": [], "last_id": 0}
    assert len(mcp.ok("check_messages", {"since": 0})["messages"]) == 1
    answered = mcp.ok("reply", {"content": "Yes, at 10:02", "reply_to_id": 1})
    assert answered["id"] == 2 and answered["role"] == "agent" and answered["reply_to_id"] == 1
    status = selectors.chat_status(mind=mind)
    assert status["agent_online"] and status["unread_for_human"] == 1


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("reply", {}, "content"),
        ("reply", {"content": " "}, "content"),
        ("reply", {"content": "x", "reply_to_id": 5}, "reply_to_id"),
        ("reply", {"content": "x", "role": "human"}, "role"),
        ("check_messages", {"since": -1}, "since"),
        ("check_messages", {"since": "x"}, "since"),
    ],
)
def test_bad_arguments_are_tool_errors(mcp, name, arguments, fragment):
    assert fragment in mcp.refused(name, arguments)
    assert not ChatMessage.objects.exists()


def test_another_minds_agent_sees_nothing_of_this_chat(mind, owner, stranger_mind):
    chat_send(mind=mind, user=owner, body={"content": "for my agent only"})
    stranger = Mcp(stranger_mind.key)
    assert stranger.ok("check_messages", {"since": 0}) == {"messages": [], "last_id": 0}
    assert "reply_to_id" in stranger.refused("reply", {"content": "x", "reply_to_id": 1})
    assert ChatMessage.objects.get().read_at is None
