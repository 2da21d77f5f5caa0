"""Every shell example a user or an agent is given runs as printed and succeeds: the guide at
`GET /`, the README's quick start and the dashboard's key page (curl and Python), each run
with bash against gunicorn started as `make run` starts it. `curl` fails on any 4xx or 5xx
here, so an example that gets a 401 (a key the shell never filled in) fails the test. The key
page's MCP set-ups are taken as their client takes them: the stdio bridge started with the
printed command, arguments and environment, the URL called with the printed header; each
must answer `initialize` and list the tools."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.template.loader import render_to_string

from tests.mcp_server import TOOLS
from tests.reliability.harness import REPO, GunicornServer

pytestmark = pytest.mark.slow

STRICT = 'set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 20 "$@"; }\n'
COMMAND = re.compile(r"^\s*(curl|export) ")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = GunicornServer(tmp_path_factory.mktemp("examples"))
    server.manage("migrate", "--noinput")
    server.start()
    yield server
    server.stop()


def commands(text: str) -> str:
    """The shell commands of a text: lines starting with curl/export, with their continuation
    lines (after a line ending in a backslash, or inside an open single quote)."""
    out: list[str] = []
    command, continued = "", False
    for line in text.splitlines():
        if continued or COMMAND.match(line):
            out.append(line)
            command = command + "\n" + line if continued else line
            continued = line.rstrip().endswith("\\") or command.count("'") % 2 == 1
    return "\n".join(out)


def run(script: str) -> str:
    done = subprocess.run(
        ["bash", "-c", STRICT + script + '\necho; echo "KEY=$SYNAPSE_KEY"'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{script}\n--- out:\n{done.stdout}\n--- err:\n{done.stderr}"
    return done.stdout


def test_the_guide_runs_as_printed(server):
    guide = server.client().request("GET", "/", headers={"Accept": "text/plain"}).body.decode()
    script = commands(guide)
    assert script.count("curl -s") == 6 and "$SYNAPSE_KEY" in script
    out = run(script)
    assert re.search(r"^KEY=mk_\S+$", out, re.M)
    assert "Mind: My assistant" in out  # recall with the new mind's key
    assert '"key":"preference_editor"' in out.replace(" ", "")  # store, then search finds it


def test_the_readme_quick_start_runs_as_printed(server):
    readme = (REPO / "README.md").read_text()
    block = next(b for b in readme.split("```sh")[1:] if "/register" in b).split("```")[0]
    script = commands(block).replace("localhost:8000", f"127.0.0.1:{server.port}")
    assert "/register" in script and "/memory/recall" in script
    out = run(script)
    assert re.search(r"^KEY=mk_\S+$", out, re.M)
    assert "Lives in Berlin" in out


def snippet_texts(server, key: str) -> dict[str, str]:
    """The key page's snippets by name, as a person copies them."""
    page = render_to_string(
        "dashboard/_agent_snippets.html",
        {
            "key_text": key,
            "base_url": f"http://127.0.0.1:{server.port}",
            "mcp_bridge": str(settings.BASE_DIR / "mcp_server" / "stdio.py"),
        },
    )
    found = re.findall(r'<pre id="code-([\w-]+)"[^>]*>(.*?)</pre>', page, re.S)
    return {name: html.unescape(text) for name, text in found}


def snippets(server, key: str) -> tuple[str, str]:
    texts = snippet_texts(server, key)
    return texts["curl"], texts["python"]


def test_the_key_pages_snippets_run_as_printed_and_keep_the_agents_memories(server, tmp_path):
    key = server.create_mind("snippets@example.com")
    base = f"http://127.0.0.1:{server.port}"
    agent = f'export SYNAPSE_KEY={key}\ncurl -s -H "Authorization: Bearer $SYNAPSE_KEY" '
    run(  # what the agent stored before anyone ran a snippet
        f"{agent}{base}/memory -H 'Content-Type: application/json' "
        """-d '{"category": "preference", "key": "preference_editor", "content": "LazyVim"}'"""
    )
    curl, python = snippets(server, key)
    out = run(curl)
    assert "synapse_sample_connection_check" in out and re.search(r"^KEY=mk_\S+$", out, re.M)
    script = Path(tmp_path / "snippet.py")
    script.write_text(python)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Sample from the set-up snippet" in done.stdout
    kept = run(f"{agent}'{base}/memory?category=preference'")
    assert '"content":"LazyVim"' in kept.replace(" ", "")


def test_the_readme_chat_example_runs_as_printed(server):
    """The chat's example, after the quick start that sets its SYNAPSE_ACCESS and KEY (with
    an account of its own: a second mind of the quick start's would need ?mind=)."""
    readme = (REPO / "README.md").read_text()
    blocks = [b.split("```")[0] for b in readme.split("```sh")[1:]]
    start = next(b for b in blocks if "/register" in b)
    chat = next(b for b in blocks if "/chat/send" in b)
    script = (commands(start) + "\n" + commands(chat)).replace(
        "localhost:8000", f"127.0.0.1:{server.port}"
    )
    out = run(script.replace("you@example.com", "chat-example@example.com"))
    assert '"Which editor do I use?"' in out and '"Neovim, with LazyVim."' in out
    assert '"reply_to_id":1' in out.replace(" ", "")
    assert '"total":2' in out.replace(" ", "")


# What an MCP client sends first: the handshake, then the list of tools.
HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "snippet-check", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def answers_shaken_hands(answers: list[dict]) -> None:
    initialized, listed = answers
    assert initialized["result"]["serverInfo"]["name"] == "synapse", initialized
    assert {tool["name"] for tool in listed["result"]["tools"]} == TOOLS


def over_stdio(command: list[str], env: dict[str, str]) -> list[dict]:
    """The answers of the command a client starts, with only PATH and the printed variables
    in its environment."""
    done = subprocess.run(
        command,
        input="".join(json.dumps(message) + "\n" for message in HANDSHAKE),
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def over_http(url: str, headers: dict[str, str]) -> list[dict]:
    """The answers of `url` to the handshake, each message POSTed with the printed headers."""
    assert url.startswith("http://127.0.0.1:"), url  # this test's own server, nothing else
    answers = []
    for message in HANDSHAKE:
        request = urllib.request.Request(
            url,
            data=json.dumps(message).encode(),
            headers={
                **headers,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            body = response.read()
        if body.strip():
            answers.append(json.loads(body))
    return answers


def test_the_key_pages_mcp_set_ups_connect_as_printed(server):
    key = server.create_mind("mcp-snippets@example.com")
    base = f"http://127.0.0.1:{server.port}"
    texts = snippet_texts(server, key)

    for name in ("mcp-desktop", "mcp-cursor-stdio"):  # the JSON of a client that starts a command
        printed = json.loads(texts[name])["mcpServers"]["synapse"]
        answers_shaken_hands(over_stdio([printed["command"], *printed["args"]], printed["env"]))

    printed = json.loads(texts["mcp-cursor"])["mcpServers"]["synapse"]
    answers_shaken_hands(over_http(printed["url"], printed["headers"]))

    # `claude mcp add` saves what follows its own words; the client then starts or calls that.
    words = shlex.split(texts["mcp-claude-code"])
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", "synapse"]
    url, flag, header = words[6:]
    assert flag == "--header" and url == f"{base}/mcp"
    name, _, value = header.partition(": ")
    answers_shaken_hands(over_http(url, {name: value}))

    words = shlex.split(texts["mcp-claude-code-stdio"])
    assert words[:5] == ["claude", "mcp", "add", "synapse", "-e"]
    variable, separator, *command = words[5:]
    assert separator == "--" and command[-2:] == ["--url", base]
    env_name, _, env_value = variable.partition("=")
    answers_shaken_hands(over_stdio(command, {env_name: env_value}))
