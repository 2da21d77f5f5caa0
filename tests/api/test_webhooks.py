"""/webhooks: register, list, read, change, delete, test, rotate the secret, the delivery log
and redelivery, for a mind's agent or a person who may reach the mind."""

from __future__ import annotations

import json

import pytest

from tests.api.memory_helpers import assert_invalid
from tests.conftest import bearer_client, jwt_for
from tests.factories import mind_make
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import MAX_WEBHOOKS

pytestmark = pytest.mark.django_db

SECRET = whsec(b"0123456789abcdef0123")
# Never contacted: registering checks an IP literal without DNS, and no test sends to it.
QUIET = "https://203.0.113.9/hook"


@pytest.fixture
def private_allowed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True


@pytest.fixture
def quiet_url(settings):
    # 203.0.113.0/24 is documentation space, not public: accepted only with the switch.
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    return QUIET


def register(client, url: str, **body) -> dict:
    response = client.post("/webhooks", {"url": url, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- Registering and reading --------------------------------------------------------------------


def test_a_generated_secret_is_answered_once(agent, quiet_url):
    created = register(agent, quiet_url, events="memory.*")
    assert created["id"].startswith("wh_")
    assert created["secret"].startswith("whsec_")
    assert created["events"] == ["memory.*"] and created["enabled"] is True
    assert created["url"] == quiet_url and created["created_at"]
    one = agent.get(f"/webhooks/{created['id']}")
    assert one.status_code == 200
    assert "secret" not in one.json()
    assert one.json() == {k: v for k, v in created.items() if k != "secret"}
    listed = agent.get("/webhooks").json()
    assert listed["total"] == 1 and "secret" not in listed["webhooks"][0]
    assert created["secret"] not in agent.get("/webhooks").content.decode()


def test_a_given_secret_is_never_answered(agent, quiet_url):
    created = register(agent, quiet_url, secret=SECRET, events=["memory.created"])
    assert "secret" not in created
    assert created["events"] == ["memory.created"]


def test_a_person_registers_for_their_mind(human, agent, mind, quiet_url):
    created = register(human, quiet_url)
    assert created["events"] == ["*"]
    assert [w["id"] for w in agent.get("/webhooks").json()["webhooks"]] == [created["id"]]
    assert Webhook.objects.get().mind == mind


def test_paths_take_a_trailing_slash_too(agent, quiet_url):
    created = agent.post("/webhooks/", {"url": quiet_url}, format="json").json()
    assert agent.get(f"/webhooks/{created['id']}/").status_code == 200
    assert agent.get(f"/webhooks/{created['id']}/deliveries/").status_code == 200


def test_a_mind_has_at_most_its_quota(agent, quiet_url):
    for _ in range(MAX_WEBHOOKS):
        register(agent, quiet_url)
    response = agent.post("/webhooks", {"url": quiet_url}, format="json")
    assert response.status_code == 409
    assert response.json()["error"] == "quota_exceeded"


# --- Changing and removing --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch"])
def test_update_changes_what_it_names(agent, quiet_url, method):
    created = register(agent, quiet_url, secret=SECRET)
    path = f"/webhooks/{created['id']}"
    response = getattr(agent, method)(
        path, {"events": "memory.deleted,memory.verified", "enabled": False}, format="json"
    )
    assert response.status_code == 200, response.content
    changed = response.json()
    assert changed["events"] == ["memory.deleted", "memory.verified"]
    assert changed["enabled"] is False and changed["disabled_at"]
    assert changed["url"] == quiet_url and "secret" not in changed
    assert changed["previous_secret_until"] is None
    again = getattr(agent, method)(path, {"secret": "a new secret"}, format="json").json()
    assert again["previous_secret_until"] and "secret" not in again
    enabled = getattr(agent, method)(path, {"enabled": True}, format="json").json()
    assert enabled["enabled"] is True and enabled["disabled_at"] is None
    assert agent.get(path).json() == enabled


def test_delete_removes_it(agent, quiet_url):
    created = register(agent, quiet_url)
    response = agent.delete(f"/webhooks/{created['id']}")
    assert response.status_code == 200
    assert response.json() == {"deleted": True, "id": created["id"]}
    assert agent.get(f"/webhooks/{created['id']}").status_code == 404
    assert agent.get("/webhooks").json() == {"webhooks": [], "total": 0}


# --- Sending ------------------------------------------------------------------------------------


def test_test_sends_a_signed_ping_and_answers_the_attempt(agent, private_allowed):
    with receiving() as receiver:
        created = register(agent, receiver.url, secret=SECRET)
        response = agent.post(f"/webhooks/{created['id']}/test")
        assert response.status_code == 200, response.content
        [payload] = receiver.verified(SECRET)
    answer = response.json()
    assert answer["event"] == "ping" and answer["status"] == "delivered"
    assert answer["attempts"] == 1 and answer["response_status"] == 200
    [attempt] = answer["attempt_log"]
    assert attempt["response_status"] == 200 and attempt["response_body"] == "ok"
    assert attempt["error"] is None
    assert payload["type"] == "ping"
    assert payload["data"]["webhook_id"] == created["id"]
    assert payload["data"]["actor"]["type"] == "agent"


def test_a_failed_test_says_why(agent, private_allowed):
    with receiving(default=500) as receiver:
        created = register(agent, receiver.url)
        answer = agent.post(f"/webhooks/{created['id']}/test").json()
    assert answer["status"] == "failed" and answer["response_status"] == 500
    assert answer["next_attempt_at"] is None  # a ping is not retried


def test_a_change_reaches_the_receiver_and_the_log(agent, mind, private_allowed):
    with receiving() as receiver:
        created = register(agent, receiver.url, secret=SECRET, events="memory.created")
        stored = agent.post(
            "/memory", {"category": "fact", "content": "Lives in Berlin"}, format="json"
        ).json()
        assert sending.deliver_due() == 1
        [payload] = receiver.verified(SECRET)
    assert payload["type"] == "memory.created"
    assert payload["data"]["memory"]["id"] == stored["id"]
    assert payload["data"]["mind_id"] == mind.pk

    log = agent.get(f"/webhooks/{created['id']}/deliveries").json()
    assert log["total"] == 1 and (log["limit"], log["offset"]) == (50, 0)
    [entry] = log["deliveries"]
    assert entry["event"] == "memory.created" and entry["status"] == "delivered"
    assert entry["event_id"] == receiver.received[0].headers["webhook-id"]
    one = agent.get(f"/webhooks/{created['id']}/deliveries/{entry['id']}").json()
    assert {k: one[k] for k in entry} == entry
    assert [a["response_status"] for a in one["attempt_log"]] == [200]


def test_the_log_pages_and_filters(agent, private_allowed):
    with receiving(answers=[500]) as receiver:
        created = register(agent, receiver.url)
        path = f"/webhooks/{created['id']}"
        for _ in range(3):
            agent.post(path + "/test")
    log = agent.get(path + "/deliveries", {"limit": 2, "offset": 1}).json()
    assert log["total"] == 3 and len(log["deliveries"]) == 2
    assert (log["limit"], log["offset"]) == (2, 1)
    everything = agent.get(path + "/deliveries").json()["deliveries"]
    assert [d["id"] for d in log["deliveries"]] == [d["id"] for d in everything[1:]]
    failed = agent.get(path + "/deliveries", {"status": "failed"}).json()
    assert failed["total"] == 1 and failed["deliveries"][0]["id"] == everything[-1]["id"]
    assert agent.get(path + "/deliveries", {"status": "pending"}).json()["total"] == 0


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "x"}, "offset"),
        ({"status": "lost"}, "status"),
    ],
)
def test_bad_log_parameters_are_named(agent, quiet_url, params, named):
    created = register(agent, quiet_url)
    assert_invalid(agent.get(f"/webhooks/{created['id']}/deliveries", params), named)


def test_redeliver_sends_again(agent, private_allowed):
    with receiving(answers=[500]) as receiver:
        created = register(agent, receiver.url, secret=SECRET)
        ping = agent.post(f"/webhooks/{created['id']}/test").json()
        assert ping["status"] == "failed"
        response = agent.post(f"/webhooks/{created['id']}/deliveries/{ping['id']}/redeliver")
        assert response.status_code == 202, response.content
        again = response.json()
        assert again["id"] == ping["id"]
        assert (again["status"], again["attempts"]) == ("pending", 0)
        assert sending.deliver_due() == 1
        payloads = receiver.verified(SECRET)
    assert [p["type"] for p in payloads] == ["ping", "ping"]
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    one = agent.get(f"/webhooks/{created['id']}/deliveries/{ping['id']}").json()
    assert one["status"] == "delivered"
    assert [a["response_status"] for a in one["attempt_log"]] == [500, 200]


def test_redeliver_to_a_disabled_webhook_is_a_conflict(agent, private_allowed):
    with receiving(answers=[500]) as receiver:
        created = register(agent, receiver.url)
        ping = agent.post(f"/webhooks/{created['id']}/test").json()
    agent.put(f"/webhooks/{created['id']}", {"enabled": False}, format="json")
    response = agent.post(f"/webhooks/{created['id']}/deliveries/{ping['id']}/redeliver")
    assert response.status_code == 409
    assert response.json()["error"] == "conflict"
    assert WebhookDelivery.objects.get().status == "failed"


def test_rotate_secret_answers_the_new_one_and_both_sign(agent, private_allowed):
    with receiving() as receiver:
        created = register(agent, receiver.url, secret=SECRET)
        response = agent.post(f"/webhooks/{created['id']}/rotate-secret")
        assert response.status_code == 200, response.content
        rotated = response.json()
        new = rotated["secret"]
        assert new.startswith("whsec_") and new != SECRET
        assert rotated["id"] == created["id"] and rotated["previous_secret_until"]
        agent.post(f"/webhooks/{created['id']}/test")
        assert receiver.verified(SECRET) and receiver.verified(new)
    assert "secret" not in agent.get(f"/webhooks/{created['id']}").json()


# --- Bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"url": "not a url"}, "url"),
        ({"url": "ftp://203.0.113.9/hook"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://user:pw@203.0.113.9/hook"}, "url"),
        ({"url": 42}, "url"),
        ({"url": "http://8.8.8.8/hook"}, "url"),  # plain http to a public host
        ({"url": "https://10.0.0.1/hook"}, "url"),
        ({"url": "https://169.254.169.254/latest/meta-data/"}, "url"),
        ({"url": "https://127.0.0.1/hook"}, "url"),
        ({"url": "https://[::1]/hook"}, "url"),
        ({}, "url"),
        ({"url": "https://8.8.8.8/hook", "secret": "short"}, "secret"),
        ({"url": "https://8.8.8.8/hook", "secret": 12345678}, "secret"),
        ({"url": "https://8.8.8.8/hook", "events": "memory.exploded"}, "events"),
        ({"url": "https://8.8.8.8/hook", "events": ["files.*"]}, "events"),
        ({"url": "https://8.8.8.8/hook", "events": []}, "events"),
        ({"url": "https://8.8.8.8/hook", "events": {"memory.created": True}}, "events"),
        ({"url": "https://8.8.8.8/hook", "enabled": "yes"}, "enabled"),
        ({"url": "https://8.8.8.8/hook", "mind_id": "m_other"}, "mind_id"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(agent, no_network, body, named):
    body_ = assert_invalid(agent.post("/webhooks", body, format="json"), named)
    assert body_["detail"]
    assert not Webhook.objects.exists()


def test_a_private_receiver_is_refused_unless_allowed(agent, no_network):
    response = agent.post("/webhooks", {"url": "http://127.0.0.1:9/hook"}, format="json")
    assert "loopback" in assert_invalid(response, "url")["fields"]["url"][0]


def test_every_field_at_fault_is_named_at_once(agent, no_network):
    response = agent.post(
        "/webhooks",
        {"url": "https://10.0.0.1/", "events": "nope", "secret": "x", "colour": "red"},
        format="json",
    )
    assert set(assert_invalid(response, "url")["fields"]) == {"url", "events", "secret", "colour"}


def test_a_body_that_is_no_object_is_refused(agent, no_network):
    assert_invalid(agent.post("/webhooks", ["https://8.8.8.8/"], format="json"), "non_field_errors")
    response = agent.post("/webhooks", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "malformed_body"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"url": "https://10.0.0.1/hook"}, "url"),
        ({"url": None}, "url"),
        ({"secret": "short"}, "secret"),
        ({"secret": None}, "secret"),
        ({"events": "memory.exploded"}, "events"),
        ({"enabled": "false"}, "enabled"),
        ({"enabled": None}, "enabled"),
        ({"id": "wh_mine"}, "id"),
    ],
)
def test_a_bad_update_is_a_400_and_changes_nothing(agent, settings, body, named):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    created = register(agent, QUIET)
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    before = Webhook.objects.values().get()
    assert_invalid(agent.put(f"/webhooks/{created['id']}", body, format="json"), named)
    assert Webhook.objects.values().get() == before


# --- Whose webhooks -----------------------------------------------------------------------------


@pytest.fixture
def owners_webhook(agent, settings):
    """The owner's webhook with one delivery in its log (a ping to a receiver now closed)."""
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    with receiving() as receiver:
        created = register(agent, receiver.url)
        ping = agent.post(f"/webhooks/{created['id']}/test").json()
    return created["id"], ping["id"]


def every_route(webhook_id: str, delivery_id: str) -> list[tuple[str, str, dict | None]]:
    one = f"/webhooks/{webhook_id}"
    return [
        ("GET", one, None),
        ("PUT", one, {"enabled": False}),
        ("PATCH", one, {"url": QUIET}),
        ("DELETE", one, None),
        ("POST", f"{one}/test", None),
        ("POST", f"{one}/rotate-secret", None),
        ("GET", f"{one}/deliveries", None),
        ("GET", f"{one}/deliveries/{delivery_id}", None),
        ("POST", f"{one}/deliveries/{delivery_id}/redeliver", None),
    ]


def test_another_mind_gets_404_on_every_route(
    owners_webhook, mind, stranger_agent, stranger_mind, other_human, no_network
):
    webhook_id, delivery_id = owners_webhook
    before = (list(Webhook.objects.values()), list(WebhookDelivery.objects.values()))
    stranger = bearer_client(jwt_for(stranger_mind.mind.owner))
    for method, path, body in every_route(webhook_id, delivery_id):
        answers = [
            stranger_agent.generic(method, path, _json(body), content_type="application/json"),
            other_human.generic(
                method, f"{path}?mind={mind.pk}", _json(body), content_type="application/json"
            ),
            stranger.generic(method, path, _json(body), content_type="application/json"),
        ]
        for response in answers:
            assert response.status_code == 404, (method, path, response.content)
            assert webhook_id not in response.content.decode()
    assert stranger_agent.get("/webhooks").json() == {"webhooks": [], "total": 0}
    assert other_human.get("/webhooks", {"mind": mind.pk}).status_code == 404
    assert (list(Webhook.objects.values()), list(WebhookDelivery.objects.values())) == before


def test_unknown_ids_are_404(agent, owners_webhook):
    webhook_id, _ = owners_webhook
    assert agent.get("/webhooks/wh_doesnotexist").status_code == 404
    assert agent.get(f"/webhooks/{webhook_id}/deliveries/dlv_doesnotexist").status_code == 404
    assert agent.get("/webhooks/not-an-id").status_code == 404


def test_a_person_with_two_minds_names_one(owner, mind, agent, quiet_url):
    second, second_key = mind_make(owner, "Second")
    person = bearer_client(jwt_for(owner))
    assert_invalid(person.get("/webhooks"), "mind")
    assert_invalid(person.post("/webhooks", {"url": quiet_url}, format="json"), "mind")
    created = person.post(f"/webhooks?mind={second.pk}", {"url": quiet_url}, format="json")
    assert created.status_code == 201
    webhook_id = created.json()["id"]
    assert person.get("/webhooks", {"mind": second.pk}).json()["total"] == 1
    assert person.get("/webhooks", {"mind": mind.pk}).json()["total"] == 0
    # The webhook belongs to the second mind: the first mind's agent cannot reach it.
    assert agent.get(f"/webhooks/{webhook_id}").status_code == 404
    assert bearer_client(second_key).get(f"/webhooks/{webhook_id}").status_code == 200
    assert person.get(f"/webhooks/{webhook_id}", HTTP_X_MIND_ID=second.pk).status_code == 200
    assert person.get(f"/webhooks/{webhook_id}?mind={mind.pk}").status_code == 404


def test_a_key_naming_another_mind_is_refused(agent, stranger_mind):
    assert_invalid(agent.get("/webhooks", {"mind": stranger_mind.mind.pk}), "mind")


def test_no_credentials_is_401(anon):
    assert anon.get("/webhooks").status_code == 401


def _json(body: dict | None) -> str:
    return json.dumps(body) if body is not None else ""


# --- The schema ---------------------------------------------------------------------------------


def test_the_schema_describes_every_route(anon, db):
    response = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    paths = response.json()["paths"]
    one = "/webhooks/{webhook_id}"
    expected = {
        "/webhooks": {"get", "post"},
        one: {"get", "put", "patch", "delete"},
        f"{one}/test": {"post"},
        f"{one}/rotate-secret": {"post"},
        f"{one}/deliveries": {"get"},
        f"{one}/deliveries/{{delivery_id}}": {"get"},
        f"{one}/deliveries/{{delivery_id}}/redeliver": {"post"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths[path]), path
    assert "201" in paths["/webhooks"]["post"]["responses"]
    assert "202" in paths[f"{one}/deliveries/{{delivery_id}}/redeliver"]["post"]["responses"]
