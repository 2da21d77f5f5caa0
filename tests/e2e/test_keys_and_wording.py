"""In a real browser, by keyboard: rotating or revoking a Mind Key asks first and says what
stops working; a new person is told what to do next; a new mind's review queue says what
fills it; a share of verified memories never reads 0% while some are."""

from __future__ import annotations

import re

import pytest
import requests

from accounts.models import User
from minds.models import Mind
from minds.services import mind_create
from tests.factories import many_memories

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"


def log_in(page, base: str, email: str = "ada@example.com") -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")


def agent_status(base: str, key: str) -> int:
    response = requests.get(
        f"{base}/memory", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    return response.status_code


def press(page, locator) -> None:
    """Act on a control by keyboard: focus it, press Enter."""
    locator.focus()
    expect(locator).to_be_focused()
    page.keyboard.press("Enter")


@pytest.mark.parametrize("action", ["Rotate", "Revoke"])
def test_changing_the_key_asks_first_and_says_what_stops_working(page, live_server, action):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, key = mind_create(owner=person, name="Assistant")
    log_in(page, base)
    page.goto(f"{base}/dashboard/minds/{mind.pk}/settings/")

    press(page, page.get_by_role("link", name=f"{action} key…"))
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"{action} the Mind Key of “Assistant”?"
    )
    expect(page.get_by_role("main")).to_contain_text("loses access at once")
    expect(page.get_by_role("main")).to_contain_text(mind.key_prefix)
    assert agent_status(base, key) == 200  # asking changed nothing

    # Cancel keeps the key.
    press(page, page.get_by_role("link", name="Cancel"))
    expect(page).to_have_url(f"{base}/dashboard/minds/{mind.pk}/settings/")
    assert agent_status(base, key) == 200

    press(page, page.get_by_role("link", name=f"{action} key…"))
    confirm = "Yes, make a new key" if action == "Rotate" else "Yes, revoke the key"
    press(page, page.get_by_role("button", name=confirm))
    if action == "Rotate":
        new_key = page.get_by_label("Mind Key").input_value()
        assert new_key.startswith("mk_") and new_key != key
        assert agent_status(base, new_key) == 200
    else:
        expect(page.get_by_role("main")).to_contain_text("no working key")
        assert not Mind.objects.get(pk=mind.pk).has_active_key
    assert agent_status(base, key) == 401


def test_a_new_person_is_told_what_to_do_next(page, live_server):
    base = live_server.url
    page.goto(f"{base}/accounts/signup/")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Name").fill("Ada")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{base}/dashboard/")  # logged in at once
    welcome = page.get_by_role("region", name=re.compile("Welcome, Ada"))
    expect(welcome).to_contain_text("Create a mind")
    expect(welcome).to_contain_text("Give its Mind Key to the agent")
    press(page, welcome.get_by_role("link", name="Create your first mind"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("mind")


def test_a_new_minds_queue_and_a_small_share_read_right(page, live_server):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    empty, _ = mind_create(owner=person, name="Fresh")
    full, _ = mind_create(owner=person, name="Busy")
    many_memories(full, 1200, verified=lambda i: i < 3)
    log_in(page, base)

    page.goto(f"{base}/dashboard/minds/{empty.pk}/review/")
    expect(page.get_by_role("main")).to_contain_text("Nothing to review yet")
    expect(page.get_by_role("main")).not_to_contain_text("every memory that is not expired")
    press(page, page.get_by_role("link", name="How to connect an agent"))
    expect(page.get_by_role("heading", name="Give your agent its memory")).to_be_visible()

    page.goto(f"{base}/dashboard/minds/{full.pk}/")
    expect(page.locator("#chart-verified-title").locator("..")).to_contain_text(
        "<1% verified: 3 of 1,200 memories"
    )
