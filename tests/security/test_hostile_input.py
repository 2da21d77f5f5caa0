"""Hostile input: every endpoint answers bad requests with a 4xx JSON error that names the
problem, and none of it gets past validation or takes the server down.

Oversized bodies (413), wrong content types (415), malformed and non-object JSON, deeply
nested JSON, wrong types, nested objects, NUL bytes, huge keys, bad query parameters,
repeated parameters, unknown methods (405), malformed Authorization headers and forged Mind
Keys (401). tests/security/test_live_server.py sends the ones that need a real HTTP server
(chunked bodies, raw garbage) to gunicorn.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from mcp_server import protocol
from memories import rules
from memories.models import MAX_TAGS, Memory
from memories.rules import BULK_MAX_ITEMS
from tests.conftest import bearer_client
from tests.factories import remember

pytestmark = pytest.mark.django_db

MEM = "{memory}"
MIND = "{mind}"

# (method, path, caller): every route of the JSON API. `caller` is who may call it.
ENDPOINTS = [
    ("POST", "/register", "anon"),
    ("POST", "/login", "anon"),
    ("POST", "/token/refresh", "anon"),
    ("GET", "/minds", "human"),
    ("POST", "/minds", "human"),
    ("GET", f"/minds/{MIND}", "human"),
    ("PATCH", f"/minds/{MIND}", "human"),
    ("DELETE", f"/minds/{MIND}", "human"),
    ("POST", f"/minds/{MIND}/rotate-key", "human"),
    ("POST", f"/minds/{MIND}/revoke-key", "human"),
    ("GET", "/memory", "agent"),
    ("POST", "/memory", "agent"),
    ("GET", f"/memory/{MEM}", "agent"),
    ("PUT", f"/memory/{MEM}", "agent"),
    ("PATCH", f"/memory/{MEM}", "agent"),
    ("DELETE", f"/memory/{MEM}", "agent"),
    ("POST", f"/memory/{MEM}/verify", "human"),
    ("POST", f"/memory/{MEM}/unverify", "human"),
    ("GET", f"/memory/{MEM}/related", "agent"),
    ("GET", "/memory/recall", "agent"),
    ("GET", "/memory/search?q=x", "agent"),
    ("GET", "/memory/by-tag?tag=x", "agent"),
    ("GET", "/memory/expiring", "agent"),
    ("GET", "/memory/unverified", "agent"),
    ("GET", "/memory/stats", "agent"),
    ("GET", "/memory/tags", "agent"),
    ("GET", "/memory/health", "agent"),
    ("GET", "/memory/audit", "agent"),
    ("GET", "/memory/diff?since=0", "agent"),
    ("POST", "/memory/sync", "agent"),
    ("GET", "/mind/export", "agent"),
    ("POST", "/mind/import", "agent"),
    ("POST", "/mcp", "agent"),
]
WRITES = [e for e in ENDPOINTS if e[0] in ("POST", "PUT", "PATCH")]
# Endpoints that read a JSON body (verify, rotate-key … take none).
BODY_READERS = [e for e in WRITES if not e[1].endswith(("/verify", "/unverify", "-key"))]
AUTHENTICATED = [e for e in ENDPOINTS if e[2] != "anon"]
ALLOWED = {}
for _method, _path, _ in ENDPOINTS:
    ALLOWED.setdefault(_path.split("?")[0], set()).add(_method)


def ident(endpoint) -> str:
    return f"{endpoint[0]} {endpoint[1]}"


@pytest.fixture
def memory(mind) -> Memory:
    return remember(mind, "hostile_target", "Target of hostile requests", tags=["x"])


@pytest.fixture
def clients(anon, agent, human):
    return {"anon": anon, "agent": agent, "human": human}


def url(path: str, *, mind, memory) -> str:
    return path.replace(MIND, mind.pk).replace(MEM, memory.pk)


def send(client, method: str, path: str, body: bytes | str = b"", content_type=None, **extra):
    return client.generic(
        method, path, body, content_type=content_type or "application/json", **extra
    )


def error_of(response) -> str:
    """The machine code of an error answer: the API's shape, or JSON-RPC's (MCP)."""
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    if isinstance(body.get("error"), dict):  # JSON-RPC: {"error": {"data": {"error": …}}}
        return body["error"]["data"]["error"]
    assert isinstance(body.get("detail"), str) and body["detail"], body
    return body["error"]


def assert_4xx_json(response, status: int | tuple[int, ...], code: str | None = None) -> str:
    statuses = (status,) if isinstance(status, int) else status
    assert response.status_code in statuses, (response.status_code, response.content[:300])
    got = error_of(response)
    if code is not None:
        assert got == code, response.content[:300]
    return got


# --- Bodies ------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", WRITES, ids=ident)
def test_body_over_the_limit_is_413(clients, mind, memory, settings, endpoint):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    method, path, caller = endpoint
    body = json.dumps({"content": "x" * 5000})
    response = send(clients[caller], method, url(path, mind=mind, memory=memory), body)
    assert_4xx_json(response, 413, "payload_too_large")
    memory.refresh_from_db()
    assert memory.content == "Target of hostile requests"


@pytest.mark.parametrize("endpoint", BODY_READERS, ids=ident)
@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_that_is_not_json_is_415(clients, mind, memory, endpoint, content_type):
    method, path, caller = endpoint
    response = send(
        clients[caller],
        method,
        url(path, mind=mind, memory=memory),
        "category=fact&content=x",
        content_type,
    )
    assert_4xx_json(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("endpoint", BODY_READERS, ids=ident)
@pytest.mark.parametrize(
    "body",
    ["{", '{"content": "x",}', "\x00", "[" * 50_000 + "]" * 50_000, '{"a": NaN}'],
    ids=["unclosed", "trailing-comma", "nul", "nested-50k", "nan"],
)
def test_malformed_json_is_a_400(clients, mind, memory, endpoint, body):
    method, path, caller = endpoint
    response = send(clients[caller], method, url(path, mind=mind, memory=memory), body)
    assert_4xx_json(response, 400)


@pytest.mark.parametrize("endpoint", BODY_READERS, ids=ident)
@pytest.mark.parametrize("body", ["[]", '"text"', "42", "null", "true", '[{"content": "x"}]'])
def test_json_that_is_not_an_object_is_a_400(clients, mind, memory, endpoint, body):
    method, path, caller = endpoint
    response = send(clients[caller], method, url(path, mind=mind, memory=memory), body)
    # MCP answers JSON-RPC: a non-object message is an "invalid request" in a 200 batch
    # answer or a 400; everything else is the API's 400.
    if path == "/mcp" and response.status_code == 200:
        assert "error" in json.dumps(response.json())
        return
    assert_4xx_json(response, 400)


# --- Memory fields -----------------------------------------------------------------------------

BAD_FIELDS = [
    ("content", 42),
    ("content", ["a"]),
    ("content", {"nested": {"deeper": "x"}}),
    ("content", ""),
    ("content", " \n\t "),
    ("content", "a\x00b"),
    ("content", "x" * 50_001),
    ("key", 7),
    ("key", {"a": 1}),
    ("key", "has space"),
    ("key", "nul\x00key"),
    ("key", "k" * 201),
    ("key", "k" * 10_000),
    ("key", "tab\tkey"),
    ("key", "zero\u200bwidth"),
    ("category", "thoughts"),
    ("category", {"name": "fact"}),
    ("category", None),
    ("tags", "single"),
    ("tags", [1, 2]),
    ("tags", [["nested"]]),
    ("tags", [{"tag": "x"}]),
    ("tags", ["ok", ""]),
    ("tags", ["t" * 65]),
    ("tags", [f"t{i}" for i in range(21)]),
    ("tags", ["bell\x07"]),
    ("priority", "urgent"),
    ("priority", 3),
    ("confidence", "high"),
    ("confidence", 1.5),
    ("confidence", -0.1),
    ("confidence", True),
    ("expires_at", "next tuesday"),
    ("expires_at", {"at": 1}),
    ("expires_at", 10**20),
    ("source", "admin"),
    ("source", 1),
    ("contnet", "a typo"),
    ("mind_id", "m_someoneelse"),
]


@pytest.mark.parametrize(("field", "value"), BAD_FIELDS, ids=lambda v: repr(v)[:30])
def test_bad_memory_field_is_a_400_naming_it(agent, mind, memory, field, value):
    body = {"category": "fact", "key": "hostile_new", "content": "fine", field: value}
    response = agent.post("/memory", body, format="json")
    assert_4xx_json(response, 400, "invalid")
    assert field in response.json()["fields"], response.json()
    assert not Memory.objects.filter(key="hostile_new").exists()

    if field in ("category", "contnet", "mind_id"):
        return  # the update forms of these are covered by their own tests
    response = agent.patch(f"/memory/{memory.pk}", {field: value}, format="json")
    assert_4xx_json(response, 400, "invalid")
    assert field in response.json()["fields"], response.json()

    response = agent.post("/memory/sync", {"memories": [body]}, format="json")
    assert response.status_code == 200
    [error] = response.json()["errors"]
    assert field in error["fields"]
    memory.refresh_from_db()
    assert memory.content == "Target of hostile requests"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", 42),
        ("name", ""),
        ("name", "a\x00b"),
        ("name", "n" * 101),
        ("name", {"x": 1}),
        ("description", ["x"]),
        ("description", "d" * 1001),
    ],
)
def test_bad_mind_field_is_a_400_naming_it(human, mind, field, value):
    response = human.post("/minds", {"name": "Fine", field: value}, format="json")
    assert_4xx_json(response, 400, "invalid")
    assert field in response.json()["fields"]
    response = human.patch(f"/minds/{mind.pk}", {field: value}, format="json")
    assert_4xx_json(response, 400, "invalid")
    mind.refresh_from_db()
    assert mind.name == "Olive's Mind"


# --- Long lists in a body: refused as soon as they pass the limit ------------------------------

# 100,000 different tags: about 900 KB of JSON, under the body limit.
TAG_BOMB = [f"t{i}" for i in range(100_000)]


@pytest.fixture
def normalized(monkeypatch) -> list[str]:
    """Every tag the rules normalise, in order."""
    calls: list[str] = []
    normalize = rules.normalize_tag
    monkeypatch.setattr(rules, "normalize_tag", lambda tag: calls.append(tag) or normalize(tag))
    return calls


def test_a_list_of_100000_tags_is_a_400_after_a_few_tags(agent, human, mind, memory, normalized):
    item = {"category": "fact", "key": "bomb", "content": "x", "tags": TAG_BOMB}
    answers = [
        agent.post("/memory", item, format="json"),
        agent.patch(f"/memory/{memory.pk}", {"tags": TAG_BOMB}, format="json"),
        agent.put(f"/memory/{memory.pk}", {"tags": TAG_BOMB}, format="json"),
    ]
    for response in answers:
        assert_4xx_json(response, 400, "invalid")
        assert "At most 20 different tags" in response.json()["fields"]["tags"][0]
    for path in ("/memory/sync", f"/mind/import?mind={mind.pk}"):
        response = human.post(path, {"memories": [item]}, format="json")
        assert response.status_code == 200
        assert "tags" in response.json()["errors"][0]["fields"]
    call = {"name": "remember", "arguments": item}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    answer = agent.post("/mcp", rpc, format="json", HTTP_ACCEPT="application/json").json()
    assert answer["result"]["isError"] and "tags" in answer["result"]["content"][0]["text"]
    # Five bodies, none read past its 21st tag.
    assert len(normalized) <= 6 * (MAX_TAGS + 1)
    assert not Memory.objects.filter(key="bomb").exists()
    memory.refresh_from_db()
    assert memory.tags == ["x"]


@pytest.mark.parametrize("path", ["/memory/sync", "/mind/import"])
def test_more_memories_than_one_call_takes_is_a_400_before_any_is_judged(agent, mind, path):
    items = [{"category": "note", "content": f"n{i}"} for i in range(BULK_MAX_ITEMS + 1)]
    response = agent.post(path, {"memories": items}, format="json")
    assert_4xx_json(response, 400, "invalid")
    assert f"At most {BULK_MAX_ITEMS} memories per call" in response.json()["fields"]["memories"][0]
    assert not Memory.objects.filter(mind=mind, category="note").exists()


def test_an_mcp_batch_over_the_limit_runs_none_of_its_calls(agent, mind, monkeypatch):
    handled = []
    monkeypatch.setattr(protocol, "handle_message", lambda *a, **kw: handled.append(a))
    call = {"jsonrpc": "2.0", "method": "ping"}
    batch = [{**call, "id": i} for i in range(protocol.MAX_BATCH + 1)]
    response = agent.post("/mcp", batch, format="json", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json()["error"]["code"] == protocol.INVALID_REQUEST
    assert handled == []


# --- Query parameters --------------------------------------------------------------------------

BAD_PARAMS = [
    ("/memory", "limit", ["0", "-1", "1001", "ten", "1e3", "9" * 30, "1.5"]),
    ("/memory", "offset", ["-1", "x", str(2**63), "9" * 30]),
    ("/memory", "verified", ["maybe", "2"]),
    ("/memory", "include_expired", ["sure"]),
    ("/memory", "category", ["thoughts"]),
    ("/memory", "priority", ["urgent"]),
    ("/memory", "source", ["admin"]),
    ("/memory/unverified", "limit", ["0", "abc"]),
    ("/memory/unverified", "offset", [str(2**64)]),
    ("/memory/by-tag?tag=x", "offset", ["-5", str(2**63)]),
    ("/memory/expiring", "within", ["soon", "0", "-5", "7x", "999999w", "1.5h", "\x00"]),
    ("/memory/expiring", "offset", [str(2**63)]),
    ("/memory/diff", "since", ["", "yesterday", "1e400", "-99999999999", "\x00", "2026-13-45"]),
    ("/memory/audit", "action", ["hack"]),
    ("/memory/audit", "limit", ["100000"]),
    ("/memory/audit", "offset", [str(2**63)]),
    ("/memory/tags", "limit", ["0", "10001"]),
    ("/memory/recall", "budget", ["0", "-1", "lots", "1000001"]),
    ("/memory/diff?since=0", "limit", ["0", "1001", "x"]),
    ("/memory/recall", "format", ["xml"]),
    ("/memory/search?q=x", "limit", ["0", "101"]),
    ("/memory/search?q=x", "category", ["thoughts"]),
    ("/memory/search", "q", ["", "   ", "\x00", "-only", "*", '"', "q" * 1001]),
    ("/mind/export", "format", ["xml"]),
]
PARAM_CASES = [(path, name, value) for path, name, values in BAD_PARAMS for value in values]


@pytest.mark.parametrize(("path", "name", "value"), PARAM_CASES, ids=lambda v: str(v)[:24])
def test_bad_query_parameter_is_a_400_naming_it(agent, mind, memory, path, name, value):
    separator = "&" if "?" in path else "?"
    response = agent.get(f"{path}{separator}{urlencode({name: value})}")
    assert_4xx_json(response, 400, "invalid")
    assert name in response.json()["fields"], response.json()


@pytest.mark.parametrize("path", ["/memory", "/memory/search?q=x", "/memory/recall"])
def test_a_repeated_query_parameter_is_a_400(agent, mind, path):
    separator = "&" if "?" in path else "?"
    response = agent.get(f"{path}{separator}tag=a&tag=b")
    assert_4xx_json(response, 400, "invalid")
    assert "tag" in response.json()["fields"]


GET_ROUTES = [path for method, path, caller in ENDPOINTS if method == "GET" and caller == "agent"]
NUL_PARAMS = ["tag", "category", "q", "mind", "memory", "since", "within", "budget", "format"]


@pytest.mark.parametrize("path", GET_ROUTES)
def test_a_nul_in_any_query_parameter_is_never_a_500(agent, human, mind, memory, path):
    # NUL is no character of any name, tag or id: a 400 naming the parameter, or a filter
    # that matches nothing (tests/site/test_nul_characters.py), never a database error.
    target = url(path, mind=mind, memory=memory)
    separator = "&" if "?" in target else "?"
    for client in (agent, human):
        for name in NUL_PARAMS:
            response = client.get(f"{target}{separator}{name}=a%00b")
            assert response.status_code in (200, 400, 404), (name, response.content[:200])
            if response.status_code != 200:
                error_of(response)


def test_memory_id_of_the_wrong_form_is_a_404(agent, mind):
    for path in ("/memory/42", "/memory/mem_../verify", "/memory/MEM_ABC", "/memory/mem_%00"):
        assert_4xx_json(agent.get(path), 404, "not_found")


# --- Methods -----------------------------------------------------------------------------------

ROUTES = sorted(ALLOWED)


@pytest.mark.parametrize("path", ROUTES)
def test_methods_a_route_does_not_take_are_405(clients, mind, memory, path):
    caller = next(c for m, p, c in ENDPOINTS if p.split("?")[0] == path)
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "PROPFIND", "TRACE"):
        if method in ALLOWED[path]:
            continue
        response = send(clients[caller], method, url(path, mind=mind, memory=memory), "{}")
        assert_4xx_json(response, 405, "method_not_allowed")
    assert Memory.objects.filter(pk=memory.pk).exists()


# --- Credentials -------------------------------------------------------------------------------

BAD_AUTHORIZATION = [
    "Bearer",
    "Bearer ",
    "Bearer a b",
    "Basic b3duZXI6cGFzcw==",
    "Token mk_x",
    "bearer mk_" + "A" * 43,
    "Bearer mk_",
    "Bearer mk_short",
    "Bearer mk_" + "A" * 10_000,
    "Bearer eyJhbGciOiJub25lIn0.eyJ1c2VyX2lkIjoxfQ.",  # alg "none"
    "Bearer eyJhbGciOi.garbage.token",
    "Bearer \u00e9\u00e9",
]


@pytest.mark.parametrize("endpoint", AUTHENTICATED, ids=ident)
def test_malformed_tokens_and_forged_keys_are_401(anon, owner_mind, memory, endpoint):
    method, path, _ = endpoint
    forged = owner_mind.key[:11] + "x" * (len(owner_mind.key) - 11)  # right prefix, wrong rest
    target = url(path, mind=owner_mind.mind, memory=memory)
    for header in [*BAD_AUTHORIZATION, f"Bearer {forged}"]:
        response = send(anon, method, target, "{}", HTTP_AUTHORIZATION=header)
        assert_4xx_json(response, 401)
    memory.refresh_from_db()
    assert memory.content == "Target of hostile requests"
    owner_mind.mind.refresh_from_db()
    assert owner_mind.mind.has_active_key


@pytest.mark.parametrize("endpoint", AUTHENTICATED, ids=ident)
def test_a_mind_key_in_the_query_string_is_never_accepted(anon, owner_mind, memory, endpoint):
    method, path, _ = endpoint
    target = url(path, mind=owner_mind.mind, memory=memory)
    separator = "&" if "?" in target else "?"
    for name in ("key", "mind_key", "api_key", "access_token", "token", "authorization"):
        response = send(anon, method, f"{target}{separator}{name}={owner_mind.key}", "{}")
        assert_4xx_json(response, 401)


def test_revoked_key_is_401_everywhere(owner_mind, memory):
    from minds.services import mind_revoke_key

    agent = bearer_client(owner_mind.key)
    mind_revoke_key(mind=owner_mind.mind)
    for method, path, caller in ENDPOINTS:
        if caller == "agent":
            target = url(path, mind=owner_mind.mind, memory=memory)
            assert_4xx_json(send(agent, method, target, "{}"), 401)
