"""The README and docs/ say one thing per fact, and what they say is what the code does: where the
rate-limit cache lives, what Redis holds, where the logs go, who creates PostgreSQL
databases, what `POST /memory/sync` takes and answers, which make targets exist, which MCP
set-ups the key page prints."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time

import pytest
from django.template.loader import render_to_string

from api.memories import sync_answer
from tests.reliability.harness import GUNICORN, REPO, Client, GunicornServer, free_port

README = (REPO / "README.md").read_text()
DEPLOY = (REPO / "docs" / "deploy.md").read_text()
OPERATIONS = (REPO / "docs" / "operations.md").read_text()
DOCS = {"README.md": README, "deploy.md": DEPLOY, "operations.md": OPERATIONS}


def shell_lines(text: str) -> list[str]:
    """Every line of the text's ```sh blocks."""
    return [
        line for block in re.findall(r"```sh\n(.*?)```", text, re.S) for line in block.split("\n")
    ]


def test_the_default_rate_limit_cache_is_the_machines_files_everywhere():
    default = subprocess.run(
        [sys.executable, "-c", "from synapse_site import settings; print(settings.CACHES)"],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "SECRET_KEY": "x" * 60, "DEBUG": "true"},
        capture_output=True,
        text=True,
    )
    assert "SharedFileCache" in default.stdout and "/cache'" in default.stdout, default.stderr
    assert "files in `data/cache/`" in README
    assert "files in `data/cache/`, shared by the machine's workers" in DEPLOY
    for name, text in DOCS.items():
        assert "in each process |" not in text, name
        assert "counted per worker unless" not in text, name


def test_redis_is_not_said_to_hold_only_the_counters():
    for name, text in DOCS.items():
        assert "Redis holds only" not in text, name
    assert "`SYNAPSE_JOBS_URL`" in DEPLOY.split("## Redis")[1].split("## ")[0]


def test_every_database_of_the_synapse_role_is_created_by_postgres():
    # The role deploy.md makes (`createuser --pwprompt synapse`) has no CREATEDB.
    creates = [
        line
        for text in (DEPLOY, OPERATIONS)
        for line in shell_lines(text)
        if "createdb " in line and not line.startswith("#")
    ]
    assert len(creates) >= 3
    for line in creates:
        assert line.startswith("sudo -u postgres createdb --owner synapse "), line


def test_the_sync_body_and_answer_are_shown_as_the_code_has_them():
    row = next(line for line in README.splitlines() if "`POST /memory/sync` |" in line)
    assert '`{"memories": [...]}`' in row
    shown = re.search(r"the answer `(\{.*?\})`", row)[1]
    assert set(re.findall(r'"(\w+)":', shown)) == set(sync_answer([]))


def test_the_readme_lists_every_make_target():
    phony = re.search(r"^\.PHONY: (.*)$", (REPO / "Makefile").read_text(), re.M)[1].split()
    for target in phony:
        assert f"make {target}" in " ".join(README.split()), target


def test_one_page_says_where_the_logs_go():
    for name, text in DOCS.items():
        if name != "deploy.md":
            assert "standard output" not in text and "standard error" not in text, name
    assert "gunicorn's access log to standard output, everything else" in DEPLOY
    assert "to standard error" in DEPLOY


@pytest.mark.slow
def test_the_access_log_goes_to_stdout_and_everything_else_to_stderr(tmp_path):
    server = GunicornServer(tmp_path, workers=1, env={"LOG_LEVEL": "INFO"})
    server.manage("migrate", "--noinput")
    port = free_port()
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            [str(GUNICORN), "--config", "gunicorn.conf.py", "synapse_site.wsgi"],
            cwd=REPO,
            env={**server.env, "PORT": str(port)},
            stdout=stdout,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None and time.monotonic() < deadline, err.read_text()
            try:
                client = Client(port, timeout=2)
                if client.request("GET", "/health").status == 200:
                    client.request("GET", "/memory", headers={"Authorization": "Bearer mk_x"})
                    client.close()
                    break
            except OSError:
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=30)
    stdout_text, stderr_text = out.read_text(), err.read_text()
    assert '"GET /health HTTP/1.1" 200' in stdout_text
    assert "Booting worker" not in stdout_text and "Booting worker" in stderr_text
    assert "Unauthorized: /memory" in stderr_text  # Django's own line for the 401
    assert "GET /health" not in stderr_text


def test_the_readmes_mcp_set_ups_are_those_the_key_page_prints():
    page = render_to_string(
        "dashboard/_agent_snippets.html",
        {
            "key_text": "mk_your_mind_key",
            "base_url": "http://localhost:8000",
            "mcp_bridge": "/path/to/synapse/mcp_server/stdio.py",
        },
    )
    printed = {
        name: html.unescape(text)
        for name, text in re.findall(r'<pre id="code-(mcp-[\w-]+)"[^>]*>(.*?)</pre>', page, re.S)
    }
    mcp = README.split("\n## MCP\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in shell_lines(mcp) if line.startswith("claude mcp add")]
    assert lines == [printed["mcp-claude-code"], printed["mcp-claude-code-stdio"]]
    over_url, over_stdio = (json.loads(b) for b in re.findall(r"```json\n(.*?)```", mcp, re.S))
    assert over_url == json.loads(printed["mcp-cursor"])
    assert (
        over_stdio == json.loads(printed["mcp-desktop"]) == json.loads(printed["mcp-cursor-stdio"])
    )
