"""Every shell example a user or an agent is given runs as printed and succeeds: the guide at
`GET /`, the README's quick start and the dashboard's key page (curl and Python), each run
with bash against gunicorn started as `make run` starts it. `curl` fails on any 4xx or 5xx
here, so an example that gets a 401 (a key the shell never filled in) fails the test."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.template.loader import render_to_string

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


def snippets(server, key: str) -> tuple[str, str]:
    page = render_to_string(
        "dashboard/_agent_snippets.html",
        {"key_text": key, "base_url": f"http://127.0.0.1:{server.port}"},
    )
    curl, python = (
        html.unescape(re.search(rf'<pre id="code-{name}"[^>]*>(.*?)</pre>', page, re.S)[1])
        for name in ("curl", "python")
    )
    return curl, python


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
