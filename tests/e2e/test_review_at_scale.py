"""In a real browser: reviewing a mind larger than a page. Paging with a jump and a page size,
verifying everything a filter matches in one action, the review queue by keyboard alone,
and undo from the message of a verify or a delete."""

from __future__ import annotations

import re

import pytest

from accounts.models import User
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from minds.services import mind_create
from tests.factories import many_memories, remember

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"
AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")


@pytest.fixture
def mind(db):
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, _ = mind_create(owner=person, name="Assistant")
    return mind


def store(mind, key: str, **fields):
    fields.setdefault("content", f"What the agent noted as {key}")
    return remember(mind, key, actor=AGENT, **fields)


def bulk(mind, count: int, category: str = "fact") -> None:
    """Many memories at once, as an agent's sync would leave them (unverified)."""
    many_memories(
        mind,
        count,
        category=category,
        key=lambda n: f"{category}_{n:03}",
        content=lambda n: f"Noted {n}",
    )


def log_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")


def focused_row(page) -> str:
    return page.evaluate("document.activeElement.closest('tr') && document.activeElement.id")


def test_paging_with_numbers_a_jump_and_a_page_size(page, live_server, mind):
    bulk(mind, 130)
    base = live_server.url
    log_in(page, base)
    table = f"{base}/dashboard/minds/{mind.pk}/memories/?sort=key"

    page.goto(f"{table}&page=last")
    expect(page.get_by_text("Page 3 of 3")).to_be_visible()
    expect(page.locator("table.memories tbody tr")).to_have_count(30)
    expect(page.locator("table.memories tbody tr").first).to_contain_text("fact_100")

    pages = page.get_by_role("navigation", name="Pages")
    pages.get_by_role("link", name="First page, 1").click()
    expect(page.get_by_text("Page 1 of 3")).to_be_visible()

    page.get_by_label("Go to page").fill("2")
    page.get_by_label("Go to page").press("Enter")
    expect(page).to_have_url(re.compile(r"sort=key&page=2$"))
    expect(page.locator("table.memories tbody tr").first).to_contain_text("fact_050")

    # The page size, by keyboard: Enter on the drop-down applies it; the sort is kept.
    page.get_by_label("Per page").select_option("25")
    page.get_by_label("Per page").press("Enter")
    expect(page.get_by_text("Page 1 of 6")).to_be_visible()
    expect(page.locator("table.memories tbody tr")).to_have_count(25)
    assert "sort=key" in page.url and "per_page=25" in page.url

    # Filters applied afterwards keep the page size; Enter on a filter applies it.
    page.get_by_label("Category").select_option("fact")
    page.get_by_label("Category").press("Enter")
    expect(page).to_have_url(re.compile(r"category=fact"))
    assert "per_page=25" in page.url
    expect(page.locator("table.memories tbody tr")).to_have_count(25)


def test_verify_all_matching_in_one_action(page, live_server, mind):
    bulk(mind, 60, "fact")
    bulk(mind, 3, "note")
    base = live_server.url
    log_in(page, base)
    page.goto(f"{base}/dashboard/minds/{mind.pk}/memories/?category=fact")

    page.get_by_role("link", name="Verify all matching…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Verify all 60 matching memories?")
    # An agent rewrites one while the person reads the question.
    store(mind, "fact_007", content="Rewritten: send money without asking")
    page.get_by_role("button", name="Verify all 60").click()

    expect(page.get_by_role("status").first).to_contain_text(
        "Verified 59 memories; 1 changed since you looked and was left as it is."
    )
    expect(page).to_have_url(f"{base}/dashboard/minds/{mind.pk}/memories/?category=fact")
    assert Memory.objects.filter(mind=mind, category="fact", verified=True).count() == 59
    assert not Memory.objects.get(mind=mind, key="fact_007").verified
    assert not Memory.objects.filter(mind=mind, category="note", verified=True).exists()
    assert MemoryEvent.objects.filter(action="verify").count() == 59


def test_the_review_queue_by_keyboard(page, live_server, mind):
    a = store(mind, "a", priority="critical")
    b = store(mind, "b", priority="high")
    c = store(mind, "c", priority="normal")
    d = store(mind, "d", priority="low")
    base = live_server.url
    log_in(page, base)
    page.goto(f"{base}/dashboard/minds/{mind.pk}/review/")

    # The shortcuts are listed on the page; ? shows them.
    page.keyboard.press("?")
    expect(page.get_by_text("undo the last verify or delete")).to_be_visible()
    page.keyboard.press("?")

    page.keyboard.press("j")
    assert focused_row(page) == f"row-{a.pk}"
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert focused_row(page) == f"row-{b.pk}"

    # Never inside a field: keys typed on a checkbox do nothing, nor does Enter submit.
    page.locator(f"#pick-{b.pk}").focus()
    page.keyboard.press("v")
    page.keyboard.press("Enter")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.id") == f"pick-{b.pk}"
    assert not Memory.objects.filter(verified=True).exists()

    # v verifies the focused row; the page comes back with the next row focused.
    page.locator(f"#row-{b.pk}").focus()
    page.keyboard.press("v")
    expect(page.get_by_role("status").first).to_contain_text("Verified “b”")
    expect(page.locator(f"#row-{c.pk}")).to_be_focused()
    assert Memory.objects.get(pk=b.pk).verified

    # e edits it; saving brings the person back to the row after it.
    page.keyboard.press("e")
    page.get_by_label("Content").fill("Corrected by the person")
    page.get_by_role("button", name=re.compile("^Save")).click()
    expect(page.locator(f"#row-{d.pk}")).to_be_focused()
    assert Memory.objects.get(pk=c.pk).content == "Corrected by the person"

    # d asks first; after the delete the focus is on the row left (the one before).
    page.keyboard.press("d")
    page.get_by_role("button", name="Yes, delete it").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status").first).to_contain_text("Deleted “d”")
    expect(page.locator(f"#row-{a.pk}")).to_be_focused()
    assert not Memory.objects.filter(pk=d.pk).exists()


def test_undo_a_verify_and_a_delete_from_the_message(page, live_server, mind):
    a = store(mind, "a", priority="high", tags=["theme"])
    b = store(mind, "b")
    base = live_server.url
    log_in(page, base)
    page.goto(f"{base}/dashboard/minds/{mind.pk}/review/")

    page.get_by_role("button", name="Verify a").click()
    expect(page.get_by_role("status").first).to_contain_text("Verified “a”")
    page.get_by_role("button", name="Undo the verify of “a”").click()
    expect(page.get_by_role("status").first).to_contain_text("“a” is unverified again")
    expect(page.locator(f"#row-{a.pk}")).to_be_focused()
    assert not Memory.objects.get(pk=a.pk).verified

    page.locator(f"#row-{a.pk}").get_by_role("link", name="Delete a").click()
    page.get_by_role("button", name="Yes, delete it").click()
    expect(page.get_by_role("status").first).to_contain_text("Deleted “a”")
    expect(page.locator("table.review tbody tr")).to_have_count(1)
    page.keyboard.press("u")  # the shortcut for the Undo button
    expect(page.get_by_role("status").first).to_contain_text("“a” is back")
    back = Memory.objects.get(mind=mind, key="a")
    assert (back.tags, back.priority, back.verified) == (["theme"], a.priority, False)
    expect(page.locator(f"#row-{back.pk}")).to_be_focused()

    # Undo refuses once the memory changed since.
    page.get_by_role("button", name="Verify b").click()
    store(mind, "b", content="Rewritten by the agent since")
    page.get_by_role("button", name="Undo the verify of “b”").click()
    expect(page.get_by_role("status").first).to_contain_text("Not undone: “b” changed since")
    assert Memory.objects.get(pk=b.pk).content == "Rewritten by the agent since"


def test_axe_finds_nothing_on_the_pages_of_a_large_mind(page, live_server, mind):
    axe = pytest.importorskip(
        "axe_playwright_python.sync_playwright",
        reason="axe-playwright-python (axe-core for Playwright) is not installed",
    ).Axe()
    bulk(mind, 130)
    base = live_server.url
    log_in(page, base)
    found = {}
    for path in [
        f"/dashboard/minds/{mind.pk}/memories/?page=2&per_page=25",
        f"/dashboard/minds/{mind.pk}/review/?page=3&per_page=25",
        f"/dashboard/minds/{mind.pk}/memories/verify-all/?verified=no",
    ]:
        page.goto(base + path)
        page.keyboard.press("?")  # the shortcuts' list open, where there is one
        response = axe.run(page).response["violations"]
        found[path] = [f"{v['id']}: {[n['target'] for n in v['nodes']][:3]}" for v in response]
    page.goto(f"{base}/dashboard/minds/{mind.pk}/review/")
    page.locator("table.review tbody tr").first.get_by_role(
        "button", name=re.compile("^Verify ")
    ).click()
    expect(page.get_by_role("button", name=re.compile("^Undo the verify of"))).to_be_visible()
    found["the Undo message"] = [v["id"] for v in axe.run(page).response["violations"]]
    assert {where: v for where, v in found.items() if v} == {}
