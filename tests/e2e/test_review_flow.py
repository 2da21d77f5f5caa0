"""In a real browser: a person signs up, makes a mind, an agent stores, the person verifies.

The agent's side goes over HTTP to the same live server with the Mind Key the page showed.
"""

from __future__ import annotations

import re

import pytest
import requests

from accounts.models import User
from memories.models import Memory

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"


def sign_up(page, base: str, email: str = "nora@example.com") -> None:
    page.goto(f"{base}/accounts/signup/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Name").fill("Nora")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{base}/dashboard/")  # a new account is logged in at once


def create_mind(page, name: str) -> str:
    """Create a mind through the form; returns the Mind Key the page shows once."""
    page.get_by_role("link", name=re.compile("(New mind|Create your first mind)")).first.click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Description").fill("Remembers what I am working on")
    page.get_by_role("button", name="Create mind").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(name)
    key = page.get_by_label("Mind Key").input_value()
    assert key.startswith("mk_")
    return key


def agent_store(base: str, mind_key: str, memory: dict) -> dict:
    response = requests.post(
        f"{base}/memory", json=memory, headers={"Authorization": f"Bearer {mind_key}"}, timeout=10
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_sign_up_store_review_verify_recall(page, live_server, shots):
    base = live_server.url
    sign_up(page, base)
    assert User.objects.filter(email="nora@example.com").exists()

    key = create_mind(page, "Research assistant")
    # The ready-to-paste snippets carry this server's address and the key.
    expect(page.locator("#code-python")).to_contain_text(f'Synapse("{base}", "{key}")')
    expect(page.locator("#code-curl")).to_contain_text(f"{base}/memory/recall")
    page.get_by_role("button", name="Copy the Mind Key").click()
    expect(page.locator(".copy-status")).to_have_text(re.compile("Copied|Ctrl\\+C"))
    page.screenshot(path=shots / "mind-key.png", full_page=True)

    stored = agent_store(
        base,
        key,
        {
            "category": "preference",
            "key": "preference_editor",
            "content": "Uses Neovim with the LazyVim setup",
            "tags": ["tools"],
            "priority": "high",
        },
    )
    assert stored["verified"] is False

    page.get_by_role("link", name="I have saved the key: go to the mind").click()
    page.get_by_role("link", name="Review queue").click()
    row = page.locator(f"#row-{stored['id']}")
    expect(row).to_contain_text("Uses Neovim with the LazyVim setup")
    expect(row).to_contain_text("high")
    row.get_by_role("button", name="Verify preference_editor").click()
    expect(page.get_by_role("status").first).to_contain_text("Verified “preference_editor”")
    expect(page.get_by_text("Nothing to review")).to_be_visible()

    assert Memory.objects.get(pk=stored["id"]).verified
    recall = requests.get(
        f"{base}/memory/recall", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert recall.status_code == 200
    assert "preference (HIGH) [verified]" in recall.text
    assert "Uses Neovim with the LazyVim setup" in recall.text


def test_login_required_and_logout(page, live_server):
    base = live_server.url
    page.goto(f"{base}/dashboard/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/dashboard/$"))
    User.objects.create_user(email="lee@example.com", password=PASSWORD)
    page.get_by_label("Email").fill("lee@example.com")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(f"{base}/accounts/login/")
    page.goto(f"{base}/dashboard/")
    expect(page).to_have_url(re.compile("/accounts/login/"))
