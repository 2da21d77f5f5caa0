"""The set-up snippets (curl, Python, and MCP for Claude Desktop, Cursor and Claude Code):
run as printed they change nothing an agent stored, and the mind's settings show them again
later without the key."""

from __future__ import annotations

import html
import json
import re
import shlex
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memories.models import Memory
from minds.models import Mind
from tests.conftest import bearer_client
from tests.dashboard.conftest import agent_store, shown

pytestmark = pytest.mark.django_db

# What an agent keeps about its person, under the keys an agent picks.
REAL = [
    ("preference", "preference_editor", "Uses Neovim with the LazyVim setup"),
    ("note", "note_meeting", "Standup moved to 10:00"),
    ("fact", "fact_office_days", "Works from home every day except Wednesday"),
]


# The MCP set-ups: JSON for Claude Desktop and Cursor, `claude mcp add` lines for Claude Code.
MCP_JSON = ("mcp-desktop", "mcp-cursor", "mcp-cursor-stdio")
MCP_COMMANDS = ("mcp-claude-code", "mcp-claude-code-stdio")
SNIPPETS = ("curl", "python", *MCP_JSON, *MCP_COMMANDS)


def code(page_html: str, snippet: str) -> str:
    """The text of one snippet as a person copies it."""
    found = re.search(rf'<pre id="code-{snippet}"[^>]*>(.*?)</pre>', page_html, re.S)
    assert found, snippet
    return html.unescape(found[1])


def key_page(web, mind: Mind) -> str:
    """A fresh key's page (after a rotation): the snippets carry the real key."""
    url = f"/dashboard/minds/{mind.pk}/rotate-key/"
    return web.post(url, {"form_token": shown(web, url)["form_token"]}).content.decode()


def bridge() -> str:
    return str(Path(settings.BASE_DIR) / "mcp_server" / "stdio.py")


def mcp_setups(page_html: str, key: str, base: str = "http://testserver") -> None:
    """Each MCP set-up on the page parses (JSON with json.loads, a command as the shell
    splits it) and names this server, the key and the stdio bridge of this checkout."""
    over_url = {"url": f"{base}/mcp", "headers": {"Authorization": f"Bearer {key}"}}
    over_stdio = {
        "command": "python3",
        "args": [bridge(), "--url", base],
        "env": {"SYNAPSE_MIND_KEY": key},
    }
    servers = {name: json.loads(code(page_html, name))["mcpServers"] for name in MCP_JSON}
    assert servers == {
        "mcp-desktop": {"synapse": over_stdio},
        "mcp-cursor": {"synapse": over_url},
        "mcp-cursor-stdio": {"synapse": over_stdio},
    }
    assert shlex.split(code(page_html, "mcp-claude-code")) == [
        *("claude", "mcp", "add", "--transport", "http", "synapse", f"{base}/mcp"),
        *("--header", f"Authorization: Bearer {key}"),
    ]
    assert shlex.split(code(page_html, "mcp-claude-code-stdio")) == [
        *("claude", "mcp", "add", "synapse", "-e", f"SYNAPSE_MIND_KEY={key}", "--"),
        *("python3", bridge(), "--url", base),
    ]


def memories_of(mind: Mind) -> dict[tuple[str, str], str]:
    return {(m.category, m.key): m.content for m in Memory.objects.filter(mind=mind)}


class _SdkThroughTestClient:
    """`synapse_memory.Synapse` as the snippet calls it, sending each call through Django's
    test client with the snippet's key."""

    def __init__(self, base_url: str, key: str) -> None:
        self.client = bearer_client(key)
        self.memory = self

    def recall(self) -> str:
        return b"".join(self.client.get("/memory/recall").streaming_content).decode()

    def store(self, **params: Any) -> dict:
        response = self.client.post("/memory", params, format="json")
        assert response.status_code in (200, 201), response.content
        return response.json()

    def search(self, q: str) -> dict:
        return self.client.get("/memory/search", {"q": q}).json()


def test_the_curl_snippets_store_touches_nothing_an_agent_stored(web, mind):
    for category, key, content in REAL:
        agent_store(mind, key=key, category=category, content=content)
    before = memories_of(mind)
    page = key_page(web, mind)
    curl = code(page, "curl")
    raw_key = re.search(r"export SYNAPSE_KEY='([^']+)'", curl)[1]
    assert Mind.objects.for_key(raw_key) == mind
    body = json.loads(re.search(r"-d '(\{.*?\})'", curl, re.S)[1])

    response = bearer_client(raw_key).post("/memory", body, format="json")
    assert response.status_code == 201  # a new memory, not an update of one of them
    after = memories_of(mind)
    assert {k: after[k] for k in before} == before
    [(category, key)] = set(after) - set(before)
    assert key.startswith("synapse_sample_") and key not in {k for _, k, _ in REAL}


def test_the_python_snippet_run_as_printed_touches_nothing_an_agent_stored(web, mind, monkeypatch):
    for category, key, content in REAL:
        agent_store(mind, key=key, category=category, content=content)
    before = memories_of(mind)
    python = code(key_page(web, mind), "python")
    monkeypatch.setitem(
        sys.modules, "synapse_memory", types.SimpleNamespace(Synapse=_SdkThroughTestClient)
    )
    exec(compile(python, "snippet.py", "exec"), {})  # as a person runs it, twice
    exec(compile(python, "snippet.py", "exec"), {})
    after = memories_of(mind)
    assert {k: after[k] for k in before} == before
    assert [k for k in after if k not in before] == [("note", "synapse_sample_connection_check")]


def test_every_snippet_on_the_key_page_carries_the_new_key(web, mind):
    page = key_page(web, mind)
    raw_key = re.search(r'id="mind-key" type="text" readonly value="([^"]+)"', page)[1]
    for snippet in SNIPPETS:
        assert raw_key in code(page, snippet), snippet
    mcp_setups(page, raw_key)


def test_every_mcp_set_up_has_a_heading_and_a_copy_button_of_its_own(web, mind):
    page = web.get(f"/dashboard/minds/{mind.pk}/key/").content.decode()
    assert 'id="snippet-mcp">Connect an MCP client</h3>' in page
    for client in ("Claude Desktop", "Cursor", "Claude Code"):
        assert f"<summary>{client}</summary>" in page
    for name in MCP_JSON + MCP_COMMANDS:
        assert f'aria-labelledby="snippet-{name}"' in page and f'<h4 id="snippet-{name}">' in page
        button = f'data-copy-target="code-{name}">Copy<span class="visually-hidden"> the '
        assert button in page, name
    assert page.count("data-copy-target=") == len(SNIPPETS)  # the key itself has none here


def test_the_key_page_shows_the_mcp_set_ups_again_with_the_placeholder(web, owner_mind):
    mind = owner_mind.mind
    page = web.get(f"/dashboard/minds/{mind.pk}/key/").content.decode()
    mcp_setups(page, "YOUR_MIND_KEY")
    assert owner_mind.key not in page and owner_mind.key[11:] not in page


def test_a_checkout_path_with_a_space_or_a_backslash_stays_one_argument(web, mind, settings):
    settings.BASE_DIR = Path('/srv/my synapse\\ "copy"')  # the settings fixture undoes it
    page = key_page(web, mind)
    raw_key = re.search(r'id="mind-key" type="text" readonly value="([^"]+)"', page)[1]
    assert bridge() == '/srv/my synapse\\ "copy"/mcp_server/stdio.py'
    mcp_setups(page, raw_key)


def test_the_settings_show_the_snippets_again_without_the_key(web, owner_mind):
    mind = owner_mind.mind
    page = web.get(f"/dashboard/minds/{mind.pk}/settings/")
    assert page.status_code == 200
    text = page.content.decode()
    for snippet in SNIPPETS:
        assert "YOUR_MIND_KEY" in code(text, snippet), snippet
    mcp_setups(text, "YOUR_MIND_KEY")
    assert owner_mind.key not in text and owner_mind.key[11:] not in text
    assert 'id="snippets"' in text and "Give your agent its memory" in text
    assert f'href="/dashboard/minds/{mind.pk}/rotate-key/">Rotate the key</a>' in text
    assert mind.key_prefix in text  # says which key goes there, by its prefix only


def test_a_revoked_minds_settings_snippets_send_to_make_a_new_key(web, mind):
    web.post(f"/dashboard/minds/{mind.pk}/revoke-key/")
    text = web.get(f"/dashboard/minds/{mind.pk}/settings/").content.decode()
    assert "YOUR_MIND_KEY" in code(text, "curl") and "Make a new key above" in text


def test_another_persons_settings_and_snippets_stay_hidden(other_web, mind):
    assert other_web.get(f"/dashboard/minds/{mind.pk}/settings/").status_code == 404
