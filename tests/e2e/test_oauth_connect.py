"""A remote MCP client connects with OAuth, the way a hosted assistant does: the official `mcp`
client discovers, registers and sends the person to the consent page, where a real browser
signs in, picks the mind and clicks Allow; the client then works as the mind's agent."""

from __future__ import annotations

import asyncio
import os
import re
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from connections.models import Connection
from memories.models import Memory
from tests.e2e.conftest import CHROMIUM_ARGS, find_chromium
from tests.factories import PASSWORD, mind_make
from tests.mcp_server import TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

# The app's loopback callback (RFC 8252). The browser's request to it is answered inside the
# browser (page.route), so nothing listens there and nothing is sent.
CALLBACK = "http://127.0.0.1:33418/callback"


class MemoryStorage:
    """Where the client keeps its registration and tokens: in memory, for one test."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@pytest.fixture
def async_unsafe(monkeypatch):
    # The browser and the client share this test's event loop; the ORM calls before and after
    # it are plain synchronous code, so Django's async-safety guard must stand aside.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_the_official_client_connects_through_the_consent_page(
    live_server, owner, owner_mind, shots, async_unsafe
):
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install puts it in the venv)")
    executable = find_chromium()
    if executable is None:
        pytest.skip("No Chromium found for the browser tests: apt-get install chromium")
    other, _ = mind_make(owner, name="Work notes")
    server_url = f"{live_server.url}/mcp"
    storage = MemoryStorage()
    seen: dict[str, str] = {}

    async def scenario() -> tuple[set[str], dict]:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS
            )
            page = await (
                await browser.new_context(viewport={"width": 1280, "height": 860})
            ).new_page()
            page.set_default_timeout(15_000)
            arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

            async def at_callback(route) -> None:
                if not arrived.done():
                    arrived.set_result(route.request.url)
                await route.fulfill(status=200, content_type="text/html", body="<p>Connected</p>")

            await page.route(re.compile("^" + re.escape(CALLBACK)), at_callback)

            async def open_in_browser(authorization_url: str) -> None:
                seen["authorization_url"] = authorization_url
                await page.goto(authorization_url)
                # Signed out: the dashboard's sign-in page first, then back to the consent.
                await page.get_by_label("Email").fill(owner.email)
                await page.get_by_label("Password").fill(PASSWORD)
                await page.get_by_role("button", name=re.compile("Log in")).click()
                await page.get_by_role("heading", name=re.compile("Connect")).wait_for()
                seen["consent"] = await page.inner_text("main")
                if os.environ.get("SYNAPSE_SCREENSHOTS"):
                    await page.screenshot(path=str(shots / "oauth-consent.png"))
                await page.get_by_label("Mind").select_option(label="Work notes")
                await page.get_by_role("button", name="Allow").click()

            async def come_back() -> AuthorizationCodeResult:
                query = parse_qs(urlsplit(await asyncio.wait_for(arrived, 30)).query)
                return AuthorizationCodeResult(
                    code=query["code"][0],
                    state=query.get("state", [None])[0],
                    iss=query.get("iss", [None])[0],
                )

            provider = OAuthClientProvider(
                server_url=server_url,
                client_metadata=OAuthClientMetadata(
                    client_name="Hosted Assistant",
                    redirect_uris=[CALLBACK],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                    token_endpoint_auth_method="none",
                ),
                storage=storage,
                redirect_handler=open_in_browser,
                callback_handler=come_back,
            )
            async with (
                httpx2.AsyncClient(auth=provider, timeout=30) as http,
                streamable_http_client(server_url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                stored = await session.call_tool(
                    "remember",
                    {"category": "fact", "key": "fact_home_city", "content": "Lives in Munich"},
                )
                assert stored.is_error is False, stored.content
            await browser.close()
            return tools, stored.structured_content

    tools, stored = asyncio.run(scenario())

    assert tools == TOOLS  # the agent's tools: no verify
    assert stored["action"] == "created"
    memory = Memory.objects.get(key="fact_home_city")
    assert memory.mind == other  # the mind picked on the consent page
    assert memory.verified is False
    assert not Memory.objects.filter(mind=owner_mind.mind).exists()
    assert "Hosted Assistant" in seen["consent"]
    assert "code_challenge_method=S256" in seen["authorization_url"]
    assert "resource=" in seen["authorization_url"]
    connection = Connection.objects.get()
    assert (connection.person, connection.mind) == (owner, other)
    assert connection.last_used_at is not None
    assert storage.tokens is not None and storage.tokens.refresh_token
