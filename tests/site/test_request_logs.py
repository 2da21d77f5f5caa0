"""X-Request-Id and the logs: every response carries an id, every log line of its request
carries the same id (and the mind, once known), and LOG_FORMAT=json makes each line one JSON
object, gunicorn's own included, with one line per request (status, duration).

The id comes from the proxy only when SYNAPSE_NUM_PROXIES says there is one and the value is
a plain token; otherwise it is made here, so a client cannot choose what the logs call it.
"""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from datetime import datetime

import pytest
from django.test import Client

from synapse_site.logs import JSONFormatter, RequestContextFilter, begin_request, end_request
from tests.reliability.harness import REPO, GunicornServer

pytestmark = pytest.mark.django_db

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def behind_proxy(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}


@pytest.fixture
def json_lines():
    """What the root logger prints during the test, as JSON lines through the real filter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestContextFilter())
    handler.setFormatter(JSONFormatter())
    root, request_log = logging.getLogger(), logging.getLogger("synapse.request")
    level = request_log.level
    request_log.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        request_log.setLevel(level)


def test_every_response_carries_a_fresh_request_id(anon, agent):
    responses = [
        anon.get("/health"),
        anon.get("/no/such/path"),
        agent.get("/memory"),
        Client().get("/static/css/synapse.css"),
        anon.post("/memory", b"x" * 2_000_000, content_type="application/json"),  # a 413
    ]
    ids = [response["X-Request-Id"] for response in responses]
    assert all(GENERATED.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids)


def test_a_clients_request_id_is_ignored_without_a_proxy(anon):
    response = anon.get("/health", HTTP_X_REQUEST_ID="chosen-by-the-client")
    assert GENERATED.fullmatch(response["X-Request-Id"])


def test_the_proxys_request_id_is_kept(anon, behind_proxy):
    nginx_style = "4f9c1b2a7d3e4f5a6b7c8d9e0f1a2b3c"
    assert anon.get("/health", HTTP_X_REQUEST_ID=nginx_style)["X-Request-Id"] == nginx_style
    uuid_style = "0b6a1e52-8c1d-4a8f-9f0e-3d5c2b1a0f9e"
    assert anon.get("/health", HTTP_X_REQUEST_ID=uuid_style)["X-Request-Id"] == uuid_style


@pytest.mark.parametrize(
    "unsafe", ["x" * 129, "has space", "new\\nline", "semi;colon", "<script>", "", "-leading"]
)
def test_an_unsafe_request_id_is_replaced_even_behind_a_proxy(anon, behind_proxy, unsafe):
    response = anon.get("/health", HTTP_X_REQUEST_ID=unsafe)
    assert GENERATED.fullmatch(response["X-Request-Id"])


def test_every_log_line_of_a_request_carries_its_id_and_mind(agent, mind, json_lines):
    response = agent.get("/memory/mem_nosuchthing")  # Django logs "Not Found" as a warning
    assert response.status_code == 404
    lines = json_lines()
    request_id = response["X-Request-Id"]
    assert {line["logger"] for line in lines} >= {"django.request", "synapse.request"}
    assert all(line["request_id"] == request_id for line in lines)
    assert all(line["mind_id"] == mind.pk for line in lines)
    request_line = next(line for line in lines if line["logger"] == "synapse.request")
    assert request_line["status"] == 404
    assert request_line["method"] == "GET"
    assert request_line["path"] == "/memory/mem_nosuchthing"
    assert isinstance(request_line["duration_ms"], float)


def test_a_persons_request_names_the_mind_it_acts_on(human, mind, json_lines):
    response = human.get(f"/memory?mind={mind.pk}")
    assert response.status_code == 200
    request_line = next(line for line in json_lines() if line["logger"] == "synapse.request")
    assert request_line["mind_id"] == mind.pk
    assert request_line["path"] == "/memory"  # never the query string


def test_a_json_line_has_the_fields_a_collector_reads():
    formatter = JSONFormatter()
    record = logging.LogRecord("synapse.test", logging.ERROR, __file__, 1, "a %s", ("b",), None)
    RequestContextFilter().filter(record)
    line = json.loads(formatter.format(record))
    assert (
        line["message"] == "a b" and line["level"] == "ERROR" and line["logger"] == "synapse.test"
    )
    assert datetime.fromisoformat(line["time"]).utcoffset().total_seconds() == 0
    assert "request_id" not in line  # outside any request
    try:
        raise ValueError("boom\non two lines")
    except ValueError:
        record.exc_info = sys.exc_info()
    begin_request("r1")
    record.__dict__.pop("request_id")
    RequestContextFilter().filter(record)
    end_request()
    text = formatter.format(record)
    assert "\n" not in text
    assert json.loads(text)["request_id"] == "r1"
    assert "ValueError: boom" in json.loads(text)["exception"]


def test_an_unknown_log_format_refuses_to_start(tmp_path):
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'synapse_site.settings'); django.setup()"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "SYNAPSE_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        "LOG_FORMAT": "xml",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "LOG_FORMAT='xml': use text or json." in done.stderr


@pytest.mark.slow
def test_gunicorn_with_json_logs_prints_only_json_lines(tmp_path):
    server = GunicornServer(tmp_path, workers=1, env={"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"})
    key = server.create_mind()
    server.start()
    client = server.client(token=key)
    reply = client.request("GET", "/memory/search?q=secretword")
    client.close()
    assert reply.status == 200
    request_id = reply.headers["x-request-id"]
    server.stop()
    lines = server.log_text().splitlines()
    parsed = [json.loads(line) for line in lines]  # every line, gunicorn's own included
    assert any(p["logger"] == "gunicorn.error" and "Booting worker" in p["message"] for p in parsed)
    request_lines = [p for p in parsed if p.get("request_id") == request_id]
    assert [p["logger"] for p in request_lines] == ["synapse.request"]
    (line,) = request_lines
    assert line["status"] == 200 and line["path"] == "/memory/search" and line["duration_ms"] > 0
    assert line["mind_id"].startswith("m_")
    assert "secretword" not in server.log_text()  # no query string, no access log line
