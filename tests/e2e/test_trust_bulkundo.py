"""In a real browser, at 1280 and 390 px: a bulk verify from the review queue is taken back
by its Undo (issue #39, point 1), and a bulk delete from the memory table is too, each
memory back at its own address with its history going on (point 7)."""

from __future__ import annotations

import re

import pytest
import requests

from accounts.models import User
from memories.models import Memory
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"
WIDTHS = [1280, 390]


def signed_in(page, base: str, width: int) -> tuple[object, list[dict]]:
    """A person with a mind of three agent memories, signed in at this width."""
    page.set_viewport_size({"width": width, "height": 860})
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, key = mind_create(owner=person, name="Assistant")
    stored = []
    for i, text in enumerate(("Works from home on Fridays", "Office in Munich", "Likes tea")):
        response = requests.post(
            f"{base}/memory",
            json={"category": "fact", "key": f"fact_{i}", "content": text},
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        )
        assert response.status_code == 201, response.text
        stored.append(response.json())
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill(person.email)
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")
    return mind, stored


def open_bulk_actions(page) -> None:
    """On a phone the bulk actions start folded, so that the rows show first."""
    actions = page.locator("details.bulk-actions")
    if actions.get_attribute("open") is None:
        actions.locator("summary").click()
    expect(page.get_by_role("button", name="Verify selected", exact=True)).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_bulk_verify_is_undone_from_its_message(page, live_server, shots, width):
    base = live_server.url
    mind, _ = signed_in(page, base, width)
    page.goto(f"{base}/dashboard/minds/{mind.pk}/review/")

    count = page.locator("[data-selected-count]")
    expect(count).to_have_text("0 of 3 selected")
    open_bulk_actions(page)
    page.get_by_label("Select fact fact_0").check()
    expect(count).to_have_text("1 of 3 selected")
    page.screenshot(path=shots / f"bulk-queue-{width}.png", full_page=True)
    page.get_by_label("Select all on this page").check()
    expect(count).to_have_text("3 of 3 selected")
    page.get_by_role("button", name="Verify selected").click()

    expect(page.get_by_text("Verified 3 memories.")).to_be_visible()
    assert Memory.objects.filter(mind=mind, verified=True).count() == 3
    undo = page.get_by_role("button", name="Undo the verify of 3 memories")
    expect(undo).to_be_visible()
    page.screenshot(path=shots / f"bulk-verify-undo-{width}.png", full_page=True)
    undo.click()

    expect(page.get_by_text("Undone: 3 memories unverified again.")).to_be_visible()
    assert not Memory.objects.filter(mind=mind, verified=True).exists()
    expect(page.get_by_role("button", name=re.compile("^Undo"))).to_have_count(0)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_bulk_delete_is_undone_and_each_memory_keeps_its_address(page, live_server, shots, width):
    base = live_server.url
    mind, stored = signed_in(page, base, width)
    address = f"{base}/dashboard/minds/{mind.pk}/memories/{stored[1]['id']}/"
    page.goto(f"{base}/dashboard/minds/{mind.pk}/memories/")

    open_bulk_actions(page)
    page.get_by_label("Select fact fact_1").check()
    page.get_by_label("Select fact fact_2").check()
    expect(page.locator("[data-selected-count]")).to_have_text("2 of 3 selected")
    page.screenshot(path=shots / f"bulk-bar-{width}.png", full_page=True)
    page.get_by_role("button", name="Delete selected").click()

    expect(page.get_by_text("Deleted 2 memories.")).to_be_visible()
    assert list(Memory.objects.filter(mind=mind).values_list("key", flat=True)) == ["fact_0"]
    gone = page.request.get(address)
    assert gone.status == 404
    page.get_by_role("button", name="Undo the delete of 2 memories").click()

    expect(page.get_by_text("put back 2 memories as they were")).to_be_visible()
    page.goto(address)
    expect(page.get_by_role("heading", level=1)).to_contain_text("fact_1")
    history = page.locator("ol.history")
    expect(history.locator(".badge").first).to_have_text("undelete")
    expect(history.locator(".badge").nth(1)).to_have_text("delete")
    expect(history.locator(".badge").nth(2)).to_have_text("create")
    page.screenshot(path=shots / f"bulk-delete-undone-{width}.png", full_page=True)
    # The page fits the phone's width: nothing scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
