"""The MCP recall tool's `about` (and synapse://recall?about=…): the REST recall about a topic,
as tool results (tests/api/test_memory_recall_about.py holds the HTTP cases)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from memories.embeddings import EmbeddingsError
from memories.models import Priority
from memories.search import KEYWORD_ONLY, MAX_QUERY_CHARS
from tests.factories import embed, memory_row
from tests.fake_embedder import FakeEmbedder, fake_embedder  # noqa: F401
from tests.mcp_server.test_tools import Mcp
from tests.memories.test_recall import shown_keys

pytestmark = pytest.mark.django_db

PETS = "does she have any animals"


@pytest.fixture
def mcp(owner_mind) -> Mcp:
    return Mcp(owner_mind.key)


@pytest.fixture
def memories(mind):
    stored = [
        memory_row(mind, "user_name", "Olive", category="identity", priority=Priority.CRITICAL),
        memory_row(mind, "fact_dog", "Has a border collie, Pixel. Pixel is four.", tags=["home"]),
        memory_row(mind, "project_deploy", "Deployed with Docker Compose.", category="project"),
        memory_row(mind, "editor", "Uses Neovim.", category="preference", priority=Priority.HIGH),
    ]  # fmt: skip
    return {memory.key: memory for memory in stored}


def test_the_tool_takes_about_and_says_what_it_does(mcp):
    [recall] = [t for t in mcp.rpc("tools/list")["result"]["tools"] if t["name"] == "recall"]
    about = recall["inputSchema"]["properties"]["about"]
    assert (about["type"], about["minLength"], about["maxLength"]) == ("string", 1, MAX_QUERY_CHARS)
    assert "most relevant" in about["description"]
    assert "about" not in recall["inputSchema"].get("required", [])
    assert "with about" in recall["description"].lower()


@pytest.mark.usefixtures("fake_embedder")
def test_recall_about_a_topic_critical_first_then_the_relevant_ones(mcp, memories):
    embed(*memories.values())

    text = mcp.ok("recall", {"about": PETS})

    assert f"About: {PETS}\n\n[001]" in text
    assert shown_keys(text) == ["user_name", "fact_dog"]
    assert text.endswith(
        "… 2 memories on other topics left out: editor, project_deploy "
        "(use search or recall without about)\n"
    )
    assert mcp.ok("recall", {"about": "docker", "category": "project"}).count("[0") == 1
    assert shown_keys(mcp.ok("recall", {"about": "pixel", "tag": "HOME"})) == ["fact_dog"]
    assert "About:" not in mcp.ok("recall")


def test_the_budget_holds_with_about(mcp, memories, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    for budget in (80, 200):
        text = mcp.ok("recall", {"about": "pixel", "budget": budget})
        assert len(text) <= budget * 4
        assert shown_keys(text) == (["user_name"] if budget < 85 else ["user_name", "fact_dog"])
    assert "… 1 normal-priority memory left out: fact_dog (use search or raise the budget)\n" in (
        mcp.ok("recall", {"about": "pixel", "budget": 80})
    )


@pytest.mark.parametrize(
    "about, says",
    [
        ("", "about: '' should be non-empty"),
        ("  ", "about: Give the topic"),
        ("x" * (MAX_QUERY_CHARS + 1), "about: "),
        ("-pixel", "about: Say what to look for"),
        (7, "about: 7 is not of type 'string'"),
    ],
)
def test_a_bad_about_is_a_tool_error_naming_it(mcp, about, says):
    assert says in mcp.refused("recall", {"about": about})


def test_the_resource_takes_about_too(mcp, memories, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    uri = f"synapse://recall?budget=500&about={quote('pixel collie')}"
    [contents] = mcp.rpc("resources/read", {"uri": uri})["result"]["contents"]
    assert contents["text"] == mcp.ok("recall", {"about": "pixel collie", "budget": 500})
    assert shown_keys(contents["text"]) == ["user_name", "fact_dog"]
    bad = mcp.rpc("resources/read", {"uri": "synapse://recall?about=%20"})
    assert "about" in bad["error"]["message"]


def test_another_minds_memories_never_appear(mcp, memories, stranger_mind, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    memory_row(stranger_mind.mind, "stranger_dog", "Two border collies, Pixel and Pax.")

    assert "stranger_dog" not in mcp.ok("recall", {"about": "pixel collies"})
    theirs = Mcp(stranger_mind.key).ok("recall", {"about": "pixel collies"})
    assert shown_keys(theirs) == ["stranger_dog"]
    assert "Olive" not in theirs and "fact_dog" not in theirs


@pytest.mark.usefixtures("fake_embedder")
def test_when_search_by_meaning_fails_it_ranks_by_keyword_and_says_so(mcp, memories, monkeypatch):
    embed(*memories.values())

    def down(self, text):
        raise EmbeddingsError("the embeddings API is down")

    monkeypatch.setattr(FakeEmbedder, "embed_query", down)

    text = mcp.ok("recall", {"about": "pixel"})
    assert f"About: pixel\nWarning: {KEYWORD_ONLY}\n\n[001]" in text
    assert shown_keys(text) == ["user_name", "fact_dog"]
