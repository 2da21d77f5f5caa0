"""Contradictions: the judge's reasons, the candidates, the window and kept pairs."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from core.errors import Forbidden, Invalid, NotFound
from memories.actors import Actor
from memories.hygiene.contradictions import contradiction_pairs, judge
from memories.hygiene.dismissals import pair_keep_both
from memories.models import Memory
from tests.factories import embed, remember
from tests.fake_embedder import fake_embedder  # noqa: F401

PERSON = Actor(kind="user", name="owner@example.com")
AGENT = Actor(kind="agent", name="key:abc")
WEEK = timedelta(days=7)
DOG = "The family dog, a brown collie from Bavaria who loves long walks in the park, "
PIXEL = DOG + "is called Pixel."
REX = DOG + "is called Rex."


def said(content: str, key: str = "fact_x", tags: list[str] | None = None) -> Memory:
    return Memory(key=key, category="fact", content=content, tags=tags or [])


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        (
            "The office is in Berlin.",
            "The office moved to Munich.",
            "Different place: “Berlin” / “Munich”",
        ),
        ("Prefers tabs.", "Prefers spaces.", "Opposites: “tabs” / “spaces”"),
        ("Birthday is 14 March.", "Birthday is 4 March.", "Different date: “14 March” / “4 March”"),
        ("Standup at 9:30.", "Standup at 10:15.", "Different time: “9:30” / “10:15”"),
        (
            "Lena is allergic to peanuts.",
            "Lena is not allergic to peanuts.",
            "One says not: “Lena is not allergic to peanuts.”",
        ),
        (
            "The rent is 1,850 EUR a month.",
            "The rent is now 1,950 EUR a month.",
            "Different number: “1,850” / “1,950”",
        ),
        (
            "Deploys on Tuesdays.",
            "Deploys on Thursdays.",
            "Different day: “tuesdays” / “thursdays”",
        ),
    ],
)
def test_the_reason_names_what_differs(a, b, reason):
    assert judge(said(a), said(b)) == reason


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Lives in Berlin.", "Moved to Berlin in 2019."),
        ("Knows Python well.", "Teaches Python on Fridays."),
        ("Julia's office is in Maxvorstadt.", "The office is in Berlin."),
        ("Takes his tea with honey.", "Takes his coffee with sugar."),
        ("Drives a VW Golf.", "Julia drives the family's Renault Zoe."),
    ],
)
def test_agreeing_look_alikes_are_not_contradictions(a, b):
    assert judge(said(a), said(b)) is None


def test_memories_about_the_values_themselves_do_not_contradict():
    brandt = said("The Brandt team has 4 developers.", key="fact_brandt_team")
    other = said("The Boulderwelt team has 5 developers.", key="fact_boulderwelt_team")
    assert judge(brandt, other) is None


@pytest.fixture
def off(settings):
    settings.SYNAPSE_EMBEDDINGS = "off"


def test_pairs_of_the_mind_most_recent_first(mind, stranger_mind, off):
    now = timezone.now()
    old = remember(mind, "fact_office", "The office is in Berlin.", now=now - timedelta(days=30))
    new = remember(mind, "fact_office_moved", "The office moved to Munich.", now=now)
    tabs = remember(
        mind,
        "preference_indent",
        "Prefers tabs.",
        category="preference",
        now=now - timedelta(days=1),
    )
    spaces = remember(
        mind,
        "preference_indent_style",
        "Prefers spaces.",
        category="preference",
        now=now - timedelta(days=2),
    )
    remember(stranger_mind.mind, "fact_office", "The office is in Hamburg.")
    found = contradiction_pairs(mind=mind, within=WEEK, now=now)
    assert [(c.a, c.b) for c in found] == [(new, old), (tabs, spaces)]
    assert found[0].reason == "Different place: “Munich” / “Berlin”"
    assert 0 < found[0].similarity <= 1


def test_the_window_needs_one_of_the_pair_written_in_it(mind, off):
    now = timezone.now()
    remember(mind, "fact_office", "The office is in Berlin.", now=now - timedelta(days=30))
    remember(mind, "fact_office_moved", "The office moved to Munich.", now=now - timedelta(days=10))
    assert contradiction_pairs(mind=mind, within=WEEK, now=now) == []
    assert len(contradiction_pairs(mind=mind, within=timedelta(days=11), now=now)) == 1


def test_expired_and_superseded_memories_are_left_out(mind, off):
    now = timezone.now()
    a = remember(mind, "fact_office", "The office is in Berlin.", now=now)
    b = remember(mind, "fact_office_moved", "The office moved to Munich.", now=now)
    Memory.objects.filter(pk=b.pk).update(expires_at=now - timedelta(seconds=1))
    assert contradiction_pairs(mind=mind, within=WEEK, now=now) == []
    Memory.objects.filter(pk=b.pk).update(expires_at=None)
    Memory.objects.filter(pk=a.pk).update(superseded_by=b)
    assert contradiction_pairs(mind=mind, within=WEEK, now=now) == []


def test_candidates_by_meaning_find_pairs_sharing_no_key_part(mind, fake_embedder):  # noqa: F811
    a = remember(
        mind,
        "x1",
        PIXEL,
        category="note",
    )
    b = remember(
        mind,
        "y2",
        REX,
        category="fact",
    )
    embed(a, b)
    (found,) = contradiction_pairs(mind=mind, within=WEEK)
    assert (found.a, found.b) == (b, a)
    assert found.reason == "Different name: “Rex” / “Pixel”"
    assert found.similarity >= 0.85


def test_a_kept_pair_is_no_longer_listed(mind, off):
    a = remember(mind, "fact_office", "The office is in Berlin.")
    b = remember(mind, "fact_office_moved", "The office moved to Munich.")
    kept = pair_keep_both(mind=mind, actor=PERSON, kind="contradiction", a=b.pk, b=a.pk)
    assert (kept.first_id, kept.second_id) == tuple(sorted((a.pk, b.pk)))
    assert kept.by == PERSON.name
    assert pair_keep_both(mind=mind, actor=PERSON, kind="contradiction", a=a.pk, b=b.pk) == kept
    assert contradiction_pairs(mind=mind, within=WEEK) == []


def test_keeping_a_pair_is_for_a_person_and_this_minds_memories(mind, stranger_mind, off):
    a = remember(mind, "fact_a", "The office is in Berlin.")
    b = remember(mind, "fact_b", "The office moved to Munich.")
    theirs = remember(stranger_mind.mind, "fact_c", "The office is in Hamburg.")
    with pytest.raises(Forbidden):
        pair_keep_both(mind=mind, actor=AGENT, kind="contradiction", a=a.pk, b=b.pk)
    with pytest.raises(Invalid):
        pair_keep_both(mind=mind, actor=PERSON, kind="merge", a=a.pk, b=b.pk)
    with pytest.raises(Invalid):
        pair_keep_both(mind=mind, actor=PERSON, kind="duplicate", a=a.pk, b=a.pk)
    with pytest.raises(NotFound):
        pair_keep_both(mind=mind, actor=PERSON, kind="duplicate", a=a.pk, b=theirs.pk)


class _Chat(BaseHTTPRequestHandler):
    answer = "no"
    asked: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).asked.append({"body": body, "auth": self.headers.get("Authorization")})
        reply = {"choices": [{"message": {"role": "assistant", "content": type(self).answer}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Chat.asked = []
    settings.SYNAPSE_HYGIENE_CHAT_URL = f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
    settings.SYNAPSE_HYGIENE_CHAT_MODEL = "judge"
    settings.SYNAPSE_HYGIENE_CHAT_KEY = "secret"
    yield _Chat
    server.shutdown()
    server.server_close()


def test_a_chat_api_confirms_or_drops_each_candidate(mind, off, chat):
    remember(mind, "fact_office", "The office is in Berlin.")
    remember(mind, "fact_office_moved", "The office moved to Munich.")
    chat.answer = "No."
    assert contradiction_pairs(mind=mind, within=WEEK) == []
    (asked,) = chat.asked
    assert asked["body"]["model"] == "judge" and asked["auth"] == "Bearer secret"
    assert "Berlin" in asked["body"]["messages"][-1]["content"]
    chat.answer = "Yes"
    assert len(contradiction_pairs(mind=mind, within=WEEK)) == 1


def test_a_failing_chat_api_leaves_the_judges_verdict(mind, off, settings):
    settings.SYNAPSE_HYGIENE_CHAT_URL = "http://127.0.0.1:9/v1/chat/completions"  # closed port
    remember(mind, "fact_office", "The office is in Berlin.")
    remember(mind, "fact_office_moved", "The office moved to Munich.")
    assert len(contradiction_pairs(mind=mind, within=WEEK)) == 1
