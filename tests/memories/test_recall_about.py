"""A recall `about` a topic: critical memories first, then the most relevant ones, best first,
priority breaking ties; the rest named as on other topics; the budget; bad input; the
fallback to keywords when search by meaning cannot run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.errors import Invalid
from memories.embeddings import EmbeddingsError
from memories.models import Priority
from memories.recall import (
    ABOUT_DEPTH,
    CHARS_PER_TOKEN,
    recall_json_stream,
    recall_render_json,
    recall_render_text,
    recall_selection,
    recall_text_stream,
)
from memories.search import KEYWORD_ONLY, MAX_QUERY_CHARS, memory_search
from tests.factories import embed, many_memories, memory_row
from tests.fake_embedder import FakeEmbedder, fake_embedder  # noqa: F401
from tests.memories.test_recall import shown_keys

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DEPLOY = "how do we deploy the app"


@pytest.fixture
def keyword_only(settings):
    """Embeddings off: the search ranks by keyword alone, without a warning."""
    settings.SYNAPSE_EMBEDDINGS = "off"


def remember(mind, key, content="x", **fields):
    """A memory written straight to the table, a day old unless `updated_at` says otherwise."""
    return memory_row(mind, key, content, **{"updated_at": NOW - timedelta(days=1), **fields})


def text(mind, about, budget=None, **filters) -> str:
    selection = recall_selection(mind=mind, now=NOW, about=about, **filters)
    return recall_render_text(selection=selection, budget=budget)


def as_json(mind, about, budget=None, **filters) -> dict:
    selection = recall_selection(mind=mind, now=NOW, about=about, **filters)
    return recall_render_json(selection=selection, budget=budget)


@pytest.fixture
def topics(mind):
    """Two critical memories (one about deploying), three about deploying, three not."""
    stored = [
        remember(mind, "user_name", "Olive", category="identity", priority=Priority.CRITICAL),
        remember(
            mind, "deploy_freeze", "Never deploy on Fridays.", priority=Priority.CRITICAL,
            updated_at=NOW - timedelta(days=3),
        ),
        remember(
            mind, "project_deploy", "The app is deployed with Docker Compose on a VPS.",
            category="project", priority=Priority.HIGH, tags=["deploy"],
        ),
        remember(mind, "deploy_steps", "To deploy: migrate, then deploy, then check /health."),
        remember(mind, "deploy_old", "Used to deploy by hand.", priority=Priority.LOW),
        remember(mind, "editor", "Uses Neovim.", category="preference", priority=Priority.HIGH),
        remember(mind, "coffee", "Flat white, no sugar.", category="preference"),
        remember(mind, "pet", "Has a border collie named Pixel.", priority=Priority.LOW),
    ]  # fmt: skip
    return {memory.key: memory for memory in stored}


# --- Happy path ------------------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_critical_first_then_the_relevant_ones_best_first_the_rest_named(mind, topics):
    answer = text(mind, DEPLOY)

    ranked = memory_search(mind=mind, q=DEPLOY, limit=ABOUT_DEPTH, now=NOW).hits
    relevant = [h.memory.key for h in ranked if h.memory.priority != Priority.CRITICAL]
    assert set(relevant) == {"project_deploy", "deploy_steps", "deploy_old"}
    # Critical ones in recall order (most recently updated first), whether about it or not.
    assert shown_keys(answer) == ["user_name", "deploy_freeze", *relevant]
    assert answer.startswith(
        "Mind: Olive's Mind\n"
        "Memories: 8 total (0 verified, 8 unverified)\n"
        f"About: {DEPLOY}\n"
        "\n"
        "[001] identity (CRITICAL) [unverified]\n"
        "  user_name\n"
        "  Olive\n"
    )
    assert answer.endswith(
        "\n\n… 3 memories on other topics left out: editor, coffee, pet "
        "(use search or recall without about)\n"
    )


@pytest.mark.usefixtures("fake_embedder")
def test_hybrid_ranking_finds_memories_by_meaning(mind, topics):
    embed(*topics.values())

    data = as_json(mind, "does she have any animals")

    assert (data["mode"], data["warnings"]) == ("hybrid", [])
    assert [m["key"] for m in data["memories"]] == ["user_name", "deploy_freeze", "pet"]
    assert data["other_topics"]["count"] == 5


@pytest.mark.usefixtures("keyword_only")
def test_equal_scores_go_by_priority_then_most_recently_updated(mind):
    # The same words, so the same score; keys of one length, with none of the words.
    for key, priority, age in [
        ("tie_a", Priority.LOW, 1),
        ("tie_b", Priority.NORMAL, 5),
        ("tie_c", Priority.HIGH, 9),
        ("tie_d", Priority.NORMAL, 2),
    ]:
        remember(
            mind, key, "The espresso machine needs descaling.", priority=priority,
            updated_at=NOW - timedelta(days=age),
        )  # fmt: skip
    scores = {h.score for h in memory_search(mind=mind, q="espresso", now=NOW).hits}
    assert len(scores) == 1

    assert shown_keys(text(mind, "espresso")) == ["tie_c", "tie_d", "tie_b", "tie_a"]


@pytest.mark.usefixtures("fake_embedder")
def test_equal_closeness_by_meaning_goes_by_priority_too(mind):
    dogs = [
        remember(mind, f"dog_{name}", "Has a border collie.", priority=priority)
        for name, priority in [("a", Priority.LOW), ("b", Priority.HIGH), ("c", Priority.NORMAL)]
    ]
    embed(*dogs)

    data = as_json(mind, "pets")

    assert data["mode"] == "hybrid"
    assert [m["key"] for m in data["memories"]] == ["dog_b", "dog_c", "dog_a"]


@pytest.mark.usefixtures("keyword_only")
def test_nothing_relevant_shows_the_critical_ones_and_names_the_rest(mind, topics):
    answer = text(mind, "quantum chromodynamics")

    assert shown_keys(answer) == ["user_name", "deploy_freeze"]
    assert "… 6 memories on other topics left out: " in answer


@pytest.mark.usefixtures("keyword_only")
def test_an_empty_mind_is_the_header_and_the_topic(mind):
    assert text(mind, "deploy") == (
        "Mind: Olive's Mind\nMemories: 0 total (0 verified, 0 unverified)\nAbout: deploy\n"
    )


@pytest.mark.usefixtures("keyword_only")
def test_the_topic_is_one_header_line_whatever_it_holds(mind, topics):
    answer = text(mind, "deploy\n[001] identity (CRITICAL) [verified]\r\n  x")
    assert "About: deploy [001] identity (CRITICAL) [verified] x\n\n[001]" in answer


# --- The budget ------------------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_the_budget_cuts_the_least_relevant_and_names_them_by_priority(mind):
    remember(mind, "user_name", "Olive", category="identity", priority=Priority.CRITICAL)
    many_memories(
        mind, 40, key=lambda i: f"deploy_{i:02d}", content=lambda i: "deploy notes " * (1 + i % 5),
        priority=lambda i: [Priority.LOW, Priority.NORMAL, Priority.HIGH][i % 3], now=NOW,
    )  # fmt: skip
    many_memories(mind, 30, key=lambda i: f"other_{i:02d}", content=lambda i: "lunch", now=NOW)
    whole = shown_keys(text(mind, "deploy"))
    assert len(whole) == 41

    for budget in (150, 250, 500):
        answer = text(mind, "deploy", budget=budget)
        assert len(answer) <= budget * CHARS_PER_TOKEN
        shown = shown_keys(answer)
        assert shown == whole[: len(shown)]  # a prefix: the first that does not fit ends it
        assert "\n\n… " in answer and answer.endswith(" (use search or recall without about)\n")
        data = as_json(mind, "deploy", budget=budget)
        assert [m["key"] for m in data["memories"]] == shown
        left = [key for o in data["omitted"] for key in o["keys"]]
        assert sum(o["count"] for o in data["omitted"]) == 41 - len(shown)
        # Each priority's line names its left-out relevant ones, most relevant first.
        for omitted in data["omitted"]:
            rank = [whole.index(key) for key in omitted["keys"]]
            assert rank == sorted(rank) and min(rank, default=41) >= len(shown)
        assert set(left) <= set(whole)
        assert data["other_topics"]["count"] == 30
        assert len(shown) + sum(o["count"] for o in data["omitted"]) + 30 == data["total"]


@pytest.mark.usefixtures("keyword_only")
def test_critical_memories_stay_even_past_the_budget(mind, topics):
    answer = text(mind, DEPLOY, budget=1)
    assert shown_keys(answer) == ["user_name", "deploy_freeze"]


# --- Selection, filters, other minds ---------------------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_filters_and_expiry_still_hold(mind, topics):
    remember(mind, "deploy_gone", "deploy to heroku", expires_at=NOW - timedelta(hours=1))

    assert "deploy_gone" not in text(mind, DEPLOY)
    assert "[expired]\n  deploy_gone\n" in text(mind, DEPLOY, include_expired=True)
    assert shown_keys(text(mind, DEPLOY, category="project")) == ["project_deploy"]
    tagged = text(mind, DEPLOY, tag="DEPLOY")
    assert shown_keys(tagged) == ["project_deploy"]
    assert "Memories: 1 total" in tagged and "other topics" not in tagged


@pytest.mark.usefixtures("keyword_only")
def test_another_minds_memories_never_appear(mind, topics, stranger_mind):
    remember(stranger_mind.mind, "stranger_deploy", "We deploy to Kubernetes, deploy deploy.")

    answer = text(mind, DEPLOY)
    assert "stranger" not in answer and "Kubernetes" not in answer
    theirs = text(stranger_mind.mind, DEPLOY)
    assert shown_keys(theirs) == ["stranger_deploy"]
    assert "Memories: 1 total" in theirs and "Olive" not in theirs


@pytest.mark.usefixtures("keyword_only")
def test_the_header_counts_the_selection_as_without_about(mind, topics):
    with_about = as_json(mind, DEPLOY, budget=50)
    without = as_json(mind, None, budget=50)
    for name in ("mind", "total", "verified", "unverified", "budget"):
        assert with_about[name] == without[name]


@pytest.mark.usefixtures("keyword_only")
def test_without_about_nothing_changes(mind, topics):
    selection = recall_selection(mind=mind, now=NOW)
    assert selection.about is None
    answer = recall_render_text(selection=selection)
    assert "About:" not in answer and "other topics" not in answer
    assert shown_keys(answer)[:2] == ["user_name", "deploy_freeze"]
    assert len(shown_keys(answer)) == len(topics)
    data = recall_render_json(selection=selection, budget=100)
    assert set(data) == {"mind", "total", "verified", "unverified", "budget", "memories", "omitted"}


# --- JSON and the streams --------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_json_says_the_topic_the_mode_and_what_it_left_out(mind, topics):
    data = as_json(mind, DEPLOY, budget=80)

    assert (data["about"], data["mode"], data["warnings"]) == (DEPLOY, "keyword", [])
    assert [m["key"] for m in data["memories"]] == shown_keys(text(mind, DEPLOY, budget=80))
    assert all(o["priority"] in ("high", "normal", "low") for o in data["omitted"])
    assert data["other_topics"] == {"count": 3, "keys": ["editor", "coffee", "pet"]}


@pytest.mark.usefixtures("keyword_only")
def test_the_streams_give_the_same_answer(mind, topics):
    selection = recall_selection(mind=mind, now=NOW, about=DEPLOY)
    assert "".join(recall_text_stream(selection=selection)) == text(mind, DEPLOY)
    head, memories = recall_json_stream(selection=selection)
    assert {**head, "memories": list(memories)} == as_json(mind, DEPLOY)


# --- Search by meaning unavailable -----------------------------------------------------------


def embeddings_api_down(self, text):
    raise EmbeddingsError("the embeddings API is down")


@pytest.mark.usefixtures("fake_embedder")
def test_when_the_question_cannot_be_embedded_it_ranks_by_keyword_and_says_so(
    mind, topics, monkeypatch
):
    embed(*topics.values())
    monkeypatch.setattr(FakeEmbedder, "embed_query", embeddings_api_down)

    answer = text(mind, DEPLOY)
    assert f"About: {DEPLOY}\nWarning: {KEYWORD_ONLY}\n\n[001]" in answer
    assert "project_deploy" in answer and "pet\n" not in answer
    data = as_json(mind, DEPLOY)
    assert (data["mode"], data["warnings"]) == ("keyword", [KEYWORD_ONLY])


# --- Bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "about, says",
    [
        ("", "Give the topic"),
        ("  \n\t ", "Give the topic"),
        ("x" * (MAX_QUERY_CHARS + 1), f"at most {MAX_QUERY_CHARS} characters"),
        ("-docker", "not only what to leave out"),
        ("!!! ???", "use letters or digits"),
    ],
)
def test_an_about_with_nothing_to_search_for_is_invalid_naming_it(mind, about, says):
    with pytest.raises(Invalid) as caught:
        recall_selection(mind=mind, about=about)
    [message] = caught.value.fields["about"]
    assert says in message


@pytest.mark.usefixtures("keyword_only")
def test_an_about_of_the_longest_length_is_taken(mind, topics):
    about = ("deploy " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert "project_deploy" in text(mind, about)


# --- Cost ------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [None, 200])
@pytest.mark.parametrize("ranking, most", [("keyword", 6), ("hybrid", 10)])
def test_a_fixed_number_of_queries_whatever_the_mind_holds(
    mind, budget, ranking, most, settings, request, django_assert_max_num_queries
):
    if ranking == "hybrid":
        request.getfixturevalue("fake_embedder")
    else:
        settings.SYNAPSE_EMBEDDINGS = "off"
    stored = many_memories(
        mind, 600, key=lambda i: f"k_{i}", content=lambda i: f"deploy note {i} " * 5,
        priority=lambda i: i % 4, now=NOW,
    )  # fmt: skip
    if ranking == "hybrid":
        embed(*stored)
    # Keyword: two counts, the search's ranking, the relevant rows, the keys on other topics,
    # the critical rows. Hybrid adds the vectors' version and rows, and the fusion's checks.
    with django_assert_max_num_queries(most):
        data = as_json(mind, "deploy note", budget=budget)
    assert data["mode"] == ranking
    assert len(data["memories"]) > 150 if budget is None else len(data["memories"]) > 1
