"""In a real browser, on a mind past a page and past the search's fusion depth: the search's
true count and pages, why each row matched, orders honoured during a search, "Expires
soonest", the search's length limit, one message for a bad search, tag links that keep the
other filters."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests
from django.utils import timezone

from accounts.models import User
from memories.search import MAX_QUERY_CHARS, semantic
from minds.services import mind_create
from tests.factories import embed, many_memories
from tests.fake_embedder import fake_embedder  # noqa: F401

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.usefixtures("fake_embedder"),
]

PASSWORD = "a long and careful passphrase"
MATCHES = 2 * semantic.FUSION_DEPTH + 30  # past what the fused lists alone hold
EMPTY_FILTERS = "No memory matches these filters"


@pytest.fixture
def stocked():
    """A person's mind: MATCHES memories about postgres (tagged db), 3 about a dog (found
    by meaning alone), 40 others; some expire, at different times."""
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, key = mind_create(owner=person, name="Assistant")
    now = timezone.now()
    found = many_memories(
        mind,
        MATCHES,
        content=lambda i: f"Postgres note {i}.",
        key=lambda i: f"pg_{i:04d}",
        category=lambda i: "fact" if i % 2 else "note",
        tags=lambda i: ["db", "ops" if i % 2 else "dev"],
        expires_at=lambda i: now + timedelta(days=40 - i) if 10 <= i < 40 else None,
    )
    dogs = many_memories(
        mind, 3, content=lambda i: f"Has a border collie, number {i}.", key=lambda i: f"dog_{i}"
    )
    many_memories(mind, 40, content=lambda i: f"Lunch order {i}.", key=lambda i: f"lunch_{i}")
    embed(*found, *dogs)
    return mind, key


def log_in(page, base: str, mind) -> str:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")
    return f"{base}/dashboard/minds/{mind.pk}/memories/"


def search(page, words: str) -> None:
    page.get_by_role("searchbox", name="Search").fill(words)
    page.get_by_role("button", name="Search", exact=True).click()


def row_keys(page) -> list[str]:
    return page.locator("table.memories tbody th code").all_inner_texts()


def api_total(base: str, key: str, q: str) -> int:
    response = requests.get(
        f"{base}/memory/search",
        params={"q": q},
        headers={"Authorization": f"Bearer {key}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response.json()["total"]


def test_the_search_count_and_pages_are_the_apis(page, live_server, stocked):
    base = live_server.url
    mind, key = stocked
    table = log_in(page, base, mind)
    page.goto(table)
    search(page, "postgres pets")
    total = api_total(base, key, "postgres pets")
    assert total == MATCHES + 3
    status = page.get_by_role("status").filter(has_text="match")
    expect(status).to_contain_text(f"{total} memories match “postgres pets”")
    pages = -(-total // 50)
    expect(page.get_by_text(f"Page 1 of {pages}")).to_be_visible()
    # Why each row matched, in words.
    dog = page.get_by_role("row", name=re.compile("dog_0"))
    expect(dog).to_contain_text("matched by meaning")
    expect(page.get_by_role("row", name=re.compile("pg_")).first).to_contain_text(
        re.compile("matched by words")
    )
    page.get_by_role("link", name=re.compile(f"Last page, {pages}")).click()
    expect(page.get_by_text(f"Page {pages} of {pages}")).to_be_visible()
    assert len(row_keys(page)) == total - 50 * (pages - 1)


def test_a_chosen_order_applies_during_a_search_and_best_match_is_the_default(
    page, live_server, stocked
):
    base = live_server.url
    mind, _ = stocked
    page.goto(log_in(page, base, mind))
    search(page, "postgres")
    order = page.get_by_label("Sort by")
    expect(order.locator("option:checked")).to_have_text("Best match")
    order.select_option(label="Key, A to Z")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_role("status").filter(has_text="match")).to_contain_text(
        f"{MATCHES} memories match “postgres”"
    )
    expect(page.get_by_role("status").filter(has_text="match")).to_contain_text("Key, A to Z")
    keys = row_keys(page)
    assert keys == sorted(keys) and keys[0] == "pg_0000"
    expect(page.get_by_label("Sort by").locator("option:checked")).to_have_text("Key, A to Z")


def test_expires_soonest_lists_what_expires_first(page, live_server, stocked):
    base = live_server.url
    mind, _ = stocked
    page.goto(log_in(page, base, mind))
    page.get_by_label("Sort by").select_option(label="Expires soonest")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("table.memories tbody th code").first).to_have_text("pg_0039")
    keys = row_keys(page)
    assert keys[:30] == [f"pg_{i:04d}" for i in range(39, 9, -1)]
    # The same order narrowed by a search.
    search(page, "postgres")
    expect(page.locator("table.memories tbody th code").first).to_have_text("pg_0039")


def test_a_search_over_the_limit_is_refused_in_words_and_kept(page, live_server, stocked):
    base = live_server.url
    mind, _ = stocked
    table = log_in(page, base, mind)
    box = page.get_by_role("searchbox", name="Search")
    page.goto(table)
    expect(box).to_have_attribute("maxlength", str(MAX_QUERY_CHARS))
    # Up to the limit is a search (the form once dropped anything past half of it).
    words = ("postgres " * 120)[:MAX_QUERY_CHARS]
    search(page, words)
    expect(page.get_by_role("status").filter(has_text="match")).to_contain_text(
        f"{MATCHES} memories match"
    )
    # Past it (a pasted link: typing stops at the limit): one message, the text kept.
    long = "postgres " * 112 + "tuning"
    assert len(long) > MAX_QUERY_CHARS
    page.goto(f"{table}?q={quote(long)}")
    expect(page.get_by_role("alert")).to_have_text(
        re.compile(f"at most {MAX_QUERY_CHARS} characters")
    )
    expect(box).to_have_value(long)
    assert row_keys(page) == []
    expect(page.get_by_text(EMPTY_FILTERS)).to_have_count(0)


def test_a_bad_search_gets_one_clear_message(page, live_server):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, _ = mind_create(owner=person, name="Assistant")
    many_memories(mind, 5)
    page.goto(log_in(page, base, mind))
    for q in ["*", '"', "-", "NOT"]:
        search(page, q)
        expect(page.get_by_role("searchbox", name="Search")).to_have_value(q)
        said = page.locator(".form-errors, .result-count, .empty")
        expect(said).to_have_count(1)
        expect(said).to_have_text(
            "No memory matches “NOT”." if q == "NOT" else re.compile("No words to search for")
        )
        expect(page.get_by_text(EMPTY_FILTERS)).to_have_count(0)
        expect(page.get_by_text(re.compile(r"\b0 memories"))).to_have_count(0)


def test_clicking_a_tag_keeps_every_other_filter(page, live_server, stocked):
    base = live_server.url
    mind, _ = stocked
    page.goto(log_in(page, base, mind))
    search(page, "postgres")
    page.get_by_label("Category").select_option("fact")
    page.get_by_label("Sort by").select_option(label="Key, A to Z")
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("link", name=re.compile("Next")).first.click()
    page.locator("a.tag", has_text="ops").first.click()
    query = parse_qs(urlsplit(page.url).query)
    assert query == {"q": ["postgres"], "category": ["fact"], "sort": ["key"], "tag": ["ops"]}
    expect(page.get_by_role("status").filter(has_text="match")).to_contain_text(
        f"{(MATCHES + 1) // 2} memories match “postgres”"
    )
    expect(page.get_by_label("Tag", exact=True)).to_have_value("ops")
