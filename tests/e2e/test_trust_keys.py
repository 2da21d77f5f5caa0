"""In a real browser, at 1280 and 390 px: the key page's snippets change nothing an agent
stored and come back in the settings without the key; reloading the one-time key pages
makes no second mind and no second key; a new person is logged in at once, sees no Admin
link, and a memory's history names its agent by the mind."""

from __future__ import annotations

import re

import pytest
import requests

from accounts.models import User
from memories.models import Memory
from minds.models import Mind
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"
WIDTHS = [1280, 390]


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def tab(request, browser):
    context = browser.new_context(viewport={"width": request.param, "height": 860})
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def log_in(page, base: str, email: str = "ada@example.com") -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")


def agent_store(base: str, key: str, body: dict) -> None:
    response = requests.post(
        f"{base}/memory", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert response.status_code in (200, 201), response.text


def agent_status(base: str, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    return requests.get(f"{base}/memory", headers=headers, timeout=10).status_code


def fits_the_width(page) -> None:
    """Nothing makes the page scroll sideways (a long snippet scrolls in its own box)."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


# --- Point 2: the snippets ------------------------------------------------------------------


def test_the_python_snippet_run_as_printed_keeps_the_agents_memories(tab, live_server):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, old_key = mind_create(owner=person, name="Assistant")
    agent_store(
        base,
        old_key,
        {"category": "preference", "key": "preference_editor", "content": "Uses LazyVim"},
    )
    log_in(tab, base)
    tab.goto(f"{base}/dashboard/minds/{mind.pk}/rotate-key/")
    tab.get_by_role("button", name="Yes, make a new key").click()
    key = tab.get_by_label("Mind Key").input_value()
    python = tab.locator("#code-python").inner_text()
    assert key in python
    fits_the_width(tab)
    # Each MCP client's set-up opens by keyboard; its long lines scroll in their own box.
    for client, shown in [
        ("Claude Desktop", "#code-mcp-desktop"),
        ("Cursor", "#code-mcp-cursor-stdio"),
        ("Claude Code", "#code-mcp-claude-code"),
    ]:
        summary = tab.locator("summary", has_text=re.compile(f"^{client}$"))
        summary.focus()
        tab.keyboard.press("Enter")
        expect(tab.locator(shown)).to_be_visible()
        expect(tab.locator(shown)).to_contain_text(key)
    fits_the_width(tab)
    tab.get_by_role("button", name="Copy the Claude Code command through the stdio bridge").click()
    expect(tab.locator(".copy-status")).to_have_text(re.compile("Copied|Ctrl\\+C"))

    pytest.importorskip("synapse_memory")  # the real client, run against this server
    exec(compile(python, "snippet.py", "exec"), {})

    editor = Memory.objects.get(mind=mind, key="preference_editor")
    assert editor.content == "Uses LazyVim"
    sample = Memory.objects.get(mind=mind, key__startswith="synapse_sample_")
    assert sample.category == "note"

    # Later, the settings show the snippets again, without the key.
    tab.goto(f"{base}/dashboard/minds/{mind.pk}/settings/")
    snippets = tab.get_by_role("region", name="Give your agent its memory")
    expect(snippets.locator("#code-curl")).to_contain_text("YOUR_MIND_KEY")
    expect(snippets.locator("#code-mcp-cursor")).to_contain_text(f"{base}/mcp")
    expect(snippets.locator("#code-mcp-desktop")).to_contain_text("YOUR_MIND_KEY")
    expect(tab.get_by_role("main")).not_to_contain_text(key)
    expect(tab.get_by_role("main")).not_to_contain_text(key[11:])
    fits_the_width(tab)


# --- Point 3: reloading the one-time pages ----------------------------------------------------


def test_reloading_the_new_minds_key_page_makes_no_second_mind(tab, live_server):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    log_in(tab, base)
    tab.goto(f"{base}/dashboard/minds/new/")
    tab.get_by_label("Name").fill("Work bot")
    tab.get_by_role("button", name="Create mind").click()
    key = tab.get_by_label("Mind Key").input_value()
    expect(tab).to_have_url(f"{base}/dashboard/minds/new/")  # the POST's own answer

    tab.reload()  # the browser sends the form again
    mind = Mind.objects.get(owner=person)  # still one
    expect(tab).to_have_url(f"{base}/dashboard/minds/{mind.pk}/settings/")
    status = tab.get_by_role("status")
    expect(status).to_contain_text("“Work bot” was already created and no second mind was made")
    expect(status).to_contain_text("rotate it to get a new one")
    expect(tab.get_by_role("link", name="Rotate key…")).to_be_visible()
    expect(tab.get_by_role("main")).not_to_contain_text(key)
    assert agent_status(base, key) == 200  # the key shown first is the one in force

    tab.reload()  # now a plain GET: nothing is sent
    assert Mind.objects.filter(owner=person).count() == 1
    fits_the_width(tab)


def test_reloading_the_rotated_key_page_rotates_once(tab, live_server):
    base = live_server.url
    person = User.objects.create_user(email="ada@example.com", password=PASSWORD)
    mind, old_key = mind_create(owner=person, name="Assistant")
    log_in(tab, base)
    tab.goto(f"{base}/dashboard/minds/{mind.pk}/rotate-key/")
    tab.get_by_role("button", name="Yes, make a new key").click()
    new_key = tab.get_by_label("Mind Key").input_value()

    tab.reload()
    expect(tab).to_have_url(f"{base}/dashboard/minds/{mind.pk}/settings/")
    expect(tab.get_by_role("status")).to_contain_text("the Mind Key was not replaced again")
    expect(tab.get_by_role("main")).not_to_contain_text(new_key)
    assert agent_status(base, new_key) == 200 and agent_status(base, old_key) == 401
    fits_the_width(tab)


# --- Point 8: sign-up, the header, the history ------------------------------------------------


def test_a_new_person_is_logged_in_sees_no_admin_link_and_reads_the_agent_by_its_mind(
    tab, live_server
):
    base = live_server.url
    tab.goto(f"{base}/accounts/signup/")
    header = tab.get_by_role("navigation", name="Main")
    expect(header.get_by_role("link", name="Admin")).to_have_count(0)
    tab.get_by_label("Email").fill("ada@example.com")
    tab.get_by_label("Name").fill("Ada")
    tab.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    tab.get_by_label("Password again").fill(PASSWORD)
    tab.get_by_role("button", name="Create account").click()

    expect(tab).to_have_url(f"{base}/dashboard/")
    expect(tab.get_by_role("status")).to_contain_text("Your account is ready and you are logged in")
    expect(tab.get_by_role("link", name="Create your first mind")).to_be_visible()
    expect(header.get_by_role("link", name="Admin")).to_have_count(0)
    expect(header.get_by_role("button", name="Log out")).to_be_visible()

    person = User.objects.get(email="ada@example.com")
    mind, key = mind_create(owner=person, name="Assistant")
    agent_store(base, key, {"category": "fact", "key": "fact_city", "content": "Lives in Berlin"})
    memory = Memory.objects.get(mind=mind, key="fact_city")
    tab.goto(f"{base}/dashboard/minds/{mind.pk}/memories/{memory.pk}/")
    history = tab.get_by_role("region", name="History")
    expect(history).to_contain_text("by agent of “Assistant”")
    expect(history.locator("strong", has_text=mind.key_prefix)).to_have_count(0)
    fits_the_width(tab)
