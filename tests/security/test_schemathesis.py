"""The API against its own OpenAPI schema: schemathesis generates requests from /api/schema
(valid ones, and invalid ones in negative mode) and checks every answer: never a 5xx, and
the status code, content type, headers and body as the schema documents them.

In-process against the Django WSGI app with the owner's Mind Key (a person's JWT for the
endpoints only people may call), a few examples per operation so the whole run stays well
under a minute. Every operation is tried; the failures of all of them are reported together.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.urls import resolve
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import negative_data_rejection

from memories.actors import Actor
from memories.models import Memory
from scheduler.services import cron_create
from synapse_site.wsgi import application
from tests.conftest import jwt_for
from tests.factories import remember
from webhooks.events import fan_out
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_create

# Hundreds of generated requests: the longest file of the suite.
pytestmark = pytest.mark.slow

MAX_EXAMPLES = 15
HUMAN_ONLY = ("/minds", "/verify", "/unverify", "/chat/history", "/chat/unread", "/chat/send")
# Documentation address space: allowed with SYNAPSE_WEBHOOKS_ALLOW_PRIVATE, never contacted.
ALLOWED_WEBHOOK_URL = "https://203.0.113.9/hook"
CRON = {"name": "job", "schedule": "0 3 * * *", "endpoint": "/memory/contradictions"}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch, settings):
    # Generated webhook URLs are judged, never looked up or sent to: a name that needs DNS
    # is refused as unresolvable, and no connection may open.
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True

    def unresolvable(*args, **kwargs):
        raise socket.gaierror("no lookups in this test")

    def refuse(*args, **kwargs):
        raise AssertionError("the server tried to open a connection")

    monkeypatch.setattr(socket, "getaddrinfo", unresolvable)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def api_schema(db):
    # Like Django's test client: the test's transaction must outlive each request, so the
    # connection is not closed when a request ends.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema", application)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _without_mind(case):
    if case.query:
        case.query.pop("mind", None)
    # Likewise the memory a store replaces must exist in the mind, which no schema can say:
    # an unknown one is a 400 naming `supersedes` (tests/api/test_memory_supersede.py).
    if isinstance(case.body, dict):
        case.body.pop("supersedes", None)
        # Whether a webhook's host is public is the server's to judge (a 400 naming `url`),
        # which no schema can say: a generated URL becomes one the test allows.
        if case.operation.path.startswith("/webhooks") and "url" in case.body:
            case.body["url"] = ALLOWED_WEBHOOK_URL
        # The same for a cron job's outside URL.
        if case.operation.path == "/cron" and "endpoint" in case.body:
            case.body["endpoint"] = ALLOWED_WEBHOOK_URL
    return case


def _as_of_in_the_past(case):
    # Whether a moment is past, and what goes with it, is the server's to judge (a 400
    # naming `as_of`, `about` or `mode`), which no schema can say: a generated moment still
    # to come becomes one already gone, and a recall or search as of a moment asks no topic
    # and no search by meaning (tests/api/test_as_of.py).
    moment = (case.query or {}).get("as_of")
    if moment is not None:
        case.query.pop("about", None)
        case.query.pop("mode", None)
    if isinstance(moment, str):
        try:
            at = datetime.fromisoformat(moment.strip().replace("Z", "+00:00"))
        except ValueError:  # no date-time: left for the server
            at = None
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)  # the server reads a moment without an offset as UTC
        if at is not None and at > datetime.now(UTC):
            case.query["as_of"] = "2020-01-31T18:00:00Z"
    return case


def _replies_to_nothing(case):
    # The message a chat message answers must exist in the mind, which no schema can say:
    # an unknown one is a 400 naming `reply_to_id` (tests/api/test_chat.py).
    if isinstance(case.body, dict) and case.operation.path.startswith("/chat/"):
        case.body.pop("reply_to_id", None)
    return case


def run_operation(operation, mode, headers: dict) -> None:
    # In negative mode every check runs except "a schema-violating request was refused":
    # in a query string an array, an object or an empty object cannot be told from a
    # string or an absent parameter once serialized, so that check fails on requests the
    # server rightly reads as valid. Real findings of it (non-string JSON for string
    # fields, repeated parameters) are fixed and covered by tests/security/test_hostile_input.py.
    excluded = [] if mode == schemathesis.GenerationMode.POSITIVE else [negative_data_rejection]
    cases = operation.as_strategy(generation_mode=mode)
    if headers["Authorization"].startswith("Bearer mk_"):
        # `mind` is a person's parameter, which the schema cannot say: a Mind Key naming
        # another mind is a 400 by design (tests/api/test_scoping.py). In negative mode too:
        # a case whose only "invalid" part was a `mind` string is schema-valid after all.
        cases = cases.map(_without_mind)
    if mode == schemathesis.GenerationMode.POSITIVE:
        cases = cases.map(_as_of_in_the_past).map(_replies_to_nothing)

    @given(case=cases)
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case):
        case.call_and_validate(headers=headers, excluded_checks=excluded)

    check()


@pytest.mark.parametrize(
    "mode", [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
)
def test_api_answers_as_its_schema_says(api_schema, owner, owner_mind, mode):
    agent = {"Authorization": f"Bearer {owner_mind.key}"}
    person = {"Authorization": f"Bearer {jwt_for(owner)}"}
    failures = []
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if operation.path.startswith(("/login", "/register", "/token")):
            continue  # throttled to 10/min: covered by their own tests
        headers = (
            person
            if operation.path.startswith(HUMAN_ONLY) or operation.path.endswith(HUMAN_ONLY)
            else agent
        )
        try:
            run_operation(operation, mode, headers)
        except Unsatisfiable:
            assert mode == schemathesis.GenerationMode.NEGATIVE, operation.path
            continue  # no parameter or body to get wrong (GET /health, GET /minds)
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.method.upper()} {operation.path}:\n{exc}")
    assert not failures, "\n\n".join(failures)


def test_a_client_built_from_the_schema_calls_the_canonical_paths(api_schema, owner, owner_mind):
    # The paths as a generated client formats them (schemathesis' own view of the schema):
    # no trailing slash, and each one reaches its view (a GET answers without a redirect).
    memory = Memory.objects.create(mind=owner_mind.mind, category="fact", key="k", content="x")
    webhook = webhook_create(mind=owner_mind.mind, body={"url": ALLOWED_WEBHOOK_URL}).webhook
    remember(owner_mind.mind, "hooked", "A change the webhook takes")
    fan_out(webhook, now=timezone.now())
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    job = cron_create(mind=owner_mind.mind, body=CRON, actor=Actor.system())
    agent = {"Authorization": f"Bearer {owner_mind.key}"}
    person = {"Authorization": f"Bearer {jwt_for(owner)}"}
    ids = {"id": memory.pk}
    paths = []
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if operation.path.startswith("/minds/"):
            ids = {"id": owner_mind.mind.pk, "share_id": "sh_none"}
        elif operation.path.startswith("/memory/"):
            ids = {"id": memory.pk, "proposal_id": "prop_none", "summary_id": memory.pk}
        elif operation.path.startswith("/webhooks/"):
            ids = {"webhook_id": webhook.pk, "delivery_id": delivery.pk}
        elif operation.path.startswith(("/cron/", "/var/")):
            ids = {"cron_id": job.pk, "key": "a_key"}
        case = api_schema.make_case(operation=operation, path_parameters=ids)
        path = case.formatted_path
        paths.append(path)
        assert not path.endswith("/"), path
        assert resolve(path).url_name, path
        if operation.method.upper() == "GET" and "{" not in operation.path:
            human = operation.path.startswith(HUMAN_ONLY)
            response = case.call(headers=person if human else agent)
            reached = response.status_code < 300 or response.json()["error"] == "invalid"
            assert reached, (path, response.status_code, response.text[:200])
    assert "/memory" in paths and "/memory/recall" in paths and "/minds" in paths
    assert f"/webhooks/{webhook.pk}/deliveries/{delivery.pk}" in paths
    assert f"/cron/{job.pk}/runs" in paths and "/var/a_key" in paths
