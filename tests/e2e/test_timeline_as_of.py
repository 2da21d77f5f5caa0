"""In a real browser in Berlin: the overview's timeline switches its period, and a memory's
page shows the memory as it was at a moment typed in local time."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from accounts.models import User
from memories.actors import Actor
from memories.services import memory_change, memory_upsert
from minds.models import Mind
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def ada(db):
    return User.objects.create_user(email="ada@example.com", password="a long passphrase")


@pytest.fixture
def story(ada):
    """A mind a week old: a city stored three days ago and edited a day ago, a preference
    stored two days ago."""
    now = timezone.now()
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    Mind.objects.filter(pk=mind.pk).update(created_at=now - timedelta(days=7))
    mind.refresh_from_db()
    city = memory_upsert(
        mind=mind, actor=AGENT, category="fact", key="city", content="Lives in Lyon",
        now=now - timedelta(days=3),
    ).memory  # fmt: skip
    edited = now - timedelta(days=1)
    memory_change(memory=city, actor=AGENT, body={"content": "Lives in Paris"}, now=edited)
    memory_upsert(
        mind=mind, actor=AGENT, category="preference", key="tea", content="Prefers tea",
        now=now - timedelta(days=2),
    )  # fmt: skip
    return mind, city, edited


@pytest.fixture
def tab(browser, live_server, ada):
    context = browser.new_context(
        viewport={"width": 1280, "height": 860}, timezone_id="Europe/Berlin"
    )
    context.set_default_timeout(10_000)
    client = Client()
    client.force_login(ada)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])
    yield context.new_page()
    context.close()


def test_the_timeline_switches_its_period(tab, live_server, story):
    mind, _, _ = story
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/")
    timeline = tab.locator("#timeline")
    expect(timeline.get_by_role("link", name="Day")).to_have_attribute("aria-current", "true")
    expect(timeline.locator("figcaption")).to_contain_text("3 writes in the last 30 days")
    expect(timeline.locator(".chart-legend")).to_contain_text("preference: 1")
    expect(timeline.locator(".chart-legend")).to_contain_text("fact: 2")
    timeline.get_by_role("link", name="Week").click()
    expect(tab).to_have_url(re.compile(r"\?period=week#timeline$"))
    timeline = tab.locator("#timeline")
    expect(timeline.get_by_role("link", name="Week")).to_have_attribute("aria-current", "true")
    timeline.get_by_text("Writes per week as a table").click()
    expect(timeline.locator("table")).to_be_visible()
    expect(timeline.locator("figcaption")).to_contain_text("in the last 26 weeks")
    # The stacked parts are drawn in a colour per category.
    assert timeline.locator("rect.chart-cat-fact").count() >= 1
    assert timeline.locator("rect.chart-cat-preference").count() == 1


def test_a_memory_as_of_a_moment_typed_in_local_time(tab, live_server, story):
    """Half an hour before the edit, typed in Berlin's time: read as UTC it would be after
    the edit, so the old content shows only if the page sent its offset."""
    mind, city, edited = story
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{city.pk}/")
    panel = tab.locator("#as-of")
    picker = panel.get_by_label(re.compile("View as of"))
    expect(panel.locator("label")).to_contain_text("your time zone")
    local = (edited - timedelta(minutes=30)).astimezone(BERLIN)
    picker.fill(local.strftime("%Y-%m-%dT%H:%M"))
    panel.get_by_role("button", name="View").click()
    panel = tab.locator("#as-of")
    expect(panel.locator("h2")).to_contain_text("As it was on")
    expect(panel.locator(".memory-content")).to_have_text("Lives in Lyon")
    expect(tab.locator(".memory-content").first).to_have_text("Lives in Paris")
    # Before it existed.
    picker = panel.get_by_label(re.compile("View as of"))
    picker.fill((edited - timedelta(days=5)).astimezone(BERLIN).strftime("%Y-%m-%dT%H:%M"))
    panel.get_by_role("button", name="View").click()
    expect(tab.locator("#as-of")).to_contain_text("This memory did not exist then")
    tab.locator("#as-of").get_by_role("link", name="Back to today").click()
    expect(tab.locator("#as-of h2")).to_have_text("This memory at an earlier moment")
