"""POST /mcp as JSON-RPC 2.0 over HTTP: framing, errors, authentication, throttling."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from mcp_server import protocol
from mcp_server.protocol import LATEST_VERSION, SUPPORTED_VERSIONS
from memories.models import Memory
from tests.factories import remember

pytestmark = pytest.mark.django_db


def post(key: str | None, body, *, raw: bool = False, content_type="application/json", **headers):
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    if key is not None:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    data = body if raw else json.dumps(body)
    return Client().post("/mcp", data=data, content_type=content_type, **extra)


def request(method: str, params: dict | None = None, request_id=1) -> dict:
    body: dict = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def initialize(version: str = "2025-06-18") -> dict:
    return request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_initialize_echoes_a_supported_version(owner_mind, version):
    response = post(owner_mind.key, initialize(version))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert "Mcp-Session-Id" not in response  # stateless
    result = response.json()["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "synapse"
    assert set(result["capabilities"]) == {"tools", "resources"}
    assert "recall" in result["instructions"]
    assert "Olive's Mind" in result["instructions"]


def test_initialize_offers_the_latest_for_an_unknown_version(owner_mind):
    result = post(owner_mind.key, initialize("2099-01-01")).json()["result"]
    assert result["protocolVersion"] == LATEST_VERSION


def test_initialize_without_version_is_invalid_params(owner_mind):
    answer = post(owner_mind.key, request("initialize", {})).json()
    assert answer["error"]["code"] == -32602


def test_initialized_notification_is_accepted_without_body(owner_mind):
    response = post(owner_mind.key, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert response.status_code == 202
    assert response.content == b""


def test_client_response_is_accepted(owner_mind):
    response = post(owner_mind.key, {"jsonrpc": "2.0", "id": 7, "result": {}})
    assert response.status_code == 202


def test_ping(owner_mind):
    assert post(owner_mind.key, request("ping", request_id="a")).json() == {
        "jsonrpc": "2.0",
        "id": "a",
        "result": {},
    }


def test_parse_error(owner_mind):
    response = post(owner_mind.key, '{"jsonrpc": "2.0", "id": 1, "method": ', raw=True)
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None
    assert body["error"]["code"] == -32700


def test_invalid_utf8_is_a_parse_error(owner_mind):
    response = post(owner_mind.key, b'{"x": "\xff"}', raw=True)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


def test_unknown_method(owner_mind):
    answer = post(owner_mind.key, request("prompts/list", request_id=3)).json()
    assert answer["id"] == 3
    assert answer["error"]["code"] == -32601
    assert "prompts/list" in answer["error"]["message"]


def test_modern_discover_probe_is_method_not_found(owner_mind):
    # Current clients probe server/discover first and fall back to initialize on -32601.
    answer = post(owner_mind.key, request("server/discover", {})).json()
    assert answer["error"]["code"] == -32601


@pytest.mark.parametrize(
    "body",
    [
        {"id": 1, "method": "ping"},  # no jsonrpc
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1},  # neither method nor result
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},  # MCP ids are never null
        {"jsonrpc": "2.0", "id": [1], "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"},
        "ping",
        42,
        [],
    ],
)
def test_invalid_requests(owner_mind, body):
    answer = post(owner_mind.key, body).json()
    assert answer["error"]["code"] == -32600


def test_positional_params_are_invalid_params(owner_mind):
    answer = post(owner_mind.key, request("tools/list") | {"params": [1]}).json()
    assert answer["error"]["code"] == -32602


def test_batch_answers_requests_in_order_and_skips_notifications(owner_mind):
    batch = [
        request("ping", request_id=1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request("nope", request_id=2),
        "junk",
        request("tools/list", request_id=3),
    ]
    response = post(owner_mind.key, batch)
    assert response.status_code == 200
    answers = response.json()
    assert [a["id"] for a in answers] == [1, 2, None, 3]
    assert answers[0]["result"] == {}
    assert answers[1]["error"]["code"] == -32601
    assert answers[2]["error"]["code"] == -32600
    assert len(answers[3]["result"]["tools"]) == 9


def test_batch_of_notifications_only_is_202(owner_mind):
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]
    assert post(owner_mind.key, batch).status_code == 202


def test_batch_size_is_capped(owner_mind):
    answer = post(owner_mind.key, [request("ping", request_id=n) for n in range(51)]).json()
    assert answer["error"]["code"] == -32600
    assert (
        len(post(owner_mind.key, [request("ping", request_id=n) for n in range(50)]).json()) == 50
    )


def test_a_batch_stops_running_calls_once_its_answers_pass_the_limit(owner_mind, mind, monkeypatch):
    monkeypatch.setattr(protocol, "MAX_BATCH_ANSWER", 30_000)
    for i in range(3):
        remember(mind, f"long_{i}", "words " * 2000)  # about 12,000 characters each
    listing = {"name": "list_memories", "arguments": {"limit": 200}}
    store = {"name": "remember", "arguments": {"category": "fact", "content": "after"}}
    batch = [
        request("tools/call", listing, request_id=1),  # under the limit when it starts
        request("tools/call", listing, request_id=2),  # past it: not run
        {"jsonrpc": "2.0", "method": "notifications/initialized"},  # owed nothing
        request("tools/call", store, request_id=3),  # not run: nothing stored
    ]
    answers = post(owner_mind.key, batch).json()
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"]["structuredContent"]["total"] == 3
    for refused in answers[1:]:
        assert refused["error"]["code"] == protocol.ANSWER_LIMIT
        assert "30,000 characters" in refused["error"]["message"]
        assert refused["error"]["data"] == {"error": "batch_answer_limit", "limit": 30_000}
    assert not Memory.objects.filter(mind=mind, content="after").exists()


def test_a_batch_under_the_answer_limit_runs_every_call(owner_mind, mind):
    remember(mind, "short", "a few words")
    listing = {"name": "list_memories", "arguments": {"limit": 200}}
    answers = post(owner_mind.key, [request("tools/call", listing, n) for n in range(50)]).json()
    assert all("result" in answer for answer in answers) and len(answers) == 50


def test_initialize_may_not_be_batched(owner_mind):
    answers = post(owner_mind.key, [initialize()]).json()
    assert answers[0]["error"]["code"] == -32600


def test_get_and_delete_are_405(owner_mind):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}")
    for response in (client.get("/mcp"), client.delete("/mcp"), client.get("/mcp/")):
        assert response.status_code == 405
        assert response["Allow"] == "POST"
        assert response.json()["error"]["data"]["error"] == "method_not_allowed"


def test_trailing_slash_works(owner_mind):
    response = Client().post(
        "/mcp/",
        data=json.dumps(request("ping")),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}",
    )
    assert response.json()["result"] == {}


def test_missing_key_is_401_with_challenge(db):
    response = post(None, request("tools/list"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == (
        'Bearer realm="synapse", '
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
    )
    assert response.json()["error"]["data"]["error"] == "not_authenticated"


def test_bad_key_is_401(db):
    response = post("mk_" + "x" * 43, request("tools/list"))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]
    assert "not valid" in response.json()["error"]["message"]


def test_revoked_key_is_401(owner_mind):
    owner_mind.mind.key_hash = ""
    owner_mind.mind.save()
    assert post(owner_mind.key, request("ping")).status_code == 401


def test_person_jwt_is_refused(owner, owner_mind):
    from tests.conftest import jwt_for

    response = post(jwt_for(owner), request("tools/list"))
    assert response.status_code == 401
    assert "Mind Key" in response.json()["error"]["message"]


def test_wrong_content_type_is_415(owner_mind):
    response = post(
        owner_mind.key, json.dumps(request("ping")), raw=True, content_type="text/plain"
    )
    assert response.status_code == 415


def test_accept_without_json_is_406(owner_mind):
    response = post(owner_mind.key, request("ping"), accept="text/event-stream")
    assert response.status_code == 406
    ok = post(owner_mind.key, request("ping"), accept="application/json, text/event-stream")
    assert ok.status_code == 200


def test_protocol_version_header(owner_mind):
    ok = post(owner_mind.key, request("ping"), mcp_protocol_version="2025-06-18")
    assert ok.status_code == 200
    refused = post(owner_mind.key, request("ping"), mcp_protocol_version="2026-07-28")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == list(SUPPORTED_VERSIONS)


def test_session_id_sent_by_a_client_is_ignored(owner_mind):
    response = post(owner_mind.key, request("ping"), mcp_session_id="whatever")
    assert response.status_code == 200


def test_throttled_per_mind(owner_mind, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": "2/min", "login": None},
    }
    assert post(owner_mind.key, request("ping")).status_code == 200
    assert post(owner_mind.key, [request("ping", request_id=1), request("ping", request_id=2)])
    refused = post(owner_mind.key, request("ping"))
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert refused.json()["error"]["data"]["error"] == "rate_limited"


def rate(settings, value: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": value, "login": None},
    }


def pings(count: int, first: int = 1) -> list[dict]:
    return [request("ping", request_id=n) for n in range(first, first + count)]


def test_each_message_of_a_batch_counts_against_the_rate_limit(owner_mind, settings):
    rate(settings, "60/min")
    answers = post(owner_mind.key, pings(50)).json()
    assert all(answer["result"] == {} for answer in answers)
    # 10 of the 60 are left: the first 10 messages run, each request after them is refused.
    batch = pings(20, first=51)
    batch.insert(15, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    response = post(owner_mind.key, batch)
    assert response.status_code == 200
    answers = response.json()
    assert [a["id"] for a in answers] == list(range(51, 71))
    assert all(a["result"] == {} for a in answers[:10])
    for refused in answers[10:]:
        assert refused["error"]["code"] == protocol.RATE_LIMITED
        assert refused["error"]["data"]["error"] == "rate_limited"
        assert refused["error"]["data"]["retry_after"] >= 1
    # Nothing is left: the next POST, batch or not, is refused whole.
    for body in (request("ping"), pings(2)):
        refused = post(owner_mind.key, body)
        assert refused.status_code == 429
        assert int(refused["Retry-After"]) >= 1
        assert refused.json()["error"]["data"]["error"] == "rate_limited"


def test_calls_a_batch_runs_past_the_rate_limit_are_not_run(owner_mind, mind, settings):
    rate(settings, "3/min")
    store = {"name": "remember", "arguments": {"category": "fact", "content": "too many"}}
    answers = post(owner_mind.key, [*pings(3), request("tools/call", store, 4)]).json()
    assert [a["id"] for a in answers] == [1, 2, 3, 4]
    assert answers[3]["error"]["code"] == protocol.RATE_LIMITED
    assert not Memory.objects.filter(mind=mind).exists()


def test_a_minds_batches_never_use_another_minds_allowance(owner_mind, stranger_mind, settings):
    rate(settings, "50/min")
    assert all("result" in a for a in post(owner_mind.key, pings(50)).json())
    assert post(owner_mind.key, request("ping")).status_code == 429
    # The owner's REST calls share its bucket; the stranger's bucket is whole.
    owner_rest = Client(HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}").get("/memory")
    assert owner_rest.status_code == 429
    assert all("result" in a for a in post(stranger_mind.key, pings(49)).json())
    stranger_rest = Client(HTTP_AUTHORIZATION=f"Bearer {stranger_mind.key}").get("/memory")
    assert stranger_rest.status_code == 200


def test_a_batch_runs_at_most_a_few_searches_and_recalls(owner_mind, mind):
    remember(mind, "fact_city", "Lives in Berlin")
    search = {"name": "search", "arguments": {"q": "Berlin", "mode": "keyword"}}
    recall = {"uri": "synapse://recall?budget=100"}
    heavy = protocol.MAX_BATCH_HEAVY
    batch = [request("tools/call", search, n) for n in range(1, heavy)]
    batch += [request("resources/read", recall, heavy), request("ping", request_id=100)]
    batch += [request("tools/call", {"name": "recall"}, 101), request("tools/call", search, 102)]
    batch += [request("resources/read", recall, 103), request("ping", request_id=104)]
    batch += [request("tools/call", {"name": "list_memories"}, 105)]
    answers = {a["id"]: a for a in post(owner_mind.key, batch).json()}
    for n in range(1, heavy):
        assert answers[n]["result"]["structuredContent"]["total"] == 1
    assert "fact_city" in answers[heavy]["result"]["contents"][0]["text"]
    for n in (101, 102, 103):
        assert answers[n]["error"]["code"] == protocol.HEAVY_LIMIT
        assert f"at most {heavy} searches and recalls" in answers[n]["error"]["message"]
        assert answers[n]["error"]["data"] == {"error": "batch_heavy_limit", "limit": heavy}
    assert answers[100]["result"] == answers[104]["result"] == {}
    assert answers[105]["result"]["structuredContent"]["total"] == 1


def test_a_single_search_is_not_a_batch_and_is_never_refused_as_one(owner_mind, mind):
    remember(mind, "fact_city", "Lives in Berlin")
    search = {"name": "search", "arguments": {"q": "Berlin", "mode": "keyword"}}
    for n in range(protocol.MAX_BATCH_HEAVY + 1):
        answer = post(owner_mind.key, request("tools/call", search, n)).json()
        assert answer["result"]["structuredContent"]["total"] == 1


def test_non_ascii_is_utf8_and_lone_surrogates_never_crash(owner_mind):
    stored = post(
        owner_mind.key,
        request(
            "tools/call",
            {"name": "remember", "arguments": {"category": "identity", "content": "Schäfer"}},
        ),
    )
    assert "Schäfer".encode() in stored.content
    weird = post(owner_mind.key, '{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}', raw=True)
    assert weird.status_code == 200
    assert weird.json()["error"]["code"] == -32601


def test_unknown_host_is_refused_against_dns_rebinding(owner_mind):
    # The transport asks servers to stop DNS rebinding; ALLOWED_HOSTS does, before the view.
    response = Client().post(
        "/mcp",
        data=json.dumps(request("ping")),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}",
        HTTP_HOST="attacker.example",
    )
    assert response.status_code == 400
