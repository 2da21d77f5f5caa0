"""The README's screenshots, from a mind of more than 5,000 memories, at 1280 px and 375 px.

`make screenshots` runs this with SYNAPSE_SCREENSHOTS=docs/screenshots; without that
variable it is skipped, as it only draws what the other browser tests check. On the way it
checks what a mind that size must still show: the true counts, nothing scrolling sideways
on a phone.
"""

from __future__ import annotations

import os
import random
import re
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from memories import audit
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryTag, Priority
from minds.models import Mind
from tests.e2e.test_dashboard_tour import log_in, month, olive  # noqa: F401
from tests.factories import PASSWORD, share_make

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.usefixtures("month"),
    pytest.mark.skipif(
        not os.environ.get("SYNAPSE_SCREENSHOTS"),
        reason="draws the README's screenshots: set SYNAPSE_SCREENSHOTS (make screenshots)",
    ),
]

MANY = 5_000
PHONE = {"width": 375, "height": 812}
TOPICS = [
    "postgres",
    "docker",
    "the blog",
    "the thesis",
    "the home server",
    "backups",
    "Rust",
    "Neovim",
    "the router",
    "Kubernetes",
    "TypeScript",
    "Spanish lessons",
    "the garden",
    "running",
    "taxes",
    "the band",
]
SAYINGS = {
    "fact": "Keeps notes on {topic} in the wiki (page {n}).",
    "preference": "Prefers short answers about {topic}, with one example.",
    "project": "Note {n} on {topic}: half done, the tests come next.",
    "skill": "Knows {topic} well enough to review others' work ({n}).",
    "mistake": "Mistake {n}: changed {topic} without a dry run first.",
    "context": "This week: {topic}, item {n}.",
    "note": "Mentioned {topic} in passing (note {n}).",
    "identity": "Goes by Olive among {topic} people ({n}).",
}


def stock(mind, owner) -> None:
    """MANY more memories over the last thirty days, written as agents write them: the
    rows, their tags and their audit trail in bulk (the services would take minutes)."""
    rng = random.Random(5040)
    now = timezone.now()
    agent = Actor(kind="agent", name="mk_Xf3kQ9aB")
    person = Actor.for_user(owner)
    memories, events = [], []
    for n in range(MANY):
        category = rng.choice(list(SAYINGS))
        topic = rng.choice(TOPICS)
        created = now - timedelta(days=rng.triangular(0, 30, 2), minutes=rng.randrange(600))
        verified = rng.random() < 0.35
        expires = None
        if rng.random() < 0.01:
            expires = now + timedelta(days=rng.uniform(0.2, 7))
        memory = Memory(
            mind=mind,
            category=category,
            key=f"{category}_{re.sub(r'[^a-z]+', '_', topic.lower()).strip('_')}_{n:04d}",
            content=SAYINGS[category].format(topic=topic, n=n),
            tags=rng.sample(["home", "work", "ops", "dev", "db", "people", "health"], 2),
            priority=rng.choices(list(Priority), weights=[2, 6, 2, 1])[0],
            source="agent",
            confidence=round(rng.uniform(0.3, 1.0), 2),
            expires_at=expires,
            created_at=created,
            updated_at=created,
            verified=verified,
            verified_at=now - timedelta(minutes=rng.randrange(1, 600)) if verified else None,
            verified_by=owner.email if verified else "",
        )
        memories.append(memory)
        events.append(
            audit.event_row(
                memory=memory,
                actor=agent,
                action=MemoryEvent.Action.CREATE,
                changes=audit.created_changes(memory),
                now=created,
            )
        )
        if rng.random() < 0.15:
            # An agent revised how sure it is, a day or so later.
            before, memory.confidence = memory.confidence, round(rng.uniform(0.3, 1.0), 2)
            memory.updated_at = min(now, created + timedelta(hours=rng.uniform(1, 48)))
            events.append(
                audit.event_row(
                    memory=memory,
                    actor=agent,
                    action=MemoryEvent.Action.UPDATE,
                    changes={"confidence": {"old": before, "new": memory.confidence}},
                    now=memory.updated_at,
                )
            )
        if verified:
            events.append(
                audit.event_row(
                    memory=memory,
                    actor=person,
                    action=MemoryEvent.Action.VERIFY,
                    changes={"verified": {"old": False, "new": True}},
                    now=memory.verified_at,
                )
            )
    with transaction.atomic():
        Memory.objects.bulk_create(memories, batch_size=500)
        MemoryTag.objects.bulk_create(
            (MemoryTag(memory=m, mind=mind, tag=tag) for m in memories for tag in m.tags),
            batch_size=1000,
        )
        MemoryEvent.objects.bulk_create((MemoryEvent(**row) for row in events), batch_size=1000)


def no_sideways_scrolling(tab) -> None:
    overflow = tab.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 1, f"{tab.url} scrolls sideways by {overflow}px"


def test_screenshots_of_a_mind_of_five_thousand_memories(browser, page, live_server, shots):
    mind = Mind.objects.get(name="Olive's assistant")  # the tour's month of writes
    stock(mind, mind.owner)
    total = Memory.objects.filter(mind=mind).live(timezone.now()).count()
    assert total > MANY
    base = live_server.url
    page.set_viewport_size({"width": 1280, "height": 900})
    mind_url = f"{base}/dashboard/minds/{mind.pk}"

    page.goto(f"{base}/accounts/login/")
    page.screenshot(path=shots / "login.png")
    log_in(page, base)
    expect(page.get_by_role("row", name=re.compile("Olive's assistant"))).to_contain_text(
        "to review"
    )
    page.screenshot(path=shots / "minds.png", full_page=True)

    page.goto(f"{mind_url}/")
    expect(page.locator("svg[role=img]")).to_have_count(5)  # the timeline too
    page.screenshot(path=shots / "overview.png", full_page=True)

    page.goto(f"{mind_url}/memories/")
    counted = page.locator(".result-count").first.inner_text().replace(",", "")
    assert counted.startswith(f"{total} memories"), counted
    page.goto(f"{mind_url}/memories/?q=postgres")
    expect(page.locator("mark").first).to_be_visible()
    page.screenshot(path=shots / "memories-search.png")

    deploy = Memory.objects.get(mind=mind, key="project_synapse_deploy")
    page.goto(f"{mind_url}/memories/{deploy.pk}/")
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    page.screenshot(path=shots / "memory-history.png", full_page=True)

    page.goto(f"{mind_url}/review/")
    expect(page.get_by_role("heading", name="Expiring soon")).to_be_visible()
    page.screenshot(path=shots / "review-queue.png")

    # The 150 most important memories, linked where they share two tags or more.
    page.goto(f"{mind_url}/graph/?min_shared_tags=2")
    expect(page.locator(".graph-node")).to_have_count(150)
    page.screenshot(path=shots / "graph.png", full_page=True)

    ravi = User.objects.create_user(email="ravi@example.com", password=PASSWORD, name="Ravi")
    share_make(mind, ravi, acl="write")
    share_make(mind, "sam@example.com", acl="read")  # no account yet: pending
    page.goto(f"{mind_url}/settings/")
    expect(page.locator("#sharing")).to_contain_text("pending")
    page.locator("#sharing").screenshot(path=shots / "sharing.png")

    phone = browser.new_context(viewport=PHONE)
    try:
        tab = phone.new_page()
        log_in(tab, base)
        for path, shot in [
            ("/memories/", "memories-narrow.png"),
            ("/review/", "review-narrow.png"),
            ("/", "overview-narrow.png"),
        ]:
            tab.goto(mind_url + path)
            no_sideways_scrolling(tab)
            tab.screenshot(path=shots / shot)
    finally:
        phone.close()
