"""Sharing, level by level, route by route (API.md §9.5).

Seven people stand towards the owner's mind: its owner; three people it is shared with, at
admin, write and read; one whose share was revoked; one invited by address whose share is
still pending (nobody signed in with it since); a stranger. Every REST route of
test_isolation_matrix.py's REST_CASES and every dashboard page of its DASHBOARD_MIND_ROUTES is
called by each of them:

- at or above the level the call needs (NEEDS, DASHBOARD_NEEDS): it works;
- below it, on a mind they see: 403, and nothing of the owner's changed;
- on a mind they cannot see (revoked, pending, stranger): 404, like a missing mind.

One test starts gunicorn with two workers and shows a revoke and a lowered level hold on
each worker from the very next request: access is read on every call, never kept.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from accounts.once import form_token_new
from chat.services import chat_send
from memories.actors import Actor
from memories.hygiene.compact import memory_compact
from memories.models import MemoryEvent, SupersedeProposal
from memories.services import memory_supersede, memory_verify
from minds.access import Level
from minds.models import Mind, Share
from scheduler.services import cron_create, variable_set
from tests.conftest import bearer_client, jwt_for
from tests.factories import connection_make, mind_make, remember, share_make, user_make
from tests.reliability.harness import GunicornServer
from tests.security.test_isolation_matrix import (
    DASHBOARD_MIND_ROUTES,
    MARKER,
    OWN_CRON,
    REST_CASES,
    SECRET_TEXT,
    Case,
    assert_nothing_of,
    call,
    owner_state,
)
from tests.webhook_receiver import receiving
from webhooks.events import fan_out
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db

READ, WRITE, ADMIN, OWNER = Level.READ, Level.WRITE, Level.ADMIN, Level.OWNER
ANY_PERSON = None  # a route of the caller's own: their minds, the minds shared with them

# The level each REST route and method needs, in one table. A route (or method) missing here
# fails test_every_rest_route_has_a_level.
NEEDS: dict[str, Level | None] = {
    "memory-list GET": READ,
    "memory-list POST": WRITE,
    "memory-detail GET": READ,
    "memory-detail PUT": WRITE,
    "memory-detail PATCH": WRITE,
    "memory-detail DELETE": WRITE,
    "memory-verify POST": WRITE,
    "memory-unverify POST": WRITE,
    "memory-related GET": READ,
    "memory-supersede POST": WRITE,
    "memory-proposal DELETE": WRITE,
    "memory-proposals GET": READ,
    "memory-duplicates GET": READ,
    "memory-contradictions GET": READ,
    "memory-by-tag GET": READ,
    "memory-expiring GET": READ,
    "memory-unverified GET": READ,
    "memory-stats GET": READ,
    "memory-tags GET": READ,
    "memory-graph GET": READ,
    "memory-timeline GET": READ,
    "memory-health GET": READ,
    "memory-audit GET": READ,
    "memory-diff GET": READ,
    "memory-sync POST": WRITE,
    "memory-compact POST": WRITE,
    "memory-compact-undo POST": WRITE,
    "memory-recall GET": READ,
    "memory-search GET": READ,
    "memory-semantic-search GET": READ,
    "mind-export GET": READ,
    "mind-import POST": WRITE,
    "mind-list GET": ANY_PERSON,
    "mind-list POST": ANY_PERSON,
    "mind-detail GET": READ,
    "mind-detail PATCH": ADMIN,
    "mind-detail DELETE": OWNER,
    "mind-rotate-key POST": ADMIN,
    "mind-revoke-key POST": ADMIN,
    "mind-share POST": ADMIN,
    "mind-shares GET": ADMIN,
    "mind-share-detail PUT": ADMIN,
    "mind-share-detail DELETE": ADMIN,
    "mind-shared GET": ANY_PERSON,
    "webhook-list GET": ADMIN,
    "webhook-list POST": ADMIN,
    "webhook-detail GET": ADMIN,
    "webhook-detail PUT": ADMIN,
    "webhook-detail PATCH": ADMIN,
    "webhook-detail DELETE": ADMIN,
    "webhook-test POST": ADMIN,
    "webhook-rotate-secret POST": ADMIN,
    "webhook-deliveries GET": ADMIN,
    "webhook-delivery GET": ADMIN,
    "webhook-redeliver POST": ADMIN,
    "chat-history GET": READ,
    "chat-unread GET": READ,
    "chat-send POST": WRITE,
    "cron-list GET": READ,
    "cron-list POST": WRITE,
    "cron-detail DELETE": WRITE,
    "cron-toggle POST": WRITE,
    "cron-runs GET": READ,
    "var-list GET": READ,
    "var-list POST": WRITE,
    "var-detail GET": READ,
    "var-detail DELETE": WRITE,
}

# Calls on one memory find its mind themselves: people name none (API.md §9.5).
ONE_MEMORY = {
    "memory-detail",
    "memory-verify",
    "memory-unverify",
    "memory-related",
    "memory-supersede",
    "memory-proposal",
}

# Each dashboard page's level for GET and for POST; None: the method is not offered (405
# before any lookup). A page that only shows answers a POST as its GET, at the same level.
# A page missing here fails test_every_dashboard_page_has_a_level.
DASHBOARD_NEEDS: dict[str, tuple[Level | None, Level | None]] = {
    "dashboard:mind": (READ, READ),
    "dashboard:mind-key": (ADMIN, ADMIN),
    "dashboard:mind-rotate": (ADMIN, ADMIN),
    "dashboard:mind-revoke": (ADMIN, ADMIN),
    "dashboard:mind-settings": (ADMIN, ADMIN),
    "dashboard:mind-delete": (OWNER, OWNER),
    "dashboard:memories": (READ, READ),
    "dashboard:review": (READ, READ),
    "dashboard:bulk-verify": (None, WRITE),
    "dashboard:bulk": (None, WRITE),
    "dashboard:verify-matching": (WRITE, WRITE),
    "dashboard:undo": (None, WRITE),
    "dashboard:undo-batch": (None, WRITE),
    "dashboard:activity": (READ, READ),
    "dashboard:graph": (READ, READ),
    "dashboard:hygiene": (READ, READ),
    "dashboard:hygiene-compact": (None, WRITE),
    "dashboard:hygiene-keep": (None, WRITE),
    "dashboard:hygiene-keep-all": (None, WRITE),
    "dashboard:hygiene-uncompact": (None, WRITE),
    "dashboard:hygiene-supersede": (None, WRITE),
    "dashboard:hygiene-reject": (None, WRITE),
    "dashboard:memory": (READ, READ),
    "dashboard:memory-edit": (WRITE, WRITE),
    "dashboard:memory-verify": (None, WRITE),
    "dashboard:memory-unverify": (None, WRITE),
    "dashboard:memory-delete": (WRITE, WRITE),
    "dashboard:memory-restore": (None, WRITE),
    "dashboard:webhooks": (ADMIN, ADMIN),
    "dashboard:webhook": (ADMIN, ADMIN),
    "dashboard:webhook-enable": (None, ADMIN),
    "dashboard:webhook-test": (None, ADMIN),
    "dashboard:webhook-rotate": (ADMIN, ADMIN),
    "dashboard:webhook-delete": (ADMIN, ADMIN),
    "dashboard:webhook-delivery": (ADMIN, ADMIN),
    "dashboard:webhook-redeliver": (None, ADMIN),
    "dashboard:share-invite": (None, ADMIN),
    "dashboard:share-change": (None, ADMIN),
    "dashboard:share-revoke": (ADMIN, ADMIN),
    "dashboard:connection-revoke": (ADMIN, ADMIN),
    "dashboard:chat": (READ, WRITE),
    "dashboard:chat-messages": (READ, None),
    "dashboard:chat-remember": (None, WRITE),
}

# Who stands how towards the owner's mind, and at which level they reach it (None: not at all).
PERSONAS: dict[str, Level | None] = {
    "owner": OWNER,
    "admin": ADMIN,
    "write": WRITE,
    "read": READ,
    "revoked": None,
    "pending": None,
    "stranger": None,
}

INVITED = "invitee@example.com"  # a pending share of the owner's, for the share routes
OLD = timezone.now() - timedelta(days=40)
EDITOR = [  # old notes on one subject: a compaction makes them one summary
    ("preference_editor", "Uses Neovim with LazyVim."),
    ("preference_editor_config", "Neovim config lives in ~/.config/nvim."),
    ("preference_editor_keys", "Uses vim keybindings in every editor."),
]


def test_every_rest_route_has_a_level():
    routes = {
        f"{name} {case.method}"
        for name, cases in REST_CASES.items()
        for case in cases
        if case.kind != "agents"  # the agent's side: test_no_person_reaches_the_agents_side
    }
    assert not routes - set(NEEDS), f"REST routes without a level in NEEDS: {routes - set(NEEDS)}"
    assert not set(NEEDS) - routes, f"NEEDS names routes no longer tested: {set(NEEDS) - routes}"


def test_every_dashboard_page_has_a_level():
    pages, levels = set(DASHBOARD_MIND_ROUTES), set(DASHBOARD_NEEDS)
    assert not pages - levels, f"Dashboard pages without a level: {pages - levels}"
    assert not levels - pages, f"DASHBOARD_NEEDS names pages no longer tested: {levels - pages}"


# --- Every worker at once (first in the module: the longest test starts first) -----------

PASSWORD = "a long live-server password"
# The access log names the worker that served each request (gunicorn's `p`: "<pid>").
SERVED_BY = re.compile(r"^<(\d+)> (\w+) (\S+) (\d{3})$", re.M)


def person(server: GunicornServer, email: str) -> str:
    """An account made and signed in over HTTP, as a client would; its access token."""
    client = server.client()
    assert client.request(
        "POST", "/register", json_body={"email": email, "password": PASSWORD}
    ).status in (201, 202)
    reply = client.request("POST", "/login", json_body={"email": email, "password": PASSWORD})
    client.close()
    assert reply.status == 200, reply.body
    return reply.json()["access"]


def ask(server: GunicornServer, token: str, method: str, path: str, body=None) -> int:
    """One call on a connection of its own; its status."""
    client = server.client(token=token)
    try:
        return client.request(method, path, json_body=body).status
    finally:
        client.close()


@contextmanager
def worker_held(server: GunicornServer) -> Iterator[socket.socket]:
    """Keep one worker busy reading a request whose headers never end: every other call
    meanwhile goes to the other worker (gunicorn's sync workers serve one at a time)."""
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.3)  # taken by an idle worker
        yield conn
    finally:
        conn.close()


def on_each_worker(server: GunicornServer, call_all) -> list[set[int]]:
    """Run `call_all()` with the first worker held, then with the second held: each worker
    serves it once. Returns the pids that served each run (from the access log)."""
    served = []
    first = worker_held(server)
    first.__enter__()
    try:
        start = len(server.log_text())
        call_all()
        served.append(served_by(server, start))
        with worker_held(server):
            first.__exit__(None, None, None)  # the first worker is free; the second is held
            time.sleep(0.2)
            start = len(server.log_text())
            call_all()
            served.append(served_by(server, start))
    finally:
        first.__exit__(None, None, None)
    return served


def served_by(server: GunicornServer, start: int) -> set[int]:
    time.sleep(0.1)  # the log line follows the answer
    return {int(pid) for pid, *_ in SERVED_BY.findall(server.log_text()[start:])}


@contextmanager
def two_workers(data_dir) -> Iterator[GunicornServer]:
    """gunicorn with two workers on a migrated database of its own, each request's worker in
    the access log (served_by); skipped, saying why, where it cannot start."""
    log_format = "--access-logformat '%(p)s %(m)s %(U)s %(s)s'"
    server = GunicornServer(
        data_dir, workers=2, env={"GUNICORN_CMD_ARGS": log_format, "SYNAPSE_EMBEDDINGS": "off"}
    )
    server.manage("migrate", "--noinput")
    try:
        server.start()
    except RuntimeError as exc:
        pytest.skip(f"gunicorn did not start here: {exc}")
    try:
        yield server
    finally:
        server.stop()


def assert_both_workers(served: list[set[int]]) -> None:
    """Each run of on_each_worker was served by one worker, and the two runs by both."""
    assert all(len(pids) == 1 for pids in served), served
    assert len(set.union(*served)) == 2, served


@pytest.mark.slow
def test_a_revoke_and_a_lowered_level_hold_on_every_worker_from_the_next_request(tmp_path):
    with two_workers(tmp_path) as server:
        owner, reader = person(server, "owner@example.com"), person(server, "reader@example.com")
        client = server.client(token=owner)
        mind = client.request("POST", "/minds", json_body={"name": "Shared"}).json()["id"]
        stored = client.request(
            "POST", f"/memory?mind={mind}", json_body={"category": "fact", "content": "Shared"}
        )
        memory = stored.json()["id"]
        share = client.request(
            "POST",
            f"/minds/{mind}/share",
            json_body={"user_email": "reader@example.com", "acl": "write"},
        ).json()["id"]
        client.close()
        assert [
            m["id"]
            for m in server.client(token=reader).request("GET", "/minds/shared").json()["minds"]
        ] == [mind]  # claims the invitation

        def reads(expected: int, times: int = 10):
            def call_all():
                path = f"/memory?mind={mind}"
                statuses = [ask(server, reader, "GET", path) for _ in range(times)]
                assert statuses == [expected] * times
                assert ask(server, reader, "GET", f"/memory/{memory}") == expected

            return call_all

        def writes(expected: int):
            def call_all():
                body = {"content": "Changed by the reader"}
                assert ask(server, reader, "PUT", f"/memory/{memory}", body) == expected

            return call_all

        assert_both_workers(on_each_worker(server, reads(200)))
        assert_both_workers(on_each_worker(server, writes(200)))

        lowered = ask(server, owner, "PUT", f"/minds/{mind}/shares/{share}", {"acl": "read"})
        assert lowered == 200
        assert_both_workers(on_each_worker(server, writes(403)))
        assert_both_workers(on_each_worker(server, reads(200, times=2)))

        assert ask(server, owner, "DELETE", f"/minds/{mind}/shares/{share}") == 200
        assert_both_workers(on_each_worker(server, reads(404)))
        assert_both_workers(on_each_worker(server, writes(404)))


# --- The owner's mind and the people around it -------------------------------------------------


@pytest.fixture(scope="module")
def receiver():
    """One receiver for the module's webhooks (started once: stopping one takes a while)."""
    with receiving() as receiver:
        yield receiver


class World:
    """The owner's mind with memories, a webhook with a delivery, a pending invitation, and
    the seven people; made per test, cheaply, since the calls that work change it."""

    def __init__(self, receiver) -> None:
        self.owner = user_make("owner@example.com")
        self.mind, _ = mind_make(self.owner, "Olive's Mind")
        soon = timezone.now() + timedelta(days=3)
        self.memory = remember(
            self.mind, "owner_fact", SECRET_TEXT, tags=["shared"], expires_at=soon
        )
        self.other = remember(self.mind, "owner_other", f"Also {MARKER}", tags=["shared"])
        self.webhook = webhook_create(mind=self.mind, body={"url": receiver.url}).webhook
        remember(self.mind, "owner_hooked", "A change the webhook takes")
        fan_out(self.webhook, now=timezone.now())
        self.delivery = WebhookDelivery.objects.get(webhook=self.webhook)
        chat_send(mind=self.mind, user=self.owner, body={"content": SECRET_TEXT})  # message 1
        self.cron = cron_create(mind=self.mind, body=OWN_CRON, actor=Actor.system())
        variable_set(mind=self.mind, body={"key": "owner_var", "value": SECRET_TEXT})
        self.invitation = share_make(self.mind, INVITED, acl="read")
        self.connection = connection_make(self.mind, self.owner)
        self.people = {"owner": self.owner}
        for role in ("admin", "write", "read"):
            self.people[role] = user_make(f"{role}@example.com")
            share_make(self.mind, self.people[role], acl=role)
        self.people["revoked"] = user_make("revoked@example.com")
        share_make(self.mind, self.people["revoked"], acl="admin").delete()
        # Invited at their own address after they last signed in: pending until they do.
        self.people["pending"] = user_make("pending@example.com")
        share_make(self.mind, "pending@example.com", acl="admin")
        self.people["stranger"] = user_make("stranger@example.com")
        mind_make(self.people["stranger"], "Stranger's Mind")

    def state(self) -> tuple:
        """Everything of the owner's a call could change: the mind, its memories, audit,
        webhooks, deliveries (owner_state), its shares and its proposals."""
        shares = sorted(
            Share.objects.filter(mind=self.mind).values_list("id", "email", "user_id", "acl")
        )
        proposals = SupersedeProposal.objects.filter(memory__mind=self.mind).count()
        return (owner_state(self.mind), shares, proposals)

    def client(self, role: str):
        return bearer_client(jwt_for(self.people[role]))

    def proposal(self) -> str:
        """A proposed supersede waiting for a person: the agent's, of a verified memory."""
        old = remember(self.mind, "owner_office", "The office is in Berlin")
        memory_verify(memory=old, actor=Actor.for_user(self.owner))
        done = memory_supersede(memory=old, by=self.other.pk, actor=Actor(kind="agent", name="mk"))
        assert done.proposal is not None
        return f"/memory/{old.pk}/proposals/{done.proposal.pk}"

    def summary(self) -> str:
        """The id of a compaction's summary, for its undo."""
        for i, (key, content) in enumerate(EDITOR):
            remember(
                self.mind,
                key,
                content,
                category="preference",
                tags=["editor"],
                now=OLD + timedelta(seconds=i),
            )
        with override_settings(SYNAPSE_EMBEDDINGS="off"):  # clustered by tags and words
            done = memory_compact(mind=self.mind, actor=Actor.for_user(self.owner), body={})
        return done.results[0].summary.pk


@pytest.fixture
def world(receiver, settings) -> World:
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    return World(receiver)


# --- REST ------------------------------------------------------------------------------------


def rest_call(world: World, name: str, case: Case, *, working: bool) -> tuple[str, dict | None]:
    """The path and body of `case` on the owner's mind. `working`: the objects it names exist
    and its body asks for something that can be done (an attack's body may not)."""
    path = case.path.format(
        mind=world.mind.pk,
        memory=world.memory.pk,
        webhook=world.webhook.pk,
        delivery=world.delivery.pk,
        cron=world.cron.pk,
    )
    body = json.loads(json.dumps(case.body).replace("{memory}", world.memory.pk))
    if name == "memory-supersede":
        body = {"by": world.other.pk if case.body and case.body["by"] else None}
    elif name == "memory-proposal" and working:
        path = world.proposal()
    elif name == "memory-compact-undo" and working:
        path = f"/memory/compact/{world.summary()}/undo"
    elif name == "mind-share-detail":
        path = path.replace("sh_none", world.invitation.pk)
    # A people's route with no mind in its path names it as lists do (the chat's).
    names_mind = case.kind == "people" and "{mind}" not in case.path
    if (case.kind in ("scoped", "object") or names_mind) and name not in ONE_MEMORY:
        path += f"{'&' if '?' in path else '?'}mind={world.mind.pk}"
    return path, body


def allowed_groups(need: Level, method: str) -> list[tuple[str, ...]]:
    """The people at or above `need`, grouped by test: a GET changes nothing, so they all
    read one mind; any other call gets a fresh mind for each."""
    roles = tuple(role for role, level in PERSONAS.items() if level is not None and level >= need)
    return [roles] if method == "GET" else [(role,) for role in roles]


def rest_params(*, allowed: bool):
    for name, cases in REST_CASES.items():
        for case in cases:
            if case.kind == "agents":
                continue  # test_no_person_reaches_the_agents_side
            need = NEEDS.get(f"{name} {case.method}")
            if need is ANY_PERSON:
                continue  # test_routes_of_ones_own
            if not allowed:
                yield pytest.param(name, case, id=f"{name} {case.method} {case.path}")
                continue
            for roles in allowed_groups(need, case.method):
                label = f"{'+'.join(roles)}: {name} {case.method} {case.path}"
                yield pytest.param(name, case, roles, id=label)


@pytest.mark.parametrize(("name", "case", "roles"), list(rest_params(allowed=True)))
def test_at_the_level_a_call_needs_it_works(world, name, case, roles):
    path, body = rest_call(world, name, case, working=True)
    for role in roles:
        response = call(world.client(role), case.method, path, body)
        assert 200 <= response.status_code < 300, (role, response.content)


@pytest.mark.parametrize(("name", "case"), list(rest_params(allowed=False)))
def test_below_the_level_403_and_unseen_404_and_nothing_changes(world, name, case):
    need = NEEDS[f"{name} {case.method}"]
    path, body = rest_call(world, name, case, working=True)
    # A call on one memory may name its mind too: the same answer either way.
    paths = [path, f"{path}?mind={world.mind.pk}"] if name in ONE_MEMORY else [path]
    before = world.state()
    for role, level in PERSONAS.items():
        if level is not None and level >= need:
            continue
        for asked in paths:
            response = call(world.client(role), case.method, asked, body)
            expected = 404 if level is None else 403
            assert response.status_code == expected, (role, asked, response.content)
            assert_nothing_of(response, world.mind, world.memory, asked=asked)
            assert world.state() == before, (role, asked)


def test_no_person_reaches_the_agents_side(world):
    """The agent's calls (the chat's poll, reply and status) answer every person 403, the
    owner too, and change nothing."""
    before = world.state()
    for name, cases in REST_CASES.items():
        for case in (c for c in cases if c.kind == "agents"):
            path, body = rest_call(world, name, case, working=True)
            for role in PERSONAS:
                response = call(world.client(role), case.method, path, body)
                assert response.status_code == 403, (role, name, response.content)
    assert world.state() == before


def test_routes_of_ones_own_show_only_what_one_reaches(world):
    """GET /minds lists the minds one owns, GET /minds/shared those shared with one by an
    active share, POST /minds makes one's own: nobody's call touches the owner's mind."""
    before = world.state()
    for role, level in PERSONAS.items():
        client = world.client(role)
        owned = client.get("/minds")
        assert owned.status_code == 200
        assert (world.mind.pk in owned.content.decode()) == (role == "owner"), role
        created = client.post("/minds", {"name": "Mine"}, format="json")
        assert created.status_code == 201, created.content
        if role == "pending":
            continue  # below: asking for the minds shared with one claims one's invitations
        shared = client.get("/minds/shared").json()
        acl = {m["id"]: m["acl"] for m in shared["minds"]}.get(world.mind.pk)
        assert acl == (role if level is not None and level < OWNER else None), role
    assert world.state() == before
    assert not Mind.objects.filter(owner=world.people["pending"]).exclude(name="Mine").exists()


def test_a_pending_invitation_grants_nothing_until_it_is_claimed(world):
    """Invited at their address, the person reaches nothing of the mind while the share is
    pending; GET /minds/shared claims it (as signing in does), and it then holds."""
    client = world.client("pending")
    read = f"/memory?mind={world.mind.pk}"
    assert client.get(read).status_code == 404
    assert client.get(f"/memory/{world.memory.pk}").status_code == 404
    assert client.get(f"/minds/{world.mind.pk}").status_code == 404
    shared = client.get("/minds/shared").json()["minds"]
    assert [(m["id"], m["acl"]) for m in shared] == [(world.mind.pk, "admin")]
    assert client.get(read).status_code == 200
    assert client.get(f"/minds/{world.mind.pk}/shares").status_code == 200
    assert client.delete(f"/minds/{world.mind.pk}").status_code == 403


def test_only_the_owner_deletes_the_mind(world):
    for role in ("admin", "write", "read"):
        assert world.client(role).delete(f"/minds/{world.mind.pk}").status_code == 403
    assert world.client("owner").delete(f"/minds/{world.mind.pk}").status_code == 200
    assert not Mind.objects.filter(pk=world.mind.pk).exists()
    for role in ("admin", "write", "read"):
        assert world.client(role).get(f"/memory?mind={world.mind.pk}").status_code == 404


# --- Dashboard ---------------------------------------------------------------------------------


def dashboard_url(world: World, name: str) -> str:
    event = MemoryEvent.objects.filter(memory_id=world.memory.pk).first()
    suffix = (
        DASHBOARD_MIND_ROUTES[name]
        .format(
            memory=world.memory.pk,
            event=event.pk,
            webhook=world.webhook.pk,
            delivery=world.delivery.pk,
            connection=world.connection.pk,
        )
        .replace("sh_none", world.invitation.pk)
    )
    return f"/dashboard/minds/{world.mind.pk}/{suffix}"


def dashboard_form(world: World, role: str) -> dict:
    """What a page's form might send; with a fresh token, so a form that acts once acts."""
    return {
        "name": "Renamed",
        "content": "changed",
        "memory": [world.memory.pk],
        "confirm": "1",
        "user_email": "newcomer@example.com",
        "acl": "write",
        "form_token": form_token_new(user=world.people[role]),
    }


def browser_of(world: World, role: str) -> Client:
    browser = Client()
    browser.force_login(world.people[role])
    return browser


def dashboard_params(*, allowed: bool):
    for name, needs in DASHBOARD_NEEDS.items():
        for method, need in zip(("GET", "POST"), needs, strict=True):
            if need is None:
                continue
            if not allowed:
                yield pytest.param(name, method, id=f"{name} {method}")
                continue
            for roles in allowed_groups(need, method):
                yield pytest.param(name, method, roles, id=f"{'+'.join(roles)}: {name} {method}")


@pytest.mark.parametrize(("name", "method", "roles"), list(dashboard_params(allowed=True)))
def test_dashboard_at_the_level_a_page_needs_it_works(world, name, method, roles):
    url = dashboard_url(world, name)
    for role in roles:
        browser = browser_of(world, role)
        if method == "GET":
            response = browser.get(url)
        else:
            response = browser.post(url, dashboard_form(world, role))
        assert response.status_code in (200, 302), (role, response.status_code)


@pytest.mark.parametrize(("name", "method"), list(dashboard_params(allowed=False)))
def test_dashboard_below_the_level_403_and_unseen_404(world, name, method):
    need = DASHBOARD_NEEDS[name][method == "POST"]
    url = dashboard_url(world, name)
    before = world.state()
    for role, level in PERSONAS.items():
        if level is not None and level >= need:
            continue
        browser = browser_of(world, role)
        if method == "GET":
            response = browser.get(url)
        else:
            response = browser.post(url, dashboard_form(world, role))
        assert response.status_code == (404 if level is None else 403), (role, name)
        assert MARKER not in response.content.decode(), role
        assert world.state() == before, role


def test_dashboard_offers_no_method_the_table_leaves_out(world):
    """A None in DASHBOARD_NEEDS is a method the page does not take: 405 for the owner."""
    browser = browser_of(world, "owner")
    offered = []
    for name, needs in DASHBOARD_NEEDS.items():
        url = dashboard_url(world, name)
        for method, need in zip(("GET", "POST"), needs, strict=True):
            if need is None and browser.generic(method, url).status_code != 405:
                offered.append(f"{name} {method}")
    assert not offered, f"Pages that take a method DASHBOARD_NEEDS leaves out: {offered}"
