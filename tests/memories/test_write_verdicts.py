"""One verdict for every write body, whatever face it comes through.

The same bodies go through POST /memory, PATCH /memory/{id}, POST /memory/sync, POST
/mind/import, MCP `remember` and the dashboard's edit form. Every path must agree with the
core's validator (rules.memory_body_clean): an accepted body stores the same values for the
fields it gives; a refused one is refused naming the same fields, and writes nothing.

A path only takes the bodies it can carry: a store needs category and content (PATCH and
the edit form take a part); MCP arguments are an object; the form has no `source`, sends
strings and drops fields it does not have. Import reads export records, whose `mind_id`
names the mind they were exported from: that field alone is not checked there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from core.errors import NON_FIELD, Invalid
from memories.actors import Actor
from memories.models import Memory
from memories.rules import memory_body_clean
from memories.services import memory_upsert
from tests.conftest import bearer_client

pytestmark = pytest.mark.django_db

BASE = {"category": "fact", "key": "fact_verdict", "content": "The verdict body"}
OWN_MIND = "<the request's mind>"  # replaced by the mind's id when sent

# Bodies every path takes: category and content present, or deliberately broken.
BODIES: list[Any] = [
    BASE,
    {**BASE, "tags": ["Docker", " docker ", "ops"]},
    {**BASE, "tags": None},
    {**BASE, "tags": [f"T{n % 20}" for n in range(25)]},
    {**BASE, "priority": " HIGH "},
    {**BASE, "priority": "low", "confidence": 1},
    {**BASE, "confidence": 0.25},
    {**BASE, "expires_at": "2031-01-01T10:00:00+02:00"},
    {**BASE, "expires_at": 1924992000},
    {**BASE, "expires_at": "1924992000"},
    {**BASE, "expires_at": "2031-06-01"},
    {**BASE, "expires_at": None},
    {**BASE, "source": "Tool"},
    {**BASE, "source": "user"},
    {**BASE, "id": "mem_sent_back", "verified": True, "created_at": "x", "warnings": []},
    {**BASE, "expired": False, "action": "created"},
    {**BASE, "mind_id": OWN_MIND},
    {**BASE, "mind_id": "m_another"},
    {**BASE, "contnet": "typo"},
    {**BASE, "category": " NOTE "},
    {**BASE, "category": "opinion"},
    {**BASE, "category": None},
    {**BASE, "content": "  kept as sent\n"},
    {**BASE, "content": "Schäfer · 日本語 · 🙂 · e\u0301 · \u202eltr"},
    {**BASE, "content": "é" * 50_000},
    {**BASE, "content": "x" * 50_001},
    {**BASE, "content": ""},
    {**BASE, "content": "  \n\t "},
    {**BASE, "content": 42},
    {**BASE, "content": "nul \x00 inside"},
    {**BASE, "content": "lone \ud800 surrogate"},
    {**BASE, "key": "Ключ_ü-1.2"},
    {**BASE, "key": ""},
    {**BASE, "key": "two words"},
    {**BASE, "key": 7},
    {**BASE, "key": "zero\u200bwidth"},
    {**BASE, "key": "k" * 201},
    {**BASE, "tags": "docker"},
    {**BASE, "tags": ["ok", ""]},
    {**BASE, "tags": ["ok", 3]},
    {**BASE, "tags": [f"t{n}" for n in range(21)]},
    {**BASE, "tags": ["x" * 65]},
    {**BASE, "tags": ["line\nbreak"]},
    {**BASE, "priority": "urgent"},
    {**BASE, "priority": 3},
    {**BASE, "priority": None},
    {**BASE, "source": "oracle"},
    {**BASE, "source": None},
    {**BASE, "confidence": 1.5},
    {**BASE, "confidence": -0.1},
    {**BASE, "confidence": True},
    {**BASE, "confidence": "0.5"},
    {**BASE, "expires_at": "next tuesday"},
    {**BASE, "expires_at": 1e300},
    {"category": "x", "key": "k", "content": "", "tags": "y", "bogus": 1},
]
# Bodies of a store only: what a new memory needs, and what is not an object at all.
STORE_ONLY: list[Any] = [
    {"category": "fact", "content": "no key: derived from the content"},
    {**BASE, "key": None},
    {"category": "fact"},
    {"content": "no category"},
    {},
    ["not", "an", "object"],
    "just text",
    None,
]
# Bodies of an update only: every field is optional, and a key may not be null.
UPDATE_ONLY: list[Any] = [
    {"content": "only the content"},
    {"tags": ["just", "tags"]},
    {"key": None},
    {"category": None, "content": None},
]

AGENT_PATHS = ("store", "sync", "import", "mcp")


JSON = "application/json"


def _json(body: Any) -> str:
    return json.dumps(body)  # ASCII escapes: a lone surrogate travels as the client sent it


def _sent(body: Any, mind_id: str) -> Any:
    if isinstance(body, dict) and body.get("mind_id") == OWN_MIND:
        return {**body, "mind_id": mind_id}
    return body


def _stored(memory: Memory, values: dict[str, Any]) -> dict[str, Any]:
    """The stored values of what the validator cleaned (the fields the body gave)."""
    return {name: getattr(memory, name) for name in values}


def expected(body: Any, *, mind_id: str, partial: bool, actor: Actor, restore: bool = False):
    """The core's verdict: ("stored", cleaned values) or ("refused", field names)."""
    try:
        write = memory_body_clean(
            _sent(body, mind_id), actor=actor, mind_id=mind_id, partial=partial, restore=restore
        )
    except Invalid as exc:
        return "refused", set(exc.fields)
    values = dict(write.values)
    if write.source is not None:
        values["source"] = write.source
    if partial or "key" not in (body or {}):
        values.pop("key", None)  # derived, or kept: compared apart
    return "stored", values


class Paths:
    """Each face's way of writing one body, each returning the verdict it reached."""

    def __init__(self, owner, owner_mind) -> None:
        self.owner = owner
        self.mind = owner_mind.mind
        self.key = owner_mind.key
        self.agent = bearer_client(owner_mind.key)
        self.before: set[tuple[Any, ...]] = set()

    def _memory(self, response_id: str | None = None) -> Memory | None:
        if response_id is not None:
            return Memory.objects.get(pk=response_id)
        return Memory.objects.filter(mind=self.mind).order_by("-updated_at").first()

    def _target(self) -> Memory:
        """A memory for an update to change (what is stored before it is the baseline)."""
        target = memory_upsert(
            mind=self.mind,
            actor=Actor(kind="agent", name="mk_test"),
            category="skill",
            key="skill_target",
            content="before",
            tags=["before"],
            priority="low",
            confidence=0.5,
        ).memory
        self.before = _rows()
        return target

    def store(self, body: Any) -> tuple[str, Any]:
        response = self.agent.post("/memory", _json(body), content_type="application/json")
        if response.status_code == 400:
            return "refused", set(response.json()["fields"])
        assert response.status_code in (200, 201), response.content
        return "stored", self._memory(response.json()["id"])

    def _bulk(self, path: str, body: Any) -> tuple[str, Any]:
        response = self.agent.post(path, _json({"memories": [body]}), content_type=JSON)
        assert response.status_code == 200, response.content
        answer = response.json()
        if answer["errors"]:
            return "refused", set(answer["errors"][0]["fields"])
        return "stored", self._memory(answer["results"][0]["id"])

    def sync(self, body: Any) -> tuple[str, Any]:
        return self._bulk("/memory/sync", body)

    def import_(self, body: Any) -> tuple[str, Any]:
        return self._bulk("/mind/import", body)

    def mcp(self, body: Any) -> tuple[str, Any]:
        rpc = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": body},
        }
        client = Client(HTTP_AUTHORIZATION=f"Bearer {self.key}")
        result = client.post("/mcp", _json(rpc), content_type=JSON).json()
        result = result["result"]
        if result["isError"]:
            text = result["content"][0]["text"]
            return "refused", text
        return "stored", self._memory(result["structuredContent"]["id"])

    def patch(self, body: Any) -> tuple[str, Any]:
        target = self._target()
        response = self.agent.patch(f"/memory/{target.pk}", _json(body), content_type=JSON)
        if response.status_code == 400:
            return "refused", set(response.json()["fields"])
        assert response.status_code == 200, response.content
        return "stored", self._memory(target.pk)

    def form(self, body: dict[str, Any]) -> tuple[str, Any]:
        target = self._target()
        web = Client()
        web.force_login(self.owner)
        url = f"/dashboard/minds/{self.mind.pk}/memories/{target.pk}/edit/"
        initial = web.get(url).context["form"].initial
        data = {**initial, **{name: _as_input(name, value) for name, value in body.items()}}
        data["confidence"] = str(data["confidence"])
        response = web.post(url, data)
        if response.status_code == 200:
            errors = response.context["form"].errors
            return "refused", {NON_FIELD if name == "__all__" else name for name in errors}
        assert response.status_code == 302, response.content
        return "stored", self._memory(target.pk)


FORM_FIELDS = {"category", "key", "content", "tags", "priority", "confidence", "expires_at"}


def _as_input(name: str, value: Any) -> str:
    """What a person types into the edit form for `value`."""
    if value is None:
        return ""
    if name == "tags":
        return ", ".join(value)
    return str(value)


def form_can_send(body: Any) -> bool:
    """Whether the edit form can carry `body` as it is: its fields, as text it can hold."""
    if not isinstance(body, dict) or not set(body) <= FORM_FIELDS:
        return False
    for name, value in body.items():
        if name == "tags":
            if value is not None and not (
                isinstance(value, list)
                and all(isinstance(t, str) and "," not in t and t.strip() for t in value)
            ):
                return False
        elif name == "confidence":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
        elif name == "expires_at":
            if value is not None and not isinstance(value, str | int):
                return False
        elif not isinstance(value, str) or "\ud800" in value:
            return False
    return True


@pytest.fixture
def paths(owner, owner_mind) -> Paths:
    return Paths(owner, owner_mind)


AGENT = Actor(kind="agent", name="mk_test")
PERSON = Actor(kind="user", name="owner@example.com")


def _rows() -> set[tuple[Any, ...]]:
    return set(Memory.objects.values_list("pk", "updated_at"))


def _check(paths: Paths, name: str, run: Callable[[Any], tuple[str, Any]], body: Any, want):
    paths.before = _rows()
    verdict, detail = run(_sent(body, paths.mind.pk))
    assert verdict == want[0], f"{name}: {verdict} {detail}, the core says {want}"
    if verdict == "refused":
        if isinstance(detail, str):  # MCP: one text naming each field with its message
            for field in want[1]:
                assert f"{field}: " in detail, f"{name}: {detail!r} does not name {field}"
        else:
            assert detail == want[1], f"{name}: refused naming {detail}, the core {want[1]}"
        assert _rows() == paths.before, f"{name}: a refused body wrote something"
        return
    assert _stored(detail, want[1]) == want[1], name


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_every_face_reaches_the_core_verdict(paths, body):
    mind_id = paths.mind.pk
    store_verdict = expected(body, mind_id=mind_id, partial=False, actor=AGENT)
    update_verdict = expected(body, mind_id=mind_id, partial=True, actor=AGENT)
    for name in AGENT_PATHS:
        want = store_verdict
        if name == "import" and isinstance(body, dict) and "mind_id" in body:
            want = expected(body, mind_id=mind_id, partial=False, actor=AGENT, restore=True)
        run = paths.import_ if name == "import" else getattr(paths, name)
        _check(paths, name, run, body, want)
        Memory.objects.filter(mind=paths.mind).delete()
    _check(paths, "patch", paths.patch, body, update_verdict)
    Memory.objects.filter(mind=paths.mind).delete()
    if form_can_send(body):
        person_verdict = expected(body, mind_id=mind_id, partial=True, actor=PERSON)
        _check(paths, "form", paths.form, body, person_verdict)


def test_the_shared_bodies_cover_both_verdicts_and_every_field():
    verdicts = [expected(b, mind_id="m_x", partial=False, actor=AGENT) for b in BODIES]
    refused = set().union(*(fields for kind, fields in verdicts if kind == "refused"))
    assert len(BODIES) + len(STORE_ONLY) + len(UPDATE_ONLY) >= 40
    assert sum(kind == "stored" for kind, _ in verdicts) >= 15
    assert {"category", "key", "content", "tags", "priority", "source", "confidence"} <= refused
    assert {"expires_at", "mind_id", "contnet", "bogus"} <= refused
    assert sum(form_can_send(b) for b in BODIES) >= 25


@pytest.mark.parametrize("body", STORE_ONLY, ids=range(len(STORE_ONLY)))
def test_store_paths_reach_the_core_verdict(paths, body):
    want = expected(body, mind_id=paths.mind.pk, partial=False, actor=AGENT)
    for name in ("store", "sync", "import", "mcp"):
        if name == "mcp" and not isinstance(body, dict):
            continue  # MCP arguments are an object by the protocol
        run = paths.import_ if name == "import" else getattr(paths, name)
        _check(paths, name, run, body, want)
        if want[0] == "stored":  # a derived key: the same on every path
            assert Memory.objects.get(mind=paths.mind).key.startswith(body["category"] + "_")
        Memory.objects.filter(mind=paths.mind).delete()


@pytest.mark.parametrize("body", UPDATE_ONLY, ids=range(len(UPDATE_ONLY)))
def test_update_paths_reach_the_core_verdict(paths, body):
    _check(
        paths,
        "patch",
        paths.patch,
        body,
        expected(body, mind_id=paths.mind.pk, partial=True, actor=AGENT),
    )
    if form_can_send(body):
        Memory.objects.filter(mind=paths.mind).delete()
        want = expected(body, mind_id=paths.mind.pk, partial=True, actor=PERSON)
        _check(paths, "form", paths.form, body, want)


def test_a_person_gets_the_same_verdict_through_the_api(paths, owner):
    """The edit form acts for a person: so does a JWT on PATCH, with the same answer."""
    from tests.conftest import jwt_for

    human = bearer_client(jwt_for(owner))
    for body in BODIES:
        if not form_can_send(body):
            continue
        target = paths._target()
        api = human.patch(f"/memory/{target.pk}", _json(body), content_type=JSON)
        Memory.objects.filter(mind=paths.mind).delete()
        verdict, _ = paths.form(body)
        assert (api.status_code == 200) == (verdict == "stored"), body
        Memory.objects.filter(mind=paths.mind).delete()
