"""In a real browser: a person writes to the agent in the Chat tab, the agent polls and
replies through the API, and the reply appears in the open page without a reload, in the
log that announces it politely. The page passes axe."""

from __future__ import annotations

import pytest
from synapse_memory import Synapse

from chat.models import ChatMessage
from memories.models import Memory
from minds.services import mind_create
from tests.e2e.browsing import sign_in, violations
from tests.factories import user_make

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_agents_reply_appears_without_a_reload(page, live_server, axe):
    person = user_make("ada@example.com")
    mind, key = mind_create(owner=person, name="Assistant")
    sign_in(page.context, live_server, person)
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/")
    page.get_by_role("navigation", name="Assistant").get_by_role("link", name="Chat").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Chat")
    expect(page.locator("#chat-status")).to_contain_text("offline")

    page.get_by_label("Message to the agent").fill("Which port does the staging server use?")
    page.get_by_role("button", name="Send").click()
    log = page.locator("#chat-log")
    expect(log).to_have_attribute("aria-live", "polite")
    expect(log.locator("li")).to_have_count(1)
    expect(log).to_contain_text("Which port does the staging server use?")
    assert violations(axe, page) == []

    # The agent, through the public client, as it would from anywhere.
    agent = Synapse(base_url=live_server.url, mind_key=key, max_retries=0)
    polled = agent.chat.poll()
    assert [m["content"] for m in polled["messages"]] == ["Which port does the staging server use?"]
    agent.chat.reply("Port 8443, behind the VPN.", reply_to_id=polled["messages"][0]["id"])

    page.evaluate("window.__same_page = true")  # gone if the page were reloaded
    expect(log.locator("li")).to_have_count(2, timeout=15_000)
    expect(log.locator("li").nth(1)).to_contain_text("Port 8443, behind the VPN.")
    expect(log.locator("li").nth(1)).to_contain_text("in reply to #1")
    expect(page.locator("#chat-status")).to_have_text("The agent is online.")
    assert page.evaluate("window.__same_page") is True
    assert ChatMessage.objects.get(number=2).read_at is not None  # the person has seen it

    log.locator("li").nth(1).get_by_role("button", name="Remember this").click()
    expect(page.get_by_role("status").first).to_contain_text("verified note")
    memory = Memory.objects.get(mind=mind)
    assert memory.content == "Port 8443, behind the VPN." and memory.verified
