"""In a real browser in Berlin: times read in the person's zone with UTC on hover, the expiry is
typed in local time, and confirmations land where the person looks, at 1280 and 390 px."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from accounts.models import User
from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_upsert
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")
WIDTHS = {"wide": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
SUMMER = datetime(2031, 7, 1, 12, 30, tzinfo=UTC)  # 14:30 in Berlin (CEST, UTC+2)


@pytest.fixture
def ada(db):
    return User.objects.create_user(email="ada@example.com", password="a long passphrase")


@pytest.fixture
def mind(ada):
    """Thirty unverified memories (a queue that scrolls), one expiring in summer 2031 and
    two within the week."""
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    now = timezone.now()
    for i in range(30):
        memory_upsert(
            mind=mind,
            actor=AGENT,
            category="fact",
            key=f"fact_{i:02d}",
            content=f"Fact number {i}: " + "a sentence long enough to wrap on a phone. " * 3,
            priority="high" if i < 20 else "normal",
            expires_at=now + timedelta(days=i - 23) if i in (25, 26) else None,
        )
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="context",
        key="context_summer",
        content="On holiday in July",
        priority="low",
        expires_at=SUMMER,
    )
    return mind


@pytest.fixture(params=list(WIDTHS))
def tab(request, browser, live_server, ada):
    """A signed-in tab in Berlin, at each width."""
    context = browser.new_context(viewport=WIDTHS[request.param], timezone_id="Europe/Berlin")
    context.set_default_timeout(10_000)
    client = Client()
    client.force_login(ada)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])
    yield context.new_page()
    context.close()


def in_viewport(tab, locator) -> bool:
    box = locator.bounding_box()
    height = tab.evaluate("window.innerHeight")
    width = tab.evaluate("window.innerWidth")
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= height
        and box["x"] >= 0
        and box["x"] + box["width"] <= width
    )


def focused(tab) -> str:
    return tab.evaluate(
        "(document.activeElement.tagName + ' ' + (document.activeElement.textContent || '')).trim()"
    )


# --- 6. Time in the person's zone -----------------------------------------------------------


def test_times_read_in_the_browsers_zone_with_utc_on_hover(tab, live_server, mind):
    base = f"{live_server.url}/dashboard/minds/{mind.pk}"
    summer = Memory.objects.get(key="context_summer")
    tab.goto(f"{base}/memories/{summer.pk}/")
    expires = tab.locator("dt:text-is('Expires') + dd time")
    expect(expires).to_have_text("2031-07-01 14:30 CEST")
    expect(expires).to_have_attribute("title", "2031-07-01 12:30 UTC")
    expect(expires).to_have_attribute("datetime", "2031-07-01T12:30:00+00:00")
    created = tab.locator("dt:text-is('Created') + dd time")
    local = summer.created_at.astimezone(timezone.get_fixed_timezone(0))
    expect(created).to_have_attribute("title", f"{local:%Y-%m-%d %H:%M:%S} UTC")
    expect(created).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T$"))
    # No time on the page is left in UTC.
    assert tab.locator("time").count() >= 4
    assert not [t for t in tab.locator("time").all_inner_texts() if t.endswith("UTC")]

    # The overview's expiring tile lists every memory expiring soon, with their expiry.
    tab.goto(f"{base}/")
    tab.get_by_role("link", name=re.compile(r"^2 expiring within \d+ days$")).click()
    expect(tab).to_have_url(re.compile(r"\?expiring=soon&sort=expires$"))
    rows = tab.locator("table.memories tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("td[data-label='Expires'] time")).to_have_text(re.compile(r" CES?T$"))
    expect(tab.get_by_role("columnheader", name="Expires")).to_be_attached()


def test_the_expiry_is_edited_in_local_time_and_stored_in_utc(tab, live_server, mind):
    summer = Memory.objects.get(key="context_summer")
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{summer.pk}/edit/")
    field = tab.get_by_label(re.compile(r"^Expires at \(your time zone, Europe/Berlin\)"))
    expect(field).to_have_value("2031-07-01T14:30")  # the stored 12:30 UTC, in Berlin
    field.fill("2031-12-24T18:00")  # winter: CET, UTC+1
    tab.get_by_role("button", name="Save").click()
    expect(tab.get_by_role("status")).to_contain_text("Saved.")
    summer.refresh_from_db()
    assert summer.expires_at == datetime(2031, 12, 24, 17, 0, tzinfo=UTC)
    expect(tab.locator("dt:text-is('Expires') + dd time")).to_have_text("2031-12-24 18:00 CET")

    # Saving again without touching it changes nothing.
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{summer.pk}/edit/")
    expect(field).to_have_value("2031-12-24T18:00")
    tab.get_by_role("button", name="Save").click()
    expect(tab.get_by_role("status")).to_contain_text("Nothing changed")


# --- 4. Where confirmations land ------------------------------------------------------------


def test_after_v_the_status_and_its_undo_are_in_view(tab, live_server, mind, shots):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    rows = tab.locator("table.review tbody tr")
    # Down the queue by keyboard, then verify: the page comes back at the next row.
    rows.first.focus()
    for _ in range(8):
        tab.keyboard.press("j")
    key = rows.nth(8).locator("code").inner_text()
    tab.keyboard.press("v")
    status = tab.get_by_role("status").filter(has_text=f"Verified “{key}”")
    expect(status).to_be_visible()
    assert tab.evaluate("window.scrollY") > 300  # scrolled down to the next row
    assert in_viewport(tab, status)
    undo = tab.get_by_role("button", name=re.compile(f"^Undo the verify of “{key}”"))
    assert in_viewport(tab, undo)
    # The row with the focus is not hidden behind the status.
    row_box = tab.locator("tr:focus").bounding_box()
    assert row_box is not None and row_box["y"] + 20 < status.bounding_box()["y"]
    assert Memory.objects.get(key=key).verified
    tab.screenshot(path=shots / f"review-status-{tab.viewport_size['width']}.png")

    # `u` undoes it, and that status stands in view too.
    tab.keyboard.press("u")
    undone = tab.get_by_role("status").filter(has_text=f"Undone: “{key}” is unverified again.")
    expect(undone).to_be_visible()
    assert in_viewport(tab, undone)
    assert not Memory.objects.get(key=key).verified

    # The Undo button is a Tab stop, and the status can be put away.
    rows.first.focus()
    tab.keyboard.press("v")
    expect(tab.get_by_role("button", name=re.compile("^Undo the verify"))).to_be_visible()
    tab.locator("#main").focus()
    for _ in range(12):
        tab.keyboard.press("Tab")
        if tab.evaluate("document.activeElement.hasAttribute('data-undo')"):
            break
    assert tab.evaluate("document.activeElement.hasAttribute('data-undo')")
    tab.get_by_role("button", name="Dismiss").click()
    expect(tab.locator("main > .messages")).to_be_hidden()


def test_after_an_edit_from_the_queue_the_status_is_in_view(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    rows = tab.locator("table.review tbody tr")
    rows.first.focus()
    for _ in range(10):
        tab.keyboard.press("j")
    tab.keyboard.press("e")
    expect(tab.get_by_role("heading", level=1)).to_contain_text("Edit")
    # The form's first control has the focus.
    assert focused(tab).startswith("SELECT")
    assert tab.evaluate("document.activeElement.name") == "category"
    tab.get_by_role("button", name="Save").click()
    status = tab.get_by_role("status").filter(has_text="Nothing changed")
    expect(status).to_be_visible()
    assert tab.evaluate("window.scrollY") > 300
    assert in_viewport(tab, status)


def test_d_opens_the_delete_page_with_yes_focused(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    rows = tab.locator("table.review tbody tr")
    rows.first.focus()
    tab.keyboard.press("j")
    key = rows.nth(1).locator("code").inner_text()
    tab.keyboard.press("d")
    expect(tab.get_by_role("heading", level=1)).to_contain_text(key)
    assert focused(tab) == "BUTTON Yes, delete it"
    tab.keyboard.press("Enter")
    status = tab.get_by_role("status").filter(has_text=f"Deleted “{key}”")
    expect(status).to_be_visible()
    assert in_viewport(tab, status)
    assert not Memory.objects.filter(key=key).exists()


def test_axe_finds_nothing_with_the_status_shown_or_on_the_edit_page(tab, live_server, mind):
    axe = pytest.importorskip(
        "axe_playwright_python.sync_playwright",
        reason="axe-playwright-python (axe-core for Playwright) is not installed",
    ).Axe()
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    tab.locator("table.review tbody tr").first.focus()
    tab.keyboard.press("v")
    expect(tab.get_by_role("button", name=re.compile("^Undo the verify"))).to_be_visible()
    found = {"review with its status": axe.run(tab).response["violations"]}
    summer = Memory.objects.get(key="context_summer")
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{summer.pk}/edit/")
    found["edit"] = axe.run(tab).response["violations"]
    assert {where: [v["id"] for v in found[where]] for where in found if found[where]} == {}
