"""In a real browser, at 1280 and 390 px: search previews show the content, a delete from a
search lands back on it, the tag filter takes several tags and offers the mind's, a page of
fifty memories stays short on a phone, and axe finds nothing on the guide, the 404 page and
the dashboard in dark mode."""

from __future__ import annotations

import re

import pytest

from accounts.models import User
from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_upsert
from minds.services import mind_create
from tests.e2e.browsing import sign_in, violations

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")
WIDE = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
OFFICE = "Works from home every day except Wednesday"
LONG = (
    "Prefers short, direct answers with code first and the reasoning after it; dislikes "
    "long preambles, repeated caveats and summaries of what was just said. When a change "
    "touches the database, wants the migration shown in full and the rollback spelled out, "
    "and a note on how long it locks the table on a large install."
)


@pytest.fixture
def ada(db):
    return User.objects.create_user(
        email="ada@example.com", password="a long and careful passphrase", name="Ada"
    )


@pytest.fixture
def mind(ada):
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    store = [
        ("fact", "office_days_2", OFFICE, ["office", "munich"]),
        (
            "fact",
            "office_address",
            "The Munich office is at Leopoldstraße 12",
            ["office", "munich"],
        ),
        ("note", "note_berlin", "The Berlin office opens at eight", ["office", "berlin"]),
        ("note", "note_lunch", "Lunch in Munich: the canteen on the ground floor", ["munich"]),
    ]
    for category, key, content, tags in store:
        memory_upsert(
            mind=mind, actor=AGENT, category=category, key=key, content=content, tags=tags
        )
    return mind


@pytest.fixture(params=[WIDE, PHONE], ids=["1280px", "390px"])
def tab(request, browser, live_server, ada):
    context = browser.new_context(viewport=request.param)
    context.set_default_timeout(10_000)
    sign_in(context, live_server, ada)
    yield context.new_page()
    context.close()


def open_filters(tab) -> None:
    panel = tab.locator("details.filter-panel")
    if panel.get_attribute("open") is None:
        panel.locator("summary").click()


# --- 5a. The preview shows the content, the key once -----------------------------------------


def test_a_key_match_previews_the_content(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/?q=days")
    memory = Memory.objects.get(key="office_days_2")
    row = tab.locator(f"#row-{memory.pk}")
    expect(row.locator(".preview")).to_contain_text(OFFICE)
    assert row.locator("th").inner_text().count("office_days_2") == 1


# --- 5b. Deleting from a search returns to that search ---------------------------------------


def test_a_delete_from_a_search_lands_back_on_the_search(tab, live_server, mind):
    search = f"/dashboard/minds/{mind.pk}/memories/?q=office&tag=munich&per_page=25"
    tab.goto(live_server.url + search)
    tab.get_by_role("link", name="office_address").click()
    tab.get_by_role("link", name="Delete…").click()
    tab.get_by_role("button", name="Yes, delete it").click()
    expect(tab).to_have_url(live_server.url + search)
    expect(tab.get_by_role("status").first).to_contain_text("Deleted “office_address”")
    expect(tab.get_by_role("searchbox", name="Search")).to_have_value("office")
    assert tab.locator("table.memories tbody th code").all_inner_texts() == ["office_days_2"]
    # And its Undo brings it back to the same search.
    tab.get_by_role("button", name=re.compile("^Undo")).click()
    expect(tab).to_have_url(re.compile(re.escape(live_server.url + search) + "#row-"))
    expect(tab.locator("table.memories tbody th code")).to_have_count(2)


# --- 5c. Several tags, the mind's tags to pick from, a hint when nothing matches ---------------


def test_the_tag_filter_takes_several_tags_and_offers_the_minds(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/")
    open_filters(tab)
    tags = tab.get_by_label("Tags (all must match)")
    tags.fill("office, ")
    # The tag being typed is completed after the comma; tags already given are not offered.
    options = tab.locator("#mind-tags option")
    munich = tab.locator('#mind-tags option[data-tag="munich"]')
    expect(munich).to_have_attribute("value", "office, munich")
    expect(munich).to_have_text("3 memories")
    expect(tab.locator('#mind-tags option[data-tag="office"]')).to_have_attribute("disabled", "")
    assert options.count() == 3  # office, munich, berlin
    tags.fill("office, munich")
    tab.get_by_role("button", name="Apply").click()
    keys = tab.locator("table.memories tbody th code").all_inner_texts()
    assert sorted(keys) == ["office_address", "office_days_2"]

    open_filters(tab)
    tab.get_by_label("Tags (all must match)").fill("office, paris")
    tab.get_by_role("button", name="Apply").click()
    empty = tab.locator(".empty")
    expect(empty).to_contain_text("No memory of this mind has the tag “paris”.")
    tab.get_by_role("link", name="Without the tag “paris”").click()
    expect(tab.locator("table.memories tbody tr")).to_have_count(3)


# --- 9. Fifty memory cards on a phone -----------------------------------------------------------


def test_fifty_memory_cards_stay_compact_on_a_phone(browser, live_server, ada, mind):
    for n in range(50):
        memory_upsert(
            mind=mind,
            actor=AGENT,
            category=("preference", "fact", "project")[n % 3],
            key=f"preference_answer_style_{n:02d}",
            content=LONG if n % 2 else f"Short note {n}",
            tags=["style", "answers", f"t{n % 5}"],
        )
    context = browser.new_context(viewport=PHONE)
    try:
        sign_in(context, live_server, ada)
        page = context.new_page()
        page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/?per_page=50")
        expect(page.locator("table.memories tbody tr")).to_have_count(50)
        height = page.evaluate("document.documentElement.scrollHeight")
        # Every card still shows its key, a few lines of content and its meta.
        first = page.locator("table.memories tbody tr").nth(1)
        preview = first.locator(".preview").bounding_box()
        line = float(
            page.evaluate(
                "parseFloat(getComputedStyle(document.querySelector('.preview')).lineHeight)"
            )
        )
        assert preview["height"] <= 3 * line + 1
        meta = first.locator("td:not(.pick)")
        tops = {round(meta.nth(i).bounding_box()["y"]) for i in range(meta.count())}
    finally:
        context.close()
    assert height < 10_000, height  # 16,400 px before the cards were made compact
    assert len(tops) <= 3, tops  # the meta on a few lines, not six


# --- 9. axe: the guide, the 404 page, the dashboard in dark mode -------------------------------


def test_axe_finds_nothing_on_the_guide_the_404_page_and_in_dark_mode(
    axe, browser, live_server, ada, mind
):
    memory = Memory.objects.get(key="office_days_2")
    base = f"/dashboard/minds/{mind.pk}"
    found = {}
    for scheme in ("light", "dark"):
        for viewport in (WIDE, PHONE):
            context = browser.new_context(viewport=viewport, color_scheme=scheme)
            try:
                page = context.new_page()
                where = f"{scheme} {viewport['width']}px"
                page.goto(f"{live_server.url}/")
                found[f"guide, {where}"] = violations(axe, page)
                page.goto(f"{live_server.url}/no/such/page")
                expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
                found[f"404, {where}"] = violations(axe, page)
                if scheme == "light" and viewport is WIDE:
                    continue
                sign_in(context, live_server, ada)
                for path in [
                    "/dashboard/",
                    f"{base}/",
                    f"{base}/memories/?q=office",
                    f"{base}/memories/?tag=office,paris",
                    f"{base}/memories/{memory.pk}/",
                    f"{base}/memories/{memory.pk}/delete/",
                    f"{base}/review/",
                    f"{base}/activity/",
                    f"{base}/graph/",
                    f"{base}/settings/",
                    "/dashboard/nothing-here/",
                ]:
                    page.goto(live_server.url + path)
                    found[f"{path}, {where}"] = violations(axe, page)
            finally:
                context.close()
    assert {where: v for where, v in found.items() if v} == {}


def test_dark_mode_is_dark(browser, live_server, ada, mind):
    context = browser.new_context(viewport=WIDE, color_scheme="dark")
    try:
        sign_in(context, live_server, ada)
        page = context.new_page()
        page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        table = page.evaluate(
            "getComputedStyle(document.querySelector('table.data')).backgroundColor"
        )
        page.goto(f"{live_server.url}/api/docs")  # Swagger UI keeps its light colours
        docs = page.evaluate("getComputedStyle(document.body).backgroundColor")
    finally:
        context.close()
    for colour in (background, table):
        assert sum(map(int, re.findall(r"\d+", colour)[:3])) < 200, colour
    assert sum(map(int, re.findall(r"\d+", docs)[:3])) > 600, docs
