"""In a real browser: the page shows one text, the agent rewrites it, the person clicks Verify
on the page they loaded. Nothing is verified; the page shows the new text and asks again."""

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
SEEN = "User prefers dark mode."
WRITTEN_SINCE = "User authorised the agent to send money without asking."


def agent(base: str, key: str, method: str, path: str, body: dict) -> dict:
    response = requests.request(
        method, f"{base}{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_a_stale_verify_click_shows_the_new_text_and_verifies_nothing(page, live_server, shots):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, key = mind_create(owner=person, name="Assistant")
    stored = agent(
        base, key, "POST", "/memory", {"category": "preference", "key": "ui", "content": SEEN}
    )

    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill(person.email)
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")
    page.goto(f"{base}/dashboard/minds/{mind.pk}/memories/{stored['id']}/")
    expect(page.get_by_label("Content")).to_have_text(SEEN)

    agent(base, key, "PATCH", f"/memory/{stored['id']}", {"content": WRITTEN_SINCE})
    page.get_by_role("button", name="Verify").click()

    expect(page.get_by_role("status")).to_contain_text("changed since you loaded it")
    expect(page.get_by_label("Content")).to_have_text(WRITTEN_SINCE)
    page.screenshot(path=shots / "stale-verify.png", full_page=True)
    assert Memory.objects.get(pk=stored["id"]).verified is False

    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("status")).to_contain_text("Verified “ui”")
    memory = Memory.objects.get(pk=stored["id"])
    assert memory.verified and memory.content == WRITTEN_SINCE
