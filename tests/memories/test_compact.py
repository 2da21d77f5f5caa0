"""Compaction: which memories are candidates, how they cluster, the summary's text, the
request's rules, and (apply, undo) that originals are superseded and come back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import Conflict, Invalid, NotFound, QuotaExceeded
from memories import selectors, services
from memories.hygiene import compact
from memories.hygiene.compact import (
    SUMMARY_TAG,
    Cluster,
    compact_plan,
    compact_request_clean,
    compact_undo,
    distinct_statements,
    memory_compact,
    summary_text,
)
from memories.models import Memory, MemoryEvent, Priority
from tests.factories import AGENT, PERSON, embed, remember
from tests.fake_embedder import fake_embedder  # noqa: F401

NOW = timezone.now()
OLD = NOW - timedelta(days=40)

EDITOR = [
    ("preference_editor", "Uses Neovim with LazyVim."),
    ("preference_editor_config", "Neovim config lives in ~/.config/nvim. Uses LazyVim."),
    ("preference_editor_keys", "Uses vim keybindings in every editor."),
]
DEPLOY = [
    ("project_deploy", "Deploys the API with Docker Compose."),
    ("project_deploy_staging", "Staging runs docker compose up on the staging host."),
    ("project_deploy_ci", "CI builds the Docker image on every push."),
]


@pytest.fixture
def off(settings):
    settings.SYNAPSE_EMBEDDINGS = "off"


def store(mind, pairs, *, category, tags, at=OLD, **fields):
    """Stored a second apart, oldest first: the order clusters list their members in."""
    return [
        remember(
            mind,
            key,
            content,
            category=category,
            tags=tags,
            now=at + timedelta(seconds=i),
            **fields,
        )
        for i, (key, content) in enumerate(pairs)
    ]


def plan_ids(mind, **options):
    options.setdefault("now", NOW)
    return [[m.pk for m in c.members] for c in compact_plan(mind=mind, **options)]


def test_memories_sharing_tags_cluster_by_category_with_embeddings_off(mind, off):
    editor = store(mind, EDITOR, category="preference", tags=["editor", "neovim"])
    deploy = store(mind, DEPLOY, category="project", tags=["deploy"])
    remember(mind, "fact_sister", "Has a sister in Porto.", tags=["family"], now=OLD)

    clusters = plan_ids(mind)

    assert sorted(map(sorted, clusters)) == sorted(
        [sorted(m.pk for m in editor), sorted(m.pk for m in deploy)]
    )


def test_shared_words_cluster_without_tags_or_vectors(mind, off):
    pairs = [
        ("fact_garden_tomatoes", "Grows tomatoes in the garden greenhouse."),
        ("fact_garden_basil", "Grows basil beside the tomatoes in the garden greenhouse."),
        ("fact_garden_water", "Waters the garden greenhouse tomatoes every evening."),
        ("fact_dentist", "Dentist appointment every six months."),
    ]
    found = store(mind, pairs, category="fact", tags=[])

    assert plan_ids(mind) == [[m.pk for m in found[:3]]]


def test_one_tag_in_common_is_not_enough_when_meaning_disagrees(mind, fake_embedder):  # noqa: F811
    pairs = [
        ("fact_pet", "Has a dog named Pixel."),
        ("fact_pet_food", "The collie eats twice a day."),
        ("fact_pet_walk", "Walks the puppy at seven."),
        ("fact_standup", "Standup meeting is at half past nine."),
        ("fact_payroll", "Payroll questions go to Ingrid."),
    ]
    found = store(mind, pairs, category="fact", tags=["life"])
    embed(*found)

    assert plan_ids(mind) == [[m.pk for m in found[:3]]]


def test_meaning_alone_clusters_memories_without_tags(mind, fake_embedder):  # noqa: F811
    pairs = [
        ("fact_one", "Has a dog named Pixel."),
        ("fact_two", "Owns a collie called Pixel."),
        ("fact_three", "Pixel the puppy is a dog."),
        ("fact_four", "Payroll questions go to Ingrid."),
    ]
    found = store(mind, pairs, category="fact", tags=[])
    embed(*found)

    assert plan_ids(mind) == [[m.pk for m in found[:3]]]


def test_verified_critical_recent_and_human_memories_are_never_candidates(mind, off):
    tags = ["editor"]
    kept = store(mind, EDITOR, category="preference", tags=tags)
    remember(mind, "preference_v", "Verified editor fact.", category="preference", tags=tags)
    verified = Memory.objects.get(key="preference_v")
    services.memory_verify(memory=verified, actor=PERSON)
    Memory.objects.filter(pk=verified.pk).update(updated_at=OLD)
    remember(
        mind, "preference_c", "Critical.", category="preference", tags=tags, priority="critical"
    )
    remember(mind, "preference_new", "Recent.", category="preference", tags=tags, now=NOW)
    remember(
        mind, "preference_p", "Said by a person.", category="preference", tags=tags, actor=PERSON
    )
    Memory.objects.filter(key__in=["preference_c", "preference_p"]).update(updated_at=OLD)
    remember(
        mind,
        "preference_gone",
        "Expired.",
        category="preference",
        tags=tags,
        now=OLD,
        expires_at=(NOW - timedelta(days=1)).isoformat(),
    )

    assert plan_ids(mind) == [[m.pk for m in kept]]


def test_older_than_and_category_narrow_the_candidates(mind, off):
    editor = store(mind, EDITOR, category="preference", tags=["editor"], at=NOW - timedelta(days=5))
    deploy = store(mind, DEPLOY, category="project", tags=["deploy"])

    assert plan_ids(mind) == [[m.pk for m in deploy]]
    assert sorted(map(sorted, plan_ids(mind, older_than=timedelta(days=1)))) == sorted(
        [sorted(m.pk for m in editor), sorted(m.pk for m in deploy)]
    )
    assert plan_ids(mind, older_than=timedelta(days=1), category="preference") == [
        [m.pk for m in editor]
    ]


def test_min_and_max_cluster_bounds(mind, off):
    editor = store(mind, EDITOR, category="preference", tags=["editor"])
    deploy = store(mind, DEPLOY[:2], category="project", tags=["deploy"])

    assert plan_ids(mind) == [[m.pk for m in editor]]  # the deploy pair is below 3
    assert plan_ids(mind, min_cluster_size=2, max_clusters=1) == [[m.pk for m in editor]]
    assert plan_ids(mind, min_cluster_size=2)[1] == [m.pk for m in deploy]
    assert plan_ids(mind, min_cluster_size=4) == []


def test_another_minds_memories_are_never_in_a_cluster(mind, stranger_mind, off):
    mine = store(mind, EDITOR[:2], category="preference", tags=["editor"])
    store(stranger_mind.mind, EDITOR, category="preference", tags=["editor"])

    assert plan_ids(mind, min_cluster_size=2) == [[m.pk for m in mine]]


def test_superseded_memories_are_not_candidates(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    Memory.objects.filter(pk=found[0].pk).update(superseded_by=found[1])

    assert plan_ids(mind, min_cluster_size=2) == [[m.pk for m in found[1:]]]


# --- The summary -----------------------------------------------------------------------------


def test_distinct_statements_drop_repeats_and_keep_the_longer():
    found = distinct_statements(
        [
            "Uses Neovim with LazyVim.\n- Config in ~/.config/nvim.",
            "uses neovim with lazyvim. Prefers dark themes!",
            "* Prefers dark themes",
            "Uses Neovim with LazyVim and Telescope.",
        ]
    )
    assert found == [
        "Uses Neovim with LazyVim and Telescope.",
        "Config in ~/.config/nvim.",
        "Prefers dark themes!",
    ]


def test_summary_text_lists_each_statement_once(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    text = summary_text(Cluster("preference", found, 1.0), now=NOW)

    assert text.splitlines() == [
        f"Summary of 3 memories (compacted {NOW:%Y-%m-%d}):",
        "- Uses Neovim with LazyVim.",
        "- Neovim config lives in ~/.config/nvim.",
        "- Uses vim keybindings in every editor.",
    ]


def test_a_summary_stays_within_the_content_limit(mind, off):
    long = [remember(mind, f"fact_{i}", f"{i} " + "word " * 9000, now=OLD) for i in range(3)]
    text = summary_text(Cluster("fact", long, 1.0), now=NOW)

    assert len(text) <= 50_000
    assert text.endswith("- … and 2 more statements: see the original memories.")


# --- The request ---------------------------------------------------------------------------


def test_the_request_takes_the_clients_body_and_defaults():
    assert compact_request_clean({}) == compact.CompactRequest()
    judged = compact_request_clean(
        {
            "older_than": 3600,
            "dry_run": True,
            "max_clusters": 50,
            "min_cluster_size": 2,
            "category": "fact",
        }
    )
    assert judged == compact.CompactRequest(timedelta(hours=1), True, 50, 2, "fact")
    assert compact_request_clean({"older_than": "7d"}).older_than == timedelta(days=7)
    assert compact_request_clean({"older_than": 0}).older_than == timedelta(0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_clusters": 0}, "max_clusters"),
        ({"max_clusters": 51}, "max_clusters"),
        ({"max_clusters": "3"}, "max_clusters"),
        ({"min_cluster_size": 1}, "min_cluster_size"),
        ({"min_cluster_size": 21}, "min_cluster_size"),
        ({"min_cluster_size": True}, "min_cluster_size"),
        ({"older_than": -1}, "older_than"),
        ({"older_than": "soon"}, "older_than"),
        ({"older_than": float("nan")}, "older_than"),
        ({"dry_run": "yes"}, "dry_run"),
        ({"category": "gossip"}, "category"),
        ({"verified": True}, "verified"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(body, field):
    with pytest.raises(Invalid) as refused:
        compact_request_clean(body)
    assert list(refused.value.fields) == [field]


# --- Dry run, apply, undo ------------------------------------------------------------------


def test_a_dry_run_writes_nothing_and_shows_the_drafts(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor", "neovim"], priority="high")
    events, memories = MemoryEvent.objects.count(), Memory.objects.count()

    done = memory_compact(mind=mind, actor=AGENT, body={"dry_run": True}, now=NOW)

    assert (MemoryEvent.objects.count(), Memory.objects.count()) == (events, memories)
    assert done.clusters_processed == 1 and done.memories_compacted == 3
    (result,) = done.results
    assert result.originals == [m.pk for m in found]
    draft = result.summary
    assert draft.pk is None and draft.source == "system" and not draft.verified
    assert draft.key == "preference_summary_editor"
    assert draft.tags == ["editor", "neovim", SUMMARY_TAG]
    assert draft.priority == Priority.HIGH and draft.confidence == 0.7
    assert draft.content.startswith("Summary of 3 memories")


def compact_now(mind, **body):
    return memory_compact(mind=mind, actor=AGENT, body=body, now=NOW)


def current_ids(mind) -> set[str]:
    return {m.pk for m in selectors.memory_list(mind=mind, limit=1000).memories}


def test_apply_stores_a_summary_that_supersedes_every_original(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    kept = remember(mind, "fact_sister", "Has a sister in Porto.", now=OLD)

    done = compact_now(mind)

    (result,) = done.results
    summary = Memory.objects.get(pk=result.summary.pk)
    assert (summary.source, summary.verified, summary.confidence) == ("system", False, 0.7)
    assert summary.tags == ["editor", SUMMARY_TAG]
    assert result.originals == [m.pk for m in found]
    assert current_ids(mind) == {summary.pk, kept.pk}
    for original in Memory.objects.filter(pk__in=result.originals):
        assert original.superseded_by_id == summary.pk
    events = MemoryEvent.objects.filter(mind=mind, action="supersede", at=NOW)
    assert sorted(events.values_list("memory_id", flat=True)) == sorted(result.originals)
    assert {e.actor_type for e in events} == {"system"}
    assert {e.actor for e in events} == {"compaction for mk_test"}


def test_a_second_compaction_leaves_summaries_and_superseded_memories_alone(mind, off):
    store(mind, EDITOR, category="preference", tags=["editor"])
    compact_now(mind)

    assert compact_now(mind, older_than=0, min_cluster_size=2).results == []


def test_verified_and_critical_memories_are_never_superseded(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    services.memory_verify(memory=found[0], actor=PERSON)
    Memory.objects.filter(pk=found[1].pk).update(priority=Priority.CRITICAL)

    assert compact_now(mind, min_cluster_size=2).results == []
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_a_refused_summary_writes_nothing_at_all(mind, off, settings):
    store(mind, EDITOR, category="preference", tags=["editor"])
    store(mind, DEPLOY, category="project", tags=["deploy"])
    settings.SYNAPSE_MAX_MEMORIES_PER_MIND = 7  # room for one summary, not two
    events = MemoryEvent.objects.count()

    with pytest.raises(QuotaExceeded):
        compact_now(mind)

    assert MemoryEvent.objects.count() == events
    assert Memory.objects.count() == 6
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_undo_brings_every_original_back_and_deletes_the_summary(mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    before = [(m.pk, m.content, m.updated_at) for m in selectors.memory_list(mind=mind).memories]
    (result,) = compact_now(mind).results

    undone = compact_undo(mind=mind, actor=AGENT, summary_id=result.summary.pk)

    assert undone.restored == sorted(m.pk for m in found) and undone.summary_deleted
    assert not Memory.objects.filter(pk=result.summary.pk).exists()
    after = selectors.memory_list(mind=mind).memories
    assert {m.pk for m in after} == {pk for pk, _, _ in before}
    assert {(m.pk, m.content) for m in after} == {(pk, content) for pk, content, _ in before}
    assert MemoryEvent.objects.filter(action="supersede", memory_id=found[0].pk).count() == 2


def test_undo_keeps_a_summary_a_person_verified(mind, off):
    store(mind, EDITOR, category="preference", tags=["editor"])
    (result,) = compact_now(mind).results
    services.memory_verify(memory=result.summary, actor=PERSON)

    undone = compact_undo(mind=mind, actor=PERSON, summary_id=result.summary.pk)

    assert not undone.summary_deleted and len(undone.restored) == 3
    assert len(current_ids(mind)) == 4


def test_undo_refuses_what_is_not_a_summary_and_other_minds(mind, stranger_mind, off):
    found = store(mind, EDITOR, category="preference", tags=["editor"])
    (result,) = compact_now(mind).results

    with pytest.raises(Conflict):
        compact_undo(mind=mind, actor=AGENT, summary_id=found[0].pk)
    with pytest.raises(NotFound):
        compact_undo(mind=stranger_mind.mind, actor=AGENT, summary_id=result.summary.pk)
    assert Memory.objects.filter(superseded_by=result.summary.pk).count() == 3


@pytest.mark.parametrize("model", ["local", "local-english"])
def test_each_bundled_model_clusters_by_meaning_alone(mind, settings, model):
    settings.SYNAPSE_EMBEDDINGS = model
    notes = [
        ("note_a", "Uses Neovim with LazyVim."),
        ("note_b", "Prefers Neovim over VS Code for editing."),
        ("note_c", "Neovim config lives in ~/.config/nvim."),
        ("note_d", "Deploys the API with Docker Compose on a Hetzner box."),
        ("note_e", "The staging deploy runs docker compose up on the staging host."),
        ("note_f", "CI builds the Docker image on every push to main."),
        ("note_g", "Has a sister in Porto."),
        ("note_h", "Dentist appointment every six months."),
    ]
    found = store(mind, notes, category="note", tags=[])
    embed(*found)

    assert sorted(map(sorted, plan_ids(mind))) == sorted(
        [sorted(m.pk for m in found[:3]), sorted(m.pk for m in found[3:6])]
    )


def test_a_later_summary_of_the_same_subject_gets_a_key_of_its_own(mind, off):
    store(mind, EDITOR, category="preference", tags=["editor"])
    (first,) = compact_now(mind).results
    store(mind, [(f"{k}_again", c) for k, c in EDITOR], category="preference", tags=["editor"])

    (second,) = compact_now(mind).results

    assert first.summary.key == "preference_summary_editor"
    assert second.summary.key == "preference_summary_editor_2"


def test_memories_that_contradict_are_never_one_summary(mind, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    then = timezone.now() - timedelta(days=60)
    for key, text in (
        ("standup", "Standup is at 9:30 every weekday morning"),
        ("standup_now", "Standup is at 10:00 every weekday morning"),
    ):
        remember(mind, key, text, tags=["standup"], now=then)
    assert (
        compact_plan(
            mind=mind,
            older_than=timedelta(days=30),
            category=None,
            max_clusters=10,
            min_cluster_size=2,
            now=timezone.now(),
        )
        == []
    )
