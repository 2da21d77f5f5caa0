"""A mind as of a moment, rebuilt from the audit trail: a simulated month of writes, each
day's answers taken live at the day's end, then asked again with as_of after the month."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.utils import timezone

from core.errors import Conflict, NotFound
from memories import services
from memories.as_of import memory_as_of, mind_as_of, recall_as_of, spans_from_trail
from memories.fields import iso
from memories.models import Memory, MemorySpan
from memories.recall import recall_render_text
from minds.models import Mind
from tests.api.memory_helpers import json_of, text_of
from tests.factories import AGENT, PERSON, upsert

DAYS = 30
KEYS = [f"k{i:02d}" for i in range(14)]


def _stored(mind: Mind) -> list[Memory]:
    return list(Memory.objects.filter(mind=mind).order_by("id"))


def _one_day(mind: Mind, rng: random.Random, day: datetime, seen: set[str]) -> None:
    """A day's writes, a few minutes apart: stores, edits, verifies, supersedes, deletes and
    undeletes, expiries."""
    moment = day + timedelta(hours=8)
    for _ in range(rng.randint(3, 7)):
        moment += timedelta(minutes=rng.randint(1, 50), seconds=rng.randint(0, 59))
        stored = _stored(mind)
        kind = rng.choice(
            ["store", "store", "edit", "verify", "unverify", "supersede", "delete", "expire"]
        )
        if kind == "store" or not stored:
            actor = rng.choice([AGENT, PERSON])
            result = upsert(
                mind, rng.choice(KEYS), f"day {day:%d} says {rng.random():.6f}",
                category=rng.choice(["fact", "preference"]),
                priority=rng.choice(["low", "normal", "high", "critical"]),
                tags=rng.sample(["home", "work", "travel", "food"], rng.randint(0, 2)),
                actor=actor, now=moment,
            )  # fmt: skip
            seen.add(result.memory.pk)
            continue
        memory = rng.choice(stored)
        if kind == "edit":
            body = rng.choice(
                [
                    {"content": f"edited {moment:%d %H:%M:%S}"},
                    {"tags": ["edited"], "priority": "high"},
                    {"confidence": round(rng.random(), 3)},
                ]
            )
            services.memory_change(
                memory=memory, actor=rng.choice([AGENT, PERSON]), body=body, now=moment
            )
        elif kind == "verify":
            services.memory_verify(memory=memory, actor=PERSON, now=moment)
        elif kind == "unverify":
            services.memory_unverify(memory=memory, actor=PERSON, now=moment)
        elif kind == "supersede":
            others = [m for m in stored if m.pk != memory.pk and m.superseded_by_id is None]
            by = rng.choice([None, *[m.pk for m in others]])
            if by is not None and Memory.objects.get(pk=by).superseded_by_id == memory.pk:
                by = None
            services.memory_supersede(memory=memory, by=by, actor=PERSON, now=moment)
        elif kind == "delete":
            services.memory_delete(memory=memory, actor=PERSON, now=moment)
            if rng.random() < 0.5:  # put back a few minutes later
                moment += timedelta(minutes=2)
                services.memory_undo(
                    mind=mind, actor=PERSON, memory_id=memory.pk, action="delete", now=moment
                )
        else:
            until = moment + timedelta(days=rng.randint(0, 3), hours=rng.randint(1, 20))
            services.memory_change(
                memory=memory, actor=PERSON, body={"expires_at": iso(until)}, now=moment
            )


def _answers(client, ids: set[str], *, as_of: str | None = None) -> dict:
    """What the API answers of the mind: its lists, each memory, its recall (JSON and text)."""
    extra = f"&as_of={as_of}" if as_of else ""
    one = f"?as_of={as_of}" if as_of else ""
    answers = {
        "list": client.get(f"/memory?limit=1000{extra}").json(),
        "all": client.get(
            f"/memory?limit=1000&include_expired=true&include_superseded=true{extra}"
        ).json(),
        "recall": json_of(client.get(f"/memory/recall?format=json{extra}")),
        "recall_text": text_of(client.get(f"/memory/recall?include_expired=true{extra}")),
        "recall_budget": text_of(client.get(f"/memory/recall?budget=60{extra}")),
        "recall_tag": json_of(client.get(f"/memory/recall?format=json&tag=work{extra}")),
        "recall_category": text_of(
            client.get(f"/memory/recall?category=fact&include_superseded=true&budget=40{extra}")
        ),
        "search": client.get(f"/memory/search?q=day says edited&mode=keyword{extra}").json(),
    }
    for name in ("list", "all", "search"):
        answers[name].pop("as_of", None)
    answers["search"].pop("warnings", None)
    for pk in sorted(ids):
        response = client.get(f"/memory/{pk}{one}")
        answers[pk] = response.json() if response.status_code == 200 else response.status_code
    return answers


def _without_scores(search: dict) -> dict:
    """Search answers compared by what they found, in order; scores are the engine's."""
    return {**search, "results": [(r["id"], r["snippet"]) for r in search["results"]]}


@pytest.mark.parametrize("seed", [3, 11])
def test_every_day_of_a_month_is_answered_as_it_was(agent, mind, seed, settings):
    settings.REST_FRAMEWORK = {  # a month of answers, asked twice, within one minute
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": None},
    }
    rng = random.Random(seed)
    start = (timezone.now() - timedelta(days=DAYS + 5)).replace(microsecond=0)
    Mind.objects.filter(pk=mind.pk).update(created_at=start)
    mind.refresh_from_db()
    seen: set[str] = set()
    snapshots: list[tuple[datetime, set[str], dict]] = []
    for number in range(DAYS):
        day = start + timedelta(days=number)
        _one_day(mind, rng, day, seen)
        end = day + timedelta(days=1) - timedelta(seconds=1)
        with mock.patch("django.utils.timezone.now", return_value=end):
            snapshots.append((end, set(seen), _answers(agent, seen)))

    for end, ids, then in snapshots:
        now = _answers(agent, ids, as_of=iso(end))
        then_search, now_search = then.pop("search"), now.pop("search")
        assert now == then, f"as_of={iso(end)}"
        if now_search["results"] or then_search["results"]:
            # On SQLite the same engine ranks both; elsewhere the same matches are found.
            assert {r["id"] for r in now_search["results"]} == {
                r["id"] for r in then_search["results"]
            }


@pytest.fixture
def old_mind(mind) -> Mind:
    """The owner's mind, made a day ago: its past can be asked about."""
    Mind.objects.filter(pk=mind.pk).update(created_at=timezone.now() - timedelta(days=1))
    mind.refresh_from_db()
    return mind


def test_a_moment_before_the_mind_holds_nothing(mind):
    upsert(mind, "early", "first words")
    before = mind.created_at - timedelta(seconds=1)

    assert mind_as_of(mind=mind, at=before).memories == []


def test_a_memory_purged_since_is_not_recovered(old_mind):
    mind = old_mind
    earlier = timezone.now() - timedelta(hours=2)
    memory = upsert(mind, "secret", "the launch code is 1234", now=earlier).memory
    services.memory_change(memory=memory, actor=PERSON, body={"content": "no code"})
    services.memory_purge(memory=memory, actor=PERSON)

    held = mind_as_of(mind=mind, at=earlier + timedelta(minutes=1))

    assert held.memories == [] and held.purged == 1
    with pytest.raises(NotFound):
        memory_as_of(mind=mind, memory_id=memory.pk, at=earlier + timedelta(minutes=1))


def test_a_value_purged_since_shows_as_purged(old_mind):
    mind = old_mind
    earlier = timezone.now() - timedelta(hours=2)
    memory = upsert(mind, "token", "my token is abc", now=earlier).memory
    services.memory_change(memory=memory, actor=PERSON, body={"content": "[redacted: token]"})
    services.memory_values_purge(memory=memory, fields=["content"])

    then = memory_as_of(mind=mind, memory_id=memory.pk, at=earlier + timedelta(minutes=1))

    assert then.content == "(purged)"
    assert then.key == "token"


def test_folded_history_is_refused_naming_the_moment_answered_exactly(old_mind):
    mind = old_mind
    earlier = timezone.now() - timedelta(hours=3)
    memory = upsert(mind, "note", "a" * 400, now=earlier).memory
    for n in range(1, 4):
        services.memory_change(
            memory=memory, actor=AGENT, body={"content": f"{n}" * 400},
            now=earlier + timedelta(minutes=n),
        )  # fmt: skip
    with mock.patch("memories.audit.quotas", return_value={"history": 1000}):
        services.memory_change(
            memory=memory, actor=AGENT, body={"content": "last"}, now=earlier + timedelta(minutes=9)
        )

    with pytest.raises(Conflict) as refused:
        mind_as_of(mind=mind, at=earlier + timedelta(seconds=30))
    assert "as_of=" in refused.value.detail
    exact = datetime.fromisoformat(refused.value.detail.split("as_of=")[1].split(" ")[0])
    assert memory_as_of(mind=mind, memory_id=memory.pk, at=exact).pk == memory.pk
    assert memory_as_of(mind=mind, memory_id=memory.pk, at=exact.astimezone(UTC)).content

    # A recall is refused the same way, before anything is read.
    with pytest.raises(Conflict) as recall_refused:
        recall_as_of(mind=mind, at=earlier + timedelta(seconds=30))
    assert recall_refused.value.detail == refused.value.detail
    assert "note" in recall_render_text(selection=recall_as_of(mind=mind, at=exact))


# Every column of a span but its own id, as the database holds it.
SPAN_COLUMNS = tuple(
    f.attname for f in MemorySpan._meta.concrete_fields if not f.primary_key and f.name != "mind"
)


def _spans(mind: Mind) -> list[tuple]:
    return sorted(MemorySpan.objects.filter(mind=mind).values_list(*SPAN_COLUMNS))


def _as_rows(spans: list[dict]) -> list[tuple]:
    return sorted(tuple(span[name] for name in SPAN_COLUMNS) for span in spans)


@pytest.mark.parametrize("seed", [5, 8])
def test_the_writes_keep_the_spans_the_trail_tells(mind, seed):
    """The spans each write leaves are those the audit trail tells (the migration's)."""
    rng = random.Random(seed)
    start = (timezone.now() - timedelta(days=12)).replace(microsecond=0)
    Mind.objects.filter(pk=mind.pk).update(created_at=start)
    mind.refresh_from_db()
    seen: set[str] = set()
    for number in range(10):
        _one_day(mind, rng, start + timedelta(days=number), seen)

    written = _spans(mind)
    assert len(written) > len(seen)  # several spans of most memories
    assert written == _as_rows(spans_from_trail(mind))


def test_a_purge_takes_the_memory_s_spans_with_it(old_mind):
    mind = old_mind
    earlier = timezone.now() - timedelta(hours=2)
    memory = upsert(mind, "secret", "the launch code is 1234", now=earlier).memory
    services.memory_change(memory=memory, actor=PERSON, body={"priority": "high"})
    assert MemorySpan.objects.filter(memory_id=memory.pk).count() == 2

    services.memory_purge(memory=memory, actor=PERSON)

    assert not MemorySpan.objects.filter(memory_id=memory.pk).exists()
    then = recall_as_of(mind=mind, at=earlier + timedelta(minutes=1))
    assert "secret" not in recall_render_text(selection=then)


def test_a_tag_purged_from_the_history_is_purged_from_the_spans(old_mind):
    mind = old_mind
    earlier = timezone.now() - timedelta(hours=2)
    memory = upsert(mind, "login", "see the vault", tags=["pw-hunter2"], now=earlier).memory
    services.memory_change(memory=memory, actor=PERSON, body={"tags": ["redacted"]})
    moment = earlier + timedelta(minutes=1)
    assert sum(recall_as_of(mind=mind, at=moment, tag="pw-hunter2").counts().values()) == 1

    services.memory_values_purge(memory=memory, fields=["tags"])

    assert sum(recall_as_of(mind=mind, at=moment, tag="pw-hunter2").counts().values()) == 0
    assert "pw-hunter2" not in str(_spans(mind))
    assert _spans(mind) == _as_rows(spans_from_trail(mind))


def test_a_recall_as_of_reads_only_its_own_mind(old_mind, stranger_mind):
    earlier = timezone.now() - timedelta(hours=2)
    upsert(old_mind, "mine", "my words", now=earlier)
    upsert(stranger_mind.mind, "theirs", "their words", now=earlier)

    text = recall_render_text(selection=recall_as_of(mind=old_mind, at=timezone.now()))

    assert "mine" in text and "theirs" not in text
