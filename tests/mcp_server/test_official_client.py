"""The official `mcp` client against a live server: streamable HTTP, and stdio via the bridge."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from memories.models import Memory
from tests.mcp_server import TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]


def http_client(key: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)


async def _open(url: str, key: str):
    """A ClientSession over streamable HTTP (not yet initialized) and the stack that closes it."""
    stack = AsyncExitStack()
    client = await stack.enter_async_context(http_client(key))
    read, write = await stack.enter_async_context(streamable_http_client(url, http_client=client))
    session = await stack.enter_async_context(ClientSession(read, write))
    return session, stack


def structured(result) -> dict:
    assert result.is_error is False, result.content
    return result.structured_content


def test_session_lists_and_calls_every_tool(live_server, owner_mind):
    url = f"{live_server.url}/mcp"

    async def scenario():
        session, stack = await _open(url, owner_mind.key)
        async with stack:
            init = await session.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.server_info.name == "synapse"
            assert "recall" in (init.instructions or "")

            tools = (await session.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            await session.send_ping()

            created = structured(
                await session.call_tool(
                    "remember",
                    {
                        "category": "preference",
                        "key": "preference_editor",
                        "content": "Uses Neovim for Python work",
                        "tags": ["tools"],
                        "priority": "high",
                        "expires_at": "2100-01-01T00:00:00Z",
                    },
                )
            )
            assert created["action"] == "created"
            again = structured(
                await session.call_tool(
                    "remember",
                    {
                        "category": "preference",
                        "key": "preference_editor",
                        "content": "Uses Neovim for Python work",
                    },
                )
            )
            assert (again["action"], again["id"]) == ("unchanged", created["id"])
            structured(
                await session.call_tool(
                    "remember", {"category": "context", "content": "Sprint ends", "tags": ["work"]}
                )
            )

            recall = await session.call_tool("recall", {"budget": 500})
            assert recall.is_error is False
            text = recall.content[0].text
            assert text.startswith("Mind: Olive's Mind\nMemories: 2 total")
            assert "preference_editor" in text

            found = structured(await session.call_tool("search", {"q": "neovim python"}))
            assert found["results"][0]["id"] == created["id"]
            listed = structured(await session.call_tool("list_memories", {"category": "context"}))
            assert listed["total"] == 1
            tagged = structured(await session.call_tool("memories_by_tag", {"tag": "TOOLS"}))
            assert [m["id"] for m in tagged["memories"]] == [created["id"]]
            expiring = structured(await session.call_tool("expiring", {"within": "2w"}))
            assert expiring["total"] == 0

            resources = (await session.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["synapse://recall"]
            read = await session.read_resource("synapse://recall")
            assert read.contents[0].text.startswith("Mind: Olive's Mind")

            gone = structured(await session.call_tool("forget", {"id": created["id"]}))
            assert gone == {
                "deleted": True,
                "id": created["id"],
                "category": "preference",
                "key": "preference_editor",
            }

            bad = await session.call_tool("remember", {"category": "gossip", "content": "x"})
            assert bad.is_error is True
            assert "category: Must be one of" in bad.content[0].text
            bad_forget = await session.call_tool("forget", {"id": created["id"]})
            assert bad_forget.is_error is True
            assert "No memory" in bad_forget.content[0].text

            with pytest.raises(MCPError) as unknown:
                await session.call_tool("verify", {"id": created["id"]})
            assert unknown.value.error.code == -32602

    asyncio.run(scenario())
    assert Memory.objects.filter(mind=owner_mind.mind).count() == 1


def test_stranger_key_cannot_reach_the_owners_memories(live_server, owner_mind, stranger_mind):
    url = f"{live_server.url}/mcp"
    owners = Memory.objects.create(
        mind=owner_mind.mind, category="fact", key="fact_secret", content="vault code 1234"
    )

    async def scenario():
        session, stack = await _open(url, stranger_mind.key)
        async with stack:
            await session.initialize()
            recall = (await session.call_tool("recall", {})).content[0].text
            assert "fact_secret" not in recall
            assert "Stranger's Mind" in recall
            found = structured(await session.call_tool("search", {"q": "vault code"}))
            assert found["total"] == 0
            listed = structured(await session.call_tool("list_memories", {}))
            assert listed["total"] == 0
            forget = await session.call_tool("forget", {"id": owners.id})
            assert forget.is_error is True
            forget_by_key = await session.call_tool(
                "forget", {"category": "fact", "key": "fact_secret"}
            )
            assert forget_by_key.is_error is True
            with pytest.raises(MCPError) as missing:
                await session.read_resource(f"synapse://memory/{owners.id}")
            assert missing.value.error.code == -32002

    asyncio.run(scenario())
    assert Memory.objects.filter(pk=owners.id).exists()


def test_bad_key_is_refused(live_server, owner_mind):
    url = f"{live_server.url}/mcp"

    async def scenario():
        async with http_client("mk_" + "n" * 43) as client:
            raw = await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert raw.status_code == 401
            assert raw.headers["www-authenticate"].startswith('Bearer realm="synapse"')
        session, stack = await _open(url, "mk_" + "n" * 43)
        async with stack:
            with pytest.raises(MCPError) as refused:
                await session.initialize()
            assert "not valid" in refused.value.error.message

    asyncio.run(scenario())


def test_auto_mode_client_falls_back_to_the_handshake(live_server, owner_mind):
    # The high-level Client probes the 2026 `server/discover` first; Synapse speaks the
    # handshake era, and the client must settle on it without an error.
    url = f"{live_server.url}/mcp"

    async def scenario():
        async with http_client(owner_mind.key) as client:
            transport = streamable_http_client(url, http_client=client)
            async with Client(transport) as mcp:
                result = await mcp.call_tool("remember", {"category": "note", "content": "hi"})
                assert result.is_error is False
                tools = await mcp.list_tools()
                assert {tool.name for tool in tools.tools} == TOOLS

    asyncio.run(scenario())


def test_stdio_bridge_with_the_official_stdio_client(live_server, owner_mind):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_server.stdio", "--url", live_server.url],
        env={"SYNAPSE_MIND_KEY": owner_mind.key, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )

    async def scenario():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "synapse"
            tools = (await session.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            created = structured(
                await session.call_tool(
                    "remember", {"category": "fact", "key": "fact_city", "content": "Berlin"}
                )
            )
            recall = await session.call_tool("recall", {})
            assert "fact_city" in recall.content[0].text
            bad = await session.call_tool("remember", {"category": "fact"})
            assert bad.is_error is True
            assert structured(await session.call_tool("forget", {"id": created["id"]}))["deleted"]

    asyncio.run(scenario())


def test_stdio_bridge_answers_requests_even_when_refused(live_server, db):
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    completed = subprocess.run(
        [sys.executable, "-m", "mcp_server.stdio", "--url", live_server.url, "--key", "mk_bad"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert completed.returncode == 0
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    assert len(answers) == 1  # the notification gets no output
    assert answers[0]["id"] == 1
    assert "not valid" in answers[0]["error"]["message"]
