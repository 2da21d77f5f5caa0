"""In a real browser: the main pages with a month of data, by mouse, keyboard and phone width.

The README's screenshots are drawn from this month of data grown to 5,000 memories, by
test_screenshots.py (`make screenshots`).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import User
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from memories.services import memory_update, memory_upsert
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "a long and careful passphrase"
AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")

# (days ago, category, key, content, tags, priority, confidence, by a person?)
MEMORIES = [
    (
        29,
        "identity",
        "identity_name",
        "Olive Schäfer, goes by Olive",
        ["person"],
        "critical",
        1.0,
        True,
    ),
    (
        27,
        "preference",
        "preference_communication",
        "Prefers short, technical answers without filler",
        ["communication"],
        "high",
        0.8,
        True,
    ),
    (
        24,
        "preference",
        "preference_editor",
        "Uses Neovim with the LazyVim setup",
        ["tools"],
        "normal",
        0.7,
        False,
    ),
    (
        21,
        "project",
        "project_synapse_deploy",
        "Synapse deploys with gunicorn behind Caddy on the home server",
        ["deploy", "synapse"],
        "high",
        0.6,
        False,
    ),
    (
        18,
        "fact",
        "fact_timezone",
        "Lives in Berlin (Europe/Berlin time zone)",
        ["location"],
        "normal",
        0.9,
        True,
    ),
    (
        15,
        "skill",
        "skill_docker_compose",
        "Knows Docker Compose well; prefers it over Kubernetes at home",
        ["docker", "deploy"],
        "normal",
        0.5,
        False,
    ),
    (
        12,
        "mistake",
        "mistake_force_push",
        "Force-pushed to main once and lost a commit: always ask before rewriting history",
        ["git"],
        "critical",
        0.7,
        False,
    ),
    (
        9,
        "project",
        "project_thesis",
        "Writing a thesis on retrieval for small language models, due in March",
        ["thesis"],
        "high",
        0.4,
        False,
    ),
    (
        6,
        "context",
        "context_current_task",
        "Currently migrating the blog from Hugo to Astro",
        ["blog"],
        "low",
        0.7,
        False,
    ),
    (
        4,
        "note",
        "note_coffee",
        "Drinks oat flat whites; dislikes decaf",
        ["food"],
        "low",
        0.3,
        False,
    ),
    (
        2,
        "skill",
        "skill_sql",
        "Comfortable with SQL window functions",
        ["sql"],
        "normal",
        0.8,
        True,
    ),
    (1, "fact", "fact_pet", "Has a cat called Miso", ["pets"], "normal", 0.9, False),
]


@pytest.fixture
def olive(db):
    return User.objects.create_user(email="olive@example.com", password=PASSWORD, name="Olive")


@pytest.fixture
def month(olive):
    """A mind with a month of writes: agents and a person, edits, expiries."""
    mind, _ = mind_create(owner=olive, name="Olive's assistant", description="Work and home")
    mind_create(owner=olive, name="Thesis helper")
    now = timezone.now()
    person = Actor.for_user(olive)
    for days, category, key, content, tags, priority, confidence, human in MEMORIES:
        memory_upsert(
            mind=mind,
            actor=person if human else AGENT,
            category=category,
            key=key,
            content=content,
            tags=tags,
            priority=priority,
            confidence=confidence,
            now=now - timedelta(days=days, hours=3),
        )
    # Agents revise what they know over the month.
    for days in (20, 14, 8, 3):
        memory_upsert(
            mind=mind,
            actor=AGENT,
            category="project",
            key="project_synapse_deploy",
            content=f"Synapse deploys with gunicorn behind Caddy ({days} days ago: 2 workers)",
            now=now - timedelta(days=days),
        )
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="preference",
        key="preference_editor",
        content="Uses Helix now, after years of Neovim",
        now=now - timedelta(days=2),
    )
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="context",
        key="context_sprint",
        content="This sprint: finish the review queue",
        expires_at=now + timedelta(days=3),
    )
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="context",
        key="context_old_sprint",
        content="Last sprint: the search index",
        expires_at=now - timedelta(days=1),
        now=now - timedelta(days=10),
    )
    editor = Memory.objects.get(mind=mind, key="preference_editor")
    memory_update(
        memory=editor, actor=person, tags=["tools", "editor"], now=now - timedelta(days=1)
    )
    return mind


def log_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Email").fill("olive@example.com")
    page.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/dashboard/")


def test_tour_of_the_main_pages(page, live_server, month):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    log_in(page, base)
    expect(page.get_by_role("row", name=re.compile("Olive's assistant"))).to_contain_text(
        "to review"
    )

    page.get_by_role("link", name="Olive's assistant").click()
    expect(page.locator("svg[role=img]")).to_have_count(5)  # the timeline too
    expect(page.get_by_text("verified:", exact=False).first).to_be_visible()

    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_role("searchbox", name="Search").fill("deploying")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("mark").first).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("match “deploying”")

    page.get_by_role("link", name="project_synapse_deploy").click()
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    # Restore the oldest version: one click, recorded as the person's edit.
    page.get_by_role("button", name=re.compile("^Restore version 1 ")).click()
    expect(page.get_by_role("status").first).to_contain_text("Restored version 1,")
    memory = Memory.objects.get(key="project_synapse_deploy")
    assert memory.content.startswith("Synapse deploys with gunicorn behind Caddy on the home")
    assert memory.verified
    latest = MemoryEvent.objects.filter(memory_id=memory.pk).first()
    assert (latest.action, latest.actor) == ("update", "olive@example.com")

    page.get_by_role("link", name="Review queue").click()
    expect(page.get_by_role("heading", name="Expiring soon")).to_be_visible()


def test_review_by_keyboard_and_bulk_verify(page, live_server, month):
    base = live_server.url
    log_in(page, base)
    page.goto(f"{base}/dashboard/minds/{month.pk}/review/")
    # The first Tab stop is the skip link.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    # Verify the top row with the keyboard alone.
    first_row = page.locator("table.review tbody tr").first
    top_key = first_row.locator("code").first.inner_text()
    first_row.get_by_role("button", name=f"Verify {top_key}").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status").first).to_contain_text(f"Verified “{top_key}”")
    assert Memory.objects.get(mind=month, key=top_key).verified

    # Tick everything left (the script reveals "Select all") and verify in one go.
    waiting = Memory.objects.filter(mind=month, verified=False).live(timezone.now()).count()
    assert waiting > 1
    page.get_by_label("Select all on this page").check()
    page.get_by_role("button", name="Verify selected").click()
    expect(page.get_by_role("status").first).to_contain_text(f"Verified {waiting} memories")
    expect(page.get_by_text("Nothing to review")).to_be_visible()


def test_narrow_screen_has_no_sideways_scrolling(page, live_server, month):
    base = live_server.url
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, base)
    for path in [
        f"/dashboard/minds/{month.pk}/review/",
        f"/dashboard/minds/{month.pk}/",
        f"/dashboard/minds/{month.pk}/memories/",
        "/dashboard/",
    ]:
        page.goto(base + path)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"{path} scrolls sideways by {overflow}px"
    # Rows become cards: each value keeps its name.
    page.goto(f"{base}/dashboard/minds/{month.pk}/review/")
    expect(page.get_by_role("button", name=re.compile("^Verify ")).first).to_be_visible()
