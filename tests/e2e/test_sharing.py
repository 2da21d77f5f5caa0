"""In a real browser, two people: the owner invites a second person in the Sharing panel;
the mind shows up under "Shared with me"; a reader sees no Verify button, a writer verifies
and the owner's activity names them; a revoke takes the mind away on the reader's next page."""

from __future__ import annotations

import re

import pytest

from accounts.models import User
from memories.models import MemoryEvent
from tests.e2e.browsing import sign_in
from tests.factories import PASSWORD, mind_make, remember

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDE = {"width": 1280, "height": 860}


@pytest.fixture
def household(db):
    alice = User.objects.create_user(email="alice@example.com", password=PASSWORD, name="Alice")
    bob = User.objects.create_user(email="bob@example.com", password=PASSWORD, name="Bob")
    mind, _ = mind_make(alice, name="Household")
    memory = remember(mind, "coffee", "Oat milk flat white, no sugar", category="preference")
    return alice, bob, mind, memory


def person(browser, live_server, user):
    context = browser.new_context(viewport=WIDE)
    context.set_default_timeout(10_000)
    sign_in(context, live_server, user)
    return context, context.new_page()


def test_two_people_share_a_mind_in_the_browser(browser, live_server, household):
    alice, bob, mind, memory = household
    base = f"{live_server.url}/dashboard/minds/{mind.pk}"
    owner_context, owner = person(browser, live_server, alice)
    guest_context, guest = person(browser, live_server, bob)
    try:
        # The owner invites Bob to read.
        owner.goto(f"{base}/settings/")
        panel = owner.locator("#sharing")
        panel.get_by_label(re.compile("Email")).fill("bob@example.com")
        panel.get_by_label(re.compile(r"^Level")).select_option("read")
        with owner.expect_navigation():
            panel.get_by_role("button", name="Invite").click()
        expect(owner.locator(".messages, [role=status]").first).to_contain_text(
            "Invited bob@example.com at read"
        )
        expect(owner.locator("#sharing table")).to_contain_text("bob@example.com")

        # Bob finds it under "Shared with me", with his level and the owner.
        guest.goto(f"{live_server.url}/dashboard/")
        shared = guest.locator("section", has=guest.get_by_role("heading", name="Shared with me"))
        expect(shared).to_contain_text("Household")
        expect(shared).to_contain_text("read")
        expect(shared).to_contain_text("alice@example.com")
        with guest.expect_navigation():
            shared.get_by_role("link", name="Household").click()
        expect(guest.locator(".shared-level")).to_contain_text("Shared with you · read")
        expect(guest.get_by_role("link", name="Settings & key")).to_have_count(0)
        guest.goto(f"{base}/memories/{memory.pk}/")
        expect(guest.locator(".memory-content")).to_contain_text("Oat milk flat white")
        expect(guest.get_by_role("button", name="Verify")).to_have_count(0)

        # The owner raises Bob to write; his next page offers Verify, and it works.
        owner.goto(f"{base}/settings/")
        row = owner.locator("#sharing tr", has_text="bob@example.com")
        row.get_by_label(re.compile("Level of")).select_option("write")
        with owner.expect_navigation():
            row.get_by_role("button", name=re.compile("Change")).click()
        expect(owner.locator("#sharing tr", has_text="bob@example.com")).to_contain_text("active")
        guest.reload()
        with guest.expect_navigation():
            guest.get_by_role("button", name="Verify").click()
        memory.refresh_from_db()
        assert memory.verified and memory.verified_by == "bob@example.com"

        # The owner's activity names Bob for the verification.
        owner.goto(f"{base}/activity/")
        expect(owner.locator("main")).to_contain_text("bob@example.com")
        assert MemoryEvent.objects.filter(actor="bob@example.com", action="verify").exists()

        # The owner revokes the share; Bob's next page of the mind is not found.
        owner.goto(f"{base}/settings/")
        with owner.expect_navigation():
            owner.locator("#sharing tr", has_text="bob@example.com").get_by_role(
                "link", name=re.compile("Revoke")
            ).click()
        with owner.expect_navigation():
            owner.get_by_role("button", name="Yes, revoke the share").click()
        expect(owner.locator("#sharing")).to_contain_text("Not shared with anyone yet")
        response = guest.goto(f"{base}/memories/{memory.pk}/")
        assert response is not None and response.status == 404
        guest.goto(f"{live_server.url}/dashboard/")
        expect(guest.locator("main")).not_to_contain_text("Household")
    finally:
        owner_context.close()
        guest_context.close()
