"""The memories table at the size of a real mind: the search's true count and pages, search by
meaning with the reason shown, orders honoured during a search, the search's length limit,
one message for a bad search, tag links that keep the other filters."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from memories.filters import SORTS
from memories.search import MAX_QUERY_CHARS, semantic
from tests.factories import embed, many_memories
from tests.fake_embedder import fake_embedder  # noqa: F401

# Search by meaning with the small stand-in model, unless a test turns embeddings off.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_embedder")]

MATCHES = 2 * semantic.FUSION_DEPTH + 30  # more than any fused list holds
EMPTY_FILTERS = "No memory matches these filters"


def table(web, mind, **params):
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/", params)
    assert response.status_code == 200
    return response


def keys(response) -> list[str]:
    return [row["memory"].key for row in response.context["rows"]]


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def keyword_only(fake_embedder, settings):  # noqa: F811
    settings.SYNAPSE_EMBEDDINGS = "off"


@pytest.fixture
def postgres_mind(mind, settings):
    """MATCHES memories about postgres (tagged db, some facts), 3 about a dog, 40 others."""
    found = many_memories(
        mind,
        MATCHES,
        content=lambda i: f"Postgres note {i}.",
        key=lambda i: f"pg_{i:04d}",
        category=lambda i: "fact" if i % 2 else "note",
        tags=lambda i: ["db", f"t{i % 3}"],
    )
    dogs = many_memories(
        mind, 3, content=lambda i: f"Has a border collie, number {i}.", key=lambda i: f"dog_{i}"
    )
    many_memories(mind, 40, content=lambda i: f"Lunch order {i}.", key=lambda i: f"lunch_{i}")
    if settings.SYNAPSE_EMBEDDINGS != "off":
        embed(*found, *dogs)
    return mind


def every_page(web, mind, **params) -> tuple[list[str], int]:
    first = table(web, mind, **params)
    pages = first.context["page"].paginator.num_pages
    seen = keys(first)
    for number in range(2, pages + 1):
        seen += keys(table(web, mind, page=number, **params))
    return seen, first.context["page"].paginator.count


# --- 2. The true count, and pages that follow it --------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_a_search_counts_every_match_as_the_api_does(web, agent, postgres_mind):
    api_total = agent.get("/memory/search", {"q": "postgres"}).json()["total"]
    assert api_total == MATCHES
    seen, count = every_page(web, postgres_mind, q="postgres")
    assert count == api_total
    assert f"{MATCHES} memories match “postgres”" in text(table(web, postgres_mind, q="postgres"))
    assert len(seen) == len(set(seen)) == MATCHES


def test_a_search_by_words_and_meaning_counts_what_the_api_counts(web, agent, postgres_mind):
    api = agent.get("/memory/search", {"q": "postgres pets", "limit": 100}).json()
    assert api["total"] == MATCHES + 3  # every keyword match and the dogs, by meaning
    seen, count = every_page(web, postgres_mind, q="postgres pets")
    assert count == api["total"]
    assert len(seen) == len(set(seen)) == count
    assert [r["key"] for r in api["results"]] == seen[:100]


# --- Issue 17 point 7: why each row matched ---------------------------------------------------


def test_each_row_says_why_it_matched(web, postgres_mind):
    response = table(web, postgres_mind, q="pets postgres", per_page=200)
    reasons = {row["memory"].key: row["match"] for row in response.context["rows"]}
    assert reasons["dog_0"] == "meaning"
    assert set(reasons.values()) >= {"meaning"} and set(reasons.values()) <= {
        "meaning",
        "keyword",
        "both",
    }
    page = text(response)
    assert "matched by meaning" in page
    assert re.search(r"matched by (words|words and meaning)<", page)
    assert "by their words or their meaning" in page


def test_when_meaning_is_unavailable_the_page_says_the_results_are_by_keyword(
    web, postgres_mind, monkeypatch
):
    from memories.embeddings import EmbeddingsError, get_embedder
    from memories.search import KEYWORD_ONLY

    def failing(text):
        raise EmbeddingsError("The embeddings API at http://127.0.0.1:9 did not answer.")

    monkeypatch.setattr(get_embedder(), "embed_query", failing)
    response = table(web, postgres_mind, q="pets postgres", per_page=200)
    assert {row["match"] for row in response.context["rows"]} == {"keyword"}
    page = text(response)
    assert KEYWORD_ONLY in page
    assert "by their words or their meaning" not in page and "matched by" not in page
    assert "127.0.0.1" not in page


@pytest.mark.usefixtures("keyword_only")
def test_with_embeddings_off_the_search_is_by_keyword_and_says_nothing_of_meaning(
    web, postgres_mind
):
    response = table(web, postgres_mind, q="pets postgres")
    assert "dog_0" not in keys(response)
    assert "matched by" not in text(response)
    assert "meaning" not in text(response)


# --- 3. Expires soonest -----------------------------------------------------------------------


@pytest.mark.parametrize("search", [None, "note"])
def test_expires_soonest_lists_the_expiring_first_and_the_never_expiring_last(web, mind, search):
    now = timezone.now()
    days = {"in_3_days": 3, "in_1_day": 1, "never": None, "in_10_days": 10, "never_2": None}
    for name, day in days.items():
        expires = now + timedelta(days=day) if day else None
        many_memories(mind, 1, key=lambda i, n=name: n, expires_at=expires)
    params = {"sort": "expires", **({"q": search} if search else {})}
    order = keys(table(web, mind, **params))
    assert order[:3] == ["in_1_day", "in_3_days", "in_10_days"]
    assert set(order[3:]) == {"never", "never_2"}
    assert SORTS["expires"][0] == "expires_at"  # the one definition the table uses


# --- 4. A search over the limit --------------------------------------------------------------


def test_a_search_over_the_limit_says_so_once_and_keeps_the_text(web, postgres_mind):
    long = "postgres " * (MAX_QUERY_CHARS // 9) + "x" * 20
    assert len(long) > MAX_QUERY_CHARS
    response = table(web, postgres_mind, q=long)
    page = text(response)
    assert keys(response) == []
    assert page.count(f"at most {MAX_QUERY_CHARS} characters") == 1
    assert 'role="alert"' in page and "memories match" not in page and EMPTY_FILTERS not in page
    assert f'value="{long}"' in page
    assert f'maxlength="{MAX_QUERY_CHARS}"' in page


def test_a_search_up_to_the_limit_is_searched(web, postgres_mind):
    # Up to the API's limit is a search, not dropped (the form once stopped at half of it).
    long = ("postgres " * (MAX_QUERY_CHARS // 9))[:MAX_QUERY_CHARS]
    response = table(web, postgres_mind, q=long)
    assert response.context["search_error"] is None
    assert response.context["page"].paginator.count >= MATCHES


# --- 5. Orders during a search, tag links ----------------------------------------------------


@pytest.mark.usefixtures("keyword_only")
def test_a_chosen_order_is_applied_to_a_search(web, postgres_mind):
    seen, count = every_page(web, postgres_mind, q="postgres", sort="key")
    assert count == MATCHES
    assert seen == sorted(seen)
    first = text(table(web, postgres_mind, q="postgres", sort="key"))
    assert "in the order “Key, A to Z”" in first
    assert '<option value="key" selected>Key, A to Z</option>' in first


def test_a_chosen_order_applies_to_a_search_by_meaning_too(web, postgres_mind):
    seen, count = every_page(web, postgres_mind, q="postgres pets", sort="key")
    best, best_count = every_page(web, postgres_mind, q="postgres pets")
    assert count == best_count == MATCHES + 3
    assert seen == sorted(best)
    assert seen[:3] == ["dog_0", "dog_1", "dog_2"]  # found by meaning, listed by key


def test_best_match_is_the_default_order_of_a_search_and_says_so(web, postgres_mind):
    page = text(table(web, postgres_mind, q="postgres"))
    assert '<option value="" selected>Best match</option>' in page
    assert "best match first" in page
    listing = text(table(web, postgres_mind))
    assert "Best match" not in listing
    assert '<option value="" selected>Recently updated</option>' in listing
    # "Recently updated" picked during a search stays valid once the search is cleared.
    assert table(web, postgres_mind, sort="-updated").context["form"].errors == {}


def test_a_tag_link_keeps_every_other_filter(web, postgres_mind):
    response = table(web, postgres_mind, q="postgres", category="fact", sort="key", page=2)
    links = re.findall(r'<a class="tag" href="([^"]+)">db</a>', text(response))
    assert links
    query = parse_qs(urlsplit(links[0].replace("&amp;", "&")).query)
    assert query == {"q": ["postgres"], "category": ["fact"], "sort": ["key"], "tag": ["db"]}


# --- 6. One clear message for a bad search ----------------------------------------------------


@pytest.mark.parametrize("q", ["*", '"', "-", "-postgres"])
def test_an_unsearchable_query_gets_one_message(web, postgres_mind, q):
    response = table(web, postgres_mind, q=q)
    page = text(response)
    assert len(re.findall(r'role="alert"', page)) == 1
    assert "memories match" not in page and "memory matches" not in page.lower()
    assert keys(response) == []


def test_a_search_finding_nothing_says_so_once_and_names_filters_only_when_set(web, mind):
    many_memories(mind, 3)
    page = text(table(web, mind, q="NOT"))
    assert page.count("No memory matches “NOT”.") == 1
    assert EMPTY_FILTERS not in page and "0 memories" not in page
    filtered = text(table(web, mind, q="zebra", category="skill"))
    assert "No memory matches “zebra” with these filters." in filtered
    assert EMPTY_FILTERS in text(table(web, mind, category="skill"))


def test_an_empty_mind_says_no_memories_yet_even_with_an_order(web, mind):
    page = text(table(web, mind, sort="key"))
    assert "No memories yet" in page and EMPTY_FILTERS not in page
