"""Isolation, route by route (OWASP API1 BOLA, API3 mass assignment, API5 function-level
authorization).

For every route that touches minds or memories (the REST API, MCP, the dashboard) a case
below attacks the owner's mind from outside: the agent of another mind (its own Mind Key)
and a person who does not own the mind (naming it with `?mind=` or `X-Mind-Id`, or in the
path). Each attack gets a 404 (or 403 where only people may call at all), or, for a list,
an answer with nothing of the owner's; and the owner's memories, audit trail and mind are
exactly as before.

`test_every_route_has_an_isolation_case` walks the URL resolver: a new route (or a new
method on a route) without a case here fails it, so isolation cannot be forgotten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from accounts.models import User
from chat.models import ChatMessage
from chat.services import chat_send
from connections.models import Connection
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from minds.models import Mind
from scheduler.models import CronJob, Variable
from scheduler.runner import run_due
from scheduler.services import cron_create, variable_set
from tests.conftest import bearer_client, jwt_for
from tests.factories import PASSWORD, connection_make, embed, remember
from tests.webhook_receiver import receiving
from webhooks.events import fan_out
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db

MARKER = "ownersecretmarker"  # in the owner's memory: must never reach an attacker
SECRET_TEXT = f"The owner's secret: {MARKER}"


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # {mind}, {memory}, {webhook}, {delivery}: the owner's
    body: dict | None = None
    # "object": both attackers get 404. "scoped": the other mind's agent acts on its own
    # mind (200/201, nothing of the owner's in the answer); a person naming the owner's
    # mind gets 404. "people": a Mind Key gets 403; a person not owning the mind 404.
    # "agents": as "scoped" for the other mind's agent; any person gets 403.
    kind: str = "object"
    agent_status: tuple[int, ...] = ()


OWN_KEY = {"category": "fact", "key": "owner_fact", "content": "hijacked by a stranger"}
# A stranger's own webhook, registered disabled: nothing is ever sent to it.
UNUSED_RECEIVER = "http://127.0.0.1:9/hook"
OWN_CRON = {"name": "owner_job", "schedule": "0 3 * * *", "endpoint": "/memory/contradictions"}

REST_CASES: dict[str, list[Case]] = {
    "memory-list": [
        Case("GET", "/memory", kind="scoped"),
        Case("POST", "/memory", OWN_KEY, "scoped"),
    ],
    "memory-detail": [
        Case("GET", "/memory/{memory}"),
        Case("PUT", "/memory/{memory}", {"content": "hijacked"}),
        Case("PATCH", "/memory/{memory}", {"content": "hijacked", "tags": []}),
        Case("DELETE", "/memory/{memory}"),
    ],
    "memory-verify": [Case("POST", "/memory/{memory}/verify", agent_status=(403, 404))],
    "memory-unverify": [Case("POST", "/memory/{memory}/unverify", agent_status=(403, 404))],
    "memory-related": [Case("GET", "/memory/{memory}/related")],
    "memory-supersede": [
        Case("POST", "/memory/{memory}/supersede", {"by": None}),
        Case("POST", "/memory/{memory}/supersede", {"by": "{memory}"}),
    ],
    "memory-proposal": [
        Case("DELETE", "/memory/{memory}/proposals/prop_none", agent_status=(403, 404))
    ],
    "memory-proposals": [Case("GET", "/memory/proposals", kind="scoped")],
    "memory-duplicates": [Case("GET", "/memory/duplicates", kind="scoped")],
    "memory-contradictions": [Case("GET", "/memory/contradictions?within=2w", kind="scoped")],
    "memory-by-tag": [Case("GET", "/memory/by-tag?tag=shared", kind="scoped")],
    "memory-expiring": [Case("GET", "/memory/expiring?within=2w", kind="scoped")],
    "memory-unverified": [Case("GET", "/memory/unverified", kind="scoped")],
    "memory-stats": [Case("GET", "/memory/stats", kind="scoped")],
    "memory-tags": [Case("GET", "/memory/tags", kind="scoped")],
    "memory-health": [Case("GET", "/memory/health", kind="scoped")],
    "memory-graph": [
        Case("GET", "/memory/graph", kind="scoped"),
        Case("GET", "/memory/graph?edges=both&tag=shared", kind="scoped"),
    ],
    "memory-timeline": [Case("GET", "/memory/timeline?period=hour", kind="scoped")],
    "memory-audit": [
        Case("GET", "/memory/audit", kind="scoped"),
        Case("GET", "/memory/audit?memory={memory}", kind="scoped"),
    ],
    "memory-diff": [Case("GET", "/memory/diff?since=0", kind="scoped")],
    "memory-sync": [Case("POST", "/memory/sync", {"memories": [OWN_KEY]}, "scoped")],
    "memory-compact": [
        Case("POST", "/memory/compact", {"older_than": 0, "min_cluster_size": 2}, "scoped"),
        Case("POST", "/memory/compact", {"older_than": 0, "dry_run": True}, "scoped"),
    ],
    "memory-compact-undo": [Case("POST", "/memory/compact/{memory}/undo")],
    "memory-recall": [
        Case("GET", "/memory/recall", kind="scoped"),
        Case("GET", "/memory/recall?format=json", kind="scoped"),
        Case("GET", f"/memory/recall?about={MARKER}&format=json", kind="scoped"),
    ],
    "memory-search": [
        Case("GET", f"/memory/search?q={MARKER}", kind="scoped"),
        Case("GET", f"/memory/search?q={MARKER}&mode=semantic", kind="scoped"),
    ],
    "memory-semantic-search": [
        Case("GET", f"/memory/semantic-search?q={MARKER}&threshold=0", kind="scoped")
    ],
    "mind-export": [
        Case("GET", "/mind/export", kind="scoped"),
        Case("GET", "/mind/export?format=csv", kind="scoped"),
    ],
    "mind-import": [
        Case("POST", "/mind/import", {"memories": [{**OWN_KEY, "id": "{memory}"}]}, "scoped")
    ],
    "mind-list": [
        Case("GET", "/minds", kind="people-scoped"),
        Case("POST", "/minds", {"name": "Mine"}, kind="people-scoped"),
    ],
    "mind-detail": [
        Case("GET", "/minds/{mind}", kind="people"),
        Case("PATCH", "/minds/{mind}", {"name": "Taken over"}, kind="people"),
        Case("DELETE", "/minds/{mind}", kind="people"),
    ],
    "mind-rotate-key": [Case("POST", "/minds/{mind}/rotate-key", kind="people")],
    "mind-revoke-key": [Case("POST", "/minds/{mind}/revoke-key", kind="people")],
    "mind-share": [
        Case("POST", "/minds/{mind}/share", {"user_email": "x@example.com"}, kind="people")
    ],
    "mind-shares": [Case("GET", "/minds/{mind}/shares", kind="people")],
    "mind-share-detail": [
        Case("PUT", "/minds/{mind}/shares/sh_none", {"acl": "admin"}, kind="people"),
        Case("DELETE", "/minds/{mind}/shares/sh_none", kind="people"),
    ],
    "mind-shared": [Case("GET", "/minds/shared", kind="people-scoped")],
    "webhook-list": [
        Case("GET", "/webhooks", kind="scoped"),
        Case("POST", "/webhooks", {"url": UNUSED_RECEIVER, "enabled": False}, "scoped"),
    ],
    "webhook-detail": [
        Case("GET", "/webhooks/{webhook}"),
        Case("PUT", "/webhooks/{webhook}", {"url": UNUSED_RECEIVER}),
        Case("PATCH", "/webhooks/{webhook}", {"enabled": False}),
        Case("DELETE", "/webhooks/{webhook}"),
    ],
    "webhook-test": [Case("POST", "/webhooks/{webhook}/test")],
    "webhook-rotate-secret": [Case("POST", "/webhooks/{webhook}/rotate-secret")],
    "webhook-deliveries": [Case("GET", "/webhooks/{webhook}/deliveries")],
    "webhook-delivery": [Case("GET", "/webhooks/{webhook}/deliveries/{delivery}")],
    "webhook-redeliver": [Case("POST", "/webhooks/{webhook}/deliveries/{delivery}/redeliver")],
    "chat-poll": [
        Case("GET", "/chat/poll", kind="agents"),
        Case("GET", "/chat/poll?since=0", kind="agents"),
    ],
    "chat-reply": [Case("POST", "/chat/reply", {"content": "hijacked"}, "agents")],
    "chat-status": [Case("GET", "/chat/status", kind="agents")],
    # People name the mind with ?mind= (added by the tests), as for lists.
    "chat-history": [Case("GET", "/chat/history", kind="people")],
    "chat-unread": [Case("GET", "/chat/unread?role=human", kind="people")],
    "chat-send": [Case("POST", "/chat/send", {"content": "hijacked"}, "people")],
    "cron-list": [
        Case("GET", "/cron", kind="scoped"),
        Case("POST", "/cron", OWN_CRON, "scoped"),
    ],
    "cron-detail": [Case("DELETE", "/cron/{cron}")],
    "cron-toggle": [Case("POST", "/cron/{cron}/toggle")],
    "cron-runs": [Case("GET", "/cron/{cron}/runs")],
    "var-list": [
        Case("GET", "/var", kind="scoped"),
        Case("POST", "/var", {"key": "owner_var", "value": "hijacked"}, "scoped"),
    ],
    "var-detail": [Case("GET", "/var/owner_var"), Case("DELETE", "/var/owner_var")],
}

# Dashboard routes: (GET must be 404 for another user; POST too, changing nothing).
DASHBOARD_MIND_ROUTES = {
    "dashboard:mind": "",
    "dashboard:mind-key": "key/",
    "dashboard:mind-rotate": "rotate-key/",
    "dashboard:mind-revoke": "revoke-key/",
    "dashboard:mind-settings": "settings/",
    "dashboard:mind-delete": "delete/",
    "dashboard:share-invite": "shares/",
    "dashboard:share-change": "shares/sh_none/",
    "dashboard:share-revoke": "shares/sh_none/revoke/",
    "dashboard:connection-revoke": "connections/{connection}/revoke/",
    "dashboard:memories": "memories/",
    "dashboard:review": "review/",
    "dashboard:bulk-verify": "review/verify/",
    "dashboard:bulk": "memories/bulk/delete/",
    "dashboard:verify-matching": "memories/verify-all/",
    "dashboard:undo": "undo/",
    "dashboard:undo-batch": "undo-batch/",
    "dashboard:activity": "activity/",
    "dashboard:graph": "graph/",
    "dashboard:hygiene": "hygiene/",
    "dashboard:hygiene-compact": "hygiene/compact/",
    "dashboard:hygiene-keep": "hygiene/keep/",
    "dashboard:hygiene-keep-all": "hygiene/keep-all/",
    "dashboard:hygiene-uncompact": "memories/{memory}/uncompact/",
    "dashboard:hygiene-supersede": "memories/{memory}/supersede/",
    "dashboard:hygiene-reject": "memories/{memory}/proposals/prop_none/reject/",
    "dashboard:memory": "memories/{memory}/",
    "dashboard:memory-edit": "memories/{memory}/edit/",
    "dashboard:memory-verify": "memories/{memory}/verify/",
    "dashboard:memory-unverify": "memories/{memory}/unverify/",
    "dashboard:memory-delete": "memories/{memory}/delete/",
    "dashboard:memory-restore": "memories/{memory}/restore/{event}/",
    "dashboard:webhooks": "webhooks/",
    "dashboard:webhook": "webhooks/{webhook}/",
    "dashboard:webhook-enable": "webhooks/{webhook}/enable/",
    "dashboard:webhook-test": "webhooks/{webhook}/test/",
    "dashboard:webhook-rotate": "webhooks/{webhook}/new-secret/",
    "dashboard:webhook-delete": "webhooks/{webhook}/delete/",
    "dashboard:webhook-delivery": "webhooks/{webhook}/deliveries/{delivery}/",
    "dashboard:webhook-redeliver": "webhooks/{webhook}/deliveries/{delivery}/redeliver/",
    "dashboard:chat": "chat/",
    "dashboard:chat-messages": "chat/messages/",
    "dashboard:chat-remember": "chat/1/remember/",
}
# Dashboard routes of no mind: they list or create the signed-in user's own.
DASHBOARD_OWN_ROUTES = {
    "dashboard:minds": "/dashboard/",
    "dashboard:mind-new": "/dashboard/minds/new/",
}

# Routes that hold nothing of a mind, with why.
NOT_MIND_DATA = {
    "guide": "the public guide for agents",
    "health": "global counts only (tests/site)",
    "health-ready": "whether the server may take traffic (tests/site/test_readiness.py)",
    "metrics": "site-wide figures, behind a token of its own (tests/site/test_metrics.py)",
    "register": "creates an account",
    "login": "password check, throttled",
    "token-refresh": "a token for the token's own user",
    "token-logout": "ends the token's own refresh token",
    "schema": "the OpenAPI document",
    "api-docs": "the interactive docs page",
    "login-page": "the dashboard's sign-in form",
    "logout": "ends one's own session",
    "signup": "the dashboard's sign-up form",
    "password_change": "one's own password",
    "password_change_done": "a confirmation page",
    # OAuth for /mcp (tests/mcp_server/test_oauth.py): an app reaches a mind only through a
    # person's consent, and its token only on /mcp, as that one mind's agent.
    "oauth2_provider:resource-metadata": "public discovery document (RFC 9728)",
    "oauth2_provider:resource-metadata-root": "public discovery document (RFC 9728)",
    "oauth2_provider:oauth-server-metadata": "public discovery document (RFC 8414)",
    "oauth2_provider:dcr-register": "registers an app, which reaches nothing until consent",
    "oauth2_provider:dcr-register-management": "an app's own registration, by its own token",
    "oauth2_provider:token": "tokens for a code or refresh token the app holds",
    "oauth2_provider:revoke-token": "ends a token the app holds",
    "oauth2_provider:authorize": "the consent page: only minds the person may write",
}


# --- The routes, from the resolver -------------------------------------------------------------


@dataclass
class Route:
    name: str
    pattern: str
    methods: set[str] = field(default_factory=set)  # known for DRF views, else empty


def _methods(callback) -> set[str]:
    if getattr(callback, "actions", None):  # a DRF viewset route
        # (DRF adds "head" to a GET route's actions on its first request)
        return {m.upper() for m in callback.actions} - {"HEAD", "OPTIONS"}
    view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view_class is not None and hasattr(view_class, "http_method_names"):
        implemented = {m for m in view_class.http_method_names if hasattr(view_class, m)}
        return {m.upper() for m in implemented - {"options", "head"}}
    return set()


def routes(resolver=None, prefix: str = "", namespace: str = "") -> list[Route]:
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            found += routes(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}{entry.name}" if entry.name else None
            found.append(Route(name, prefix + str(entry.pattern), _methods(entry.callback)))
    return found


def test_every_route_has_an_isolation_case():
    missing = []
    for route in routes():
        if route.pattern.startswith("admin/"):
            continue  # the admin is staff-only: test_admin_is_for_staff_only
        if route.name is None:
            assert route.pattern == "dashboard", route  # the redirect to /dashboard/
            continue
        if route.name in REST_CASES:
            tested = {case.method for case in REST_CASES[route.name]}
            if route.methods - tested:
                missing.append(f"{route.name}: {sorted(route.methods - tested)}")
        elif route.name not in {
            *DASHBOARD_MIND_ROUTES,
            *DASHBOARD_OWN_ROUTES,
            "mcp",
            *NOT_MIND_DATA,
        }:
            missing.append(f"{route.name} ({route.pattern})")
    assert not missing, "Routes without an isolation case in this module: " + ", ".join(missing)


# --- The owner's state ---------------------------------------------------------------------------


@pytest.fixture
def setting(owner_mind, stranger_mind):
    """The owner's mind with memories, and a stranger's mind with some of its own."""
    mind = owner_mind.mind
    soon = timezone.now() + timezone.timedelta(days=3)
    memory = remember(mind, "owner_fact", SECRET_TEXT, tags=["shared"], expires_at=soon)
    other = remember(mind, "owner_other", f"Also {MARKER}", tags=["shared"], priority="critical")
    theirs = remember(stranger_mind.mind, "their_fact", "The stranger's own", tags=["shared"])
    embed(memory, other, theirs)  # searched by meaning too
    chat_send(mind=mind, user=mind.owner, body={"content": SECRET_TEXT})
    connection_make(mind, mind.owner)
    return mind, memory


@pytest.fixture
def owner_webhook(setting, settings):
    """The owner's webhook, aimed at a receiver of the test's own, with a delivery in its log
    (made as the worker makes it, and never sent)."""
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    mind, _ = setting
    with receiving() as receiver:
        webhook = webhook_create(mind=mind, body={"url": receiver.url}).webhook
        remember(mind, "owner_hooked", "A change the webhook takes")
        fan_out(webhook, now=timezone.now())
        yield webhook, WebhookDelivery.objects.get(webhook=webhook), receiver


@pytest.fixture
def owner_cron(setting) -> CronJob:
    """The owner's cron job (with a run in its log) and variable."""
    mind, _ = setting
    job = cron_create(mind=mind, body=OWN_CRON, actor=Actor.system())
    CronJob.objects.filter(pk=job.pk).update(next_run_at=timezone.now())
    run_due()
    variable_set(mind=mind, body={"key": "owner_var", "value": SECRET_TEXT})
    return job


def owner_state(mind: Mind) -> tuple:
    mind = Mind.objects.get(pk=mind.pk)
    memories = sorted(
        Memory.objects.filter(mind=mind).values_list(
            "id", "category", "key", "content", "tags", "verified", "updated_at"
        )
    )
    events = MemoryEvent.objects.filter(mind_id=mind.pk).count()
    webhooks = sorted(
        Webhook.objects.filter(mind=mind).values_list(
            "id", "url", "enabled", "secret_sealed", "previous_secrets_sealed", "updated_at"
        )
    )
    deliveries = sorted(
        WebhookDelivery.objects.filter(webhook__mind=mind).values_list(
            "id", "status", "attempts", "next_attempt_at"
        )
    )
    chat = sorted(ChatMessage.objects.filter(mind=mind).values_list("number", "read_at"))
    scheduled = sorted(
        CronJob.objects.filter(mind=mind).values_list("id", "enabled", "next_run_at", "last_run_at")
    )
    variables = sorted(Variable.objects.filter(mind=mind).values_list("key", "value", "updated_at"))
    connections = sorted(Connection.objects.filter(mind=mind).values_list("id", "person_id"))
    return (
        mind.name,
        mind.description,
        mind.key_hash,
        memories,
        events,
        webhooks,
        deliveries,
        chat,
        scheduled,
        variables,
        connections,
    )


def call(client, method: str, path: str, body: dict | None = None, **extra):
    data = json.dumps(body) if body is not None else ""
    return client.generic(method, path, data, content_type="application/json", **extra)


def assert_nothing_of(
    response, mind: Mind, memory: Memory, *, asked: str = "", also: tuple[str, ...] = ()
) -> None:
    """No trace of the owner's data in the answer (the marker may be echoed if it was asked)."""
    if getattr(response, "streaming", False):
        text = b"".join(response.streaming_content).decode()
    else:
        text = response.content.decode()
    secrets = [SECRET_TEXT, mind.pk, memory.pk, *also]
    if MARKER not in asked:
        secrets.append(MARKER)
    for secret in secrets:
        assert secret not in text, (response.status_code, text[:300])


def flat_cases():
    for name, cases in REST_CASES.items():
        for case in cases:
            yield pytest.param(case, id=f"{name} {case.method} {case.path}")


@pytest.mark.parametrize("case", list(flat_cases()))
def test_another_mind_cannot_reach_the_owners_data(
    case, setting, owner_webhook, owner_cron, stranger_agent, other_human, stranger_mind
):
    mind, memory = setting
    webhook, delivery, receiver = owner_webhook
    path = case.path.format(
        mind=mind.pk, memory=memory.pk, webhook=webhook.pk, delivery=delivery.pk, cron=owner_cron.pk
    )
    body = json.loads(json.dumps(case.body).replace("{memory}", memory.pk)) if case.body else None
    before = owner_state(mind)
    owned = (webhook.pk, delivery.pk, owner_cron.pk)

    # 1. The agent of another mind, with its own valid Mind Key.
    response = call(stranger_agent, case.method, path, body)
    if case.kind in ("people", "people-scoped"):
        assert response.status_code == 403, response.content
    elif case.kind == "object":
        assert response.status_code in (case.agent_status or (404,)), response.content
    else:  # scoped: it acts on its own mind
        assert response.status_code in (200, 201), response.content
    assert_nothing_of(response, mind, memory, asked=path, also=owned)
    assert owner_state(mind) == before

    # 2. A person who does not own the mind, naming it in the query, a header, or the path.
    if case.kind == "people-scoped":
        response = call(other_human, case.method, path, body)
        assert response.status_code in (200, 201), response.content
        assert_nothing_of(response, mind, memory, asked=path, also=owned)
    elif case.kind == "agents":
        separator = "&" if "?" in path else "?"
        for response in (
            call(other_human, case.method, f"{path}{separator}mind={mind.pk}", body),
            call(other_human, case.method, path, body, HTTP_X_MIND_ID=mind.pk),
        ):
            assert response.status_code == 403, response.content
            assert_nothing_of(response, mind, memory, asked=path, also=owned)
    else:
        separator = "&" if "?" in path else "?"
        attempts = [
            call(other_human, case.method, f"{path}{separator}mind={mind.pk}", body),
            call(other_human, case.method, path, body, HTTP_X_MIND_ID=mind.pk),
        ]
        for response in attempts:
            assert response.status_code == 404, response.content
            assert_nothing_of(response, mind, memory, asked=path, also=owned)
    assert owner_state(mind) == before

    # 3. The stranger's owner, naming their own mind while reaching for the owner's data.
    stranger = bearer_client(jwt_for(stranger_mind.mind.owner))
    if case.kind == "object":
        response = call(stranger, case.method, f"{path}?mind={stranger_mind.mind.pk}", body)
        assert response.status_code == 404, response.content
        assert_nothing_of(response, mind, memory, asked=path, also=owned)
    assert owner_state(mind) == before
    assert receiver.received == []  # nothing was sent on the owner's behalf


# --- MCP -----------------------------------------------------------------------------------------


def mcp(key: str, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
        "/mcp", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


MCP_CALLS = [
    ("recall", {}),
    ("recall", {"about": MARKER}),
    ("search", {"q": MARKER}),
    ("list_memories", {}),
    ("memories_by_tag", {"tag": "shared"}),
    ("expiring", {"within": "2w"}),
    ("forget", {"id": "{memory}"}),
    ("forget", {"category": "fact", "key": "owner_fact"}),
    ("remember", {"category": "fact", "key": "owner_fact", "content": "hijacked"}),
    ("check_messages", {}),
    ("check_messages", {"since": 0}),
    ("reply", {"content": "hijacked", "reply_to_id": 1}),
]


@pytest.mark.parametrize(("tool", "arguments"), MCP_CALLS, ids=lambda v: str(v)[:30])
def test_mcp_tools_of_another_mind_see_and_change_nothing(setting, stranger_mind, tool, arguments):
    mind, memory = setting
    before = owner_state(mind)
    arguments = json.loads(json.dumps(arguments).replace("{memory}", memory.pk))
    answer = mcp(stranger_mind.key, "tools/call", {"name": tool, "arguments": arguments})
    text = json.dumps(answer)
    assert SECRET_TEXT not in text and memory.pk not in text and mind.pk not in text
    if tool != "search" and "about" not in arguments:  # these echo the words they were given
        assert MARKER not in text
    if tool == "forget" and "id" in arguments:
        assert answer["result"]["isError"] is True
    assert owner_state(mind) == before


def test_mcp_resources_of_another_mind_are_not_found(setting, stranger_mind):
    _, memory = setting
    answer = mcp(stranger_mind.key, "resources/read", {"uri": f"synapse://memory/{memory.pk}"})
    assert "error" in answer
    assert MARKER not in json.dumps(answer)
    answer = mcp(stranger_mind.key, "resources/read", {"uri": "synapse://recall"})
    assert MARKER not in json.dumps(answer)


def test_a_person_cannot_use_mcp_and_no_tool_verifies(owner, owner_mind, setting):
    response = Client(HTTP_AUTHORIZATION=f"Bearer {jwt_for(owner)}").post(
        "/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        content_type="application/json",
    )
    assert response.status_code == 401
    names = [tool["name"] for tool in mcp(owner_mind.key, "tools/list", {})["result"]["tools"]]
    assert not [name for name in names if "verif" in name]
    answer = mcp(owner_mind.key, "tools/call", {"name": "verify", "arguments": {}})
    assert "error" in answer or answer["result"]["isError"]


# --- Dashboard ---------------------------------------------------------------------------------


@pytest.fixture
def dashboard_urls(setting, owner_webhook):
    mind, memory = setting
    webhook, delivery, _ = owner_webhook
    event = MemoryEvent.objects.filter(memory_id=memory.pk).first()
    base = f"/dashboard/minds/{mind.pk}/"
    return {
        name: base
        + suffix.format(
            memory=memory.pk,
            event=event.pk,
            webhook=webhook.pk,
            delivery=delivery.pk,
            connection=Connection.objects.get(mind=mind).pk,
        )
        for name, suffix in DASHBOARD_MIND_ROUTES.items()
    }


def test_dashboard_pages_of_another_users_mind_are_404_and_change_nothing(
    setting, other_user, dashboard_urls
):
    mind, memory = setting
    before = owner_state(mind)
    browser = Client()
    browser.force_login(other_user)
    for name, url in dashboard_urls.items():
        # A POST-only page answers GET with 405 before looking anything up.
        assert browser.get(url).status_code in (404, 405), name
        form = {"name": "Mine", "content": "hijacked", "memory": [memory.pk], "confirm": "1"}
        assert browser.post(url, form).status_code == 404, name
    assert owner_state(mind) == before
    for name, url in DASHBOARD_OWN_ROUTES.items():
        response = browser.get(url)
        assert response.status_code == 200, name
        assert_nothing_of(response, mind, memory)


def test_dashboard_needs_a_session_login_not_a_key_or_token(
    setting, owner, owner_mind, dashboard_urls
):
    mind, _ = setting
    before = owner_state(mind)
    for credentials in (
        {},
        {"HTTP_AUTHORIZATION": f"Bearer {owner_mind.key}"},
        {"HTTP_AUTHORIZATION": f"Bearer {jwt_for(owner)}"},
    ):
        browser = Client(**credentials)
        for name, url in [*dashboard_urls.items(), *DASHBOARD_OWN_ROUTES.items()]:
            for response in (browser.get(url), browser.post(url, {"confirm": "1"})):
                assert response.status_code == 302, name
                assert response["Location"].startswith("/accounts/login/"), name
    assert owner_state(mind) == before


def test_admin_is_for_staff_only(setting, owner, owner_mind):
    mind, memory = setting
    pages = [
        "/admin/",
        "/admin/memories/memory/",
        f"/admin/memories/memory/{memory.pk}/change/",
        "/admin/minds/mind/",
        f"/admin/minds/mind/{mind.pk}/change/",
    ]
    not_staff = Client()
    not_staff.force_login(owner)  # a signed-in person, owner of the mind, but not staff
    for client in (Client(), not_staff, Client(HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}")):
        for page in pages:
            response = client.get(page)
            assert response.status_code == 302, page
            assert response["Location"].startswith("/admin/login/"), page
        response = client.post(
            "/admin/memories/memory/",
            {"action": "verify_selected", "_selected_action": [memory.pk]},
        )
        assert response.status_code == 302
    memory.refresh_from_db()
    assert not memory.verified
    staff = User.objects.create_user(email="staff@example.com", password=PASSWORD, is_staff=True)
    browser = Client()
    browser.force_login(staff)
    assert browser.get("/admin/").status_code == 200


# --- Verification is human-only ----------------------------------------------------------------


def test_verification_needs_a_person_everywhere(setting, agent, human, owner_mind):
    _, memory = setting
    for action in ("verify", "unverify"):
        response = agent.post(f"/memory/{memory.pk}/{action}")
        assert response.status_code == 403
        assert response.json()["error"] == "forbidden"
    memory.refresh_from_db()
    assert not memory.verified
    assert human.post(f"/memory/{memory.pk}/verify").json()["verified"] is True


# --- Mass assignment: fields the server owns -------------------------------------------------

FORGED = {
    "id": "mem_chosenbyclient",
    "source": "user",
    "verified": True,
    "verified_by": "boss@example.com",
    "verified_at": "2020-01-01T00:00:00Z",
    "created_at": "2000-01-01T00:00:00Z",
    "updated_at": "2000-01-01T00:00:00Z",
}


def assert_server_owned(memory: Memory, *, mind: Mind) -> None:
    assert memory.pk != FORGED["id"] and memory.pk.startswith("mem_")
    assert memory.mind_id == mind.pk
    assert memory.source == "agent"
    assert (memory.verified, memory.verified_by, memory.verified_at) == (False, "", None)
    assert memory.created_at.year >= 2026 and memory.updated_at.year >= 2026


def test_an_agent_cannot_set_server_owned_fields_on_store(agent, mind):
    body = {"category": "fact", "key": "forged", "content": "x", **FORGED, "mind_id": mind.pk}
    response = agent.post("/memory", body, format="json")
    assert response.status_code == 201
    assert any("Ignored fields" in w for w in response.json()["warnings"])
    assert_server_owned(Memory.objects.get(key="forged"), mind=mind)


def test_mind_id_of_another_mind_in_a_body_is_refused(agent, mind, stranger_mind):
    body = {
        "category": "fact",
        "key": "elsewhere",
        "content": "x",
        "mind_id": stranger_mind.mind.pk,
    }
    response = agent.post("/memory", body, format="json")
    assert response.status_code == 400
    assert "mind_id" in response.json()["fields"]
    assert not Memory.objects.filter(key="elsewhere").exists()


@pytest.mark.parametrize("method", ["put", "patch"])
def test_an_agent_cannot_set_server_owned_fields_on_update(agent, mind, method):
    memory = remember(mind, "forged", "x")
    created = memory.created_at
    response = getattr(agent, method)(
        f"/memory/{memory.pk}", {"content": "y", **FORGED, "mind_id": mind.pk}, format="json"
    )
    assert response.status_code == 200, response.content
    memory.refresh_from_db()
    assert memory.content == "y" and memory.created_at == created
    assert_server_owned(memory, mind=mind)


def test_an_agent_cannot_set_server_owned_fields_on_sync_or_import(agent, mind):
    item = {"category": "fact", "content": "x", **FORGED, "mind_id": mind.pk}
    assert (
        agent.post("/memory/sync", {"memories": [{**item, "key": "s"}]}, format="json").json()[
            "errors"
        ]
        == []
    )
    response = agent.post("/mind/import", {"memories": [{**item, "key": "i"}]}, format="json")
    assert response.json()["errors"] == []
    for key in ("s", "i"):
        assert_server_owned(Memory.objects.get(key=key), mind=mind)


def test_import_by_a_person_never_touches_another_minds_memory(human, mind, stranger_mind):
    theirs = remember(stranger_mind.mind, "their_fact", "The stranger's own")
    record = {
        "id": theirs.pk,
        "mind_id": stranger_mind.mind.pk,
        "category": "fact",
        "key": "their_fact",
        "content": "overwritten?",
    }
    response = human.post("/mind/import", {"memories": [record]}, format="json")
    assert response.status_code == 200, response.content
    theirs.refresh_from_db()
    assert theirs.content == "The stranger's own" and theirs.mind_id == stranger_mind.mind.pk
    mine = Memory.objects.get(mind=mind, key="their_fact")
    assert mine.pk != theirs.pk


def test_a_person_cannot_set_a_minds_owner_id_or_key(human, owner, other_user, mind):
    response = human.post(
        "/minds",
        {
            "name": "Chosen",
            "id": "m_chosenbyclient",
            "owner": other_user.pk,
            "key_hash": "0" * 64,
            "key_prefix": "mk_chosen",
            "memory_count": 99,
        },
        format="json",
    )
    assert response.status_code == 201
    created = Mind.objects.get(pk=response.json()["id"])
    assert created.pk != "m_chosenbyclient" and created.owner == owner
    assert created.key_hash != "0" * 64
    assert Mind.objects.for_key(response.json()["mind_key"]) == created
    key_hash = mind.key_hash
    response = human.patch(
        f"/minds/{mind.pk}",
        {"owner": other_user.pk, "key_hash": "0" * 64, "id": "m_x"},
        format="json",
    )
    assert response.status_code == 200
    mind.refresh_from_db()
    assert (mind.owner, mind.key_hash) == (owner, key_hash)


# --- Nothing fetches a URL it is given (API7 SSRF) ----------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "synapse://memory/../../etc/passwd",
        "https://example.com/synapse://recall",
    ],
)
def test_mcp_resources_only_name_this_minds_data_never_other_urls(owner_mind, uri, monkeypatch):
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the server tried to open a connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    answer = mcp(owner_mind.key, "resources/read", {"uri": uri})
    assert "error" in answer
