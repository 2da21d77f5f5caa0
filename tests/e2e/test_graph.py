"""In a real browser: the Graph tab draws a mind, a node opens its memory, a filter narrows
the nodes, the zoom buttons zoom, a dragged node takes its lines along, and the keyboard
reaches and opens a node."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client

from accounts.models import User
from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_upsert
from minds.services import mind_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")


@pytest.fixture
def ada(db):
    return User.objects.create_user(email="ada@example.com", password="a long passphrase")


@pytest.fixture
def mind(ada):
    """Six memories in two groups by tags; the editor one verified."""
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    for category, key, tags in [
        ("fact", "fact_city", ["home", "berlin"]),
        ("preference", "preference_editor", ["dev", "tools"]),
        ("project", "project_deploy", ["dev", "ops"]),
        ("skill", "skill_sql", ["dev", "db"]),
        ("note", "note_coffee", ["home"]),
        ("context", "context_sprint", ["dev", "ops"]),
    ]:
        memory_upsert(mind=mind, actor=AGENT, category=category, key=key, content=key, tags=tags)
    Memory.objects.filter(mind=mind, key="preference_editor").update(verified=True)
    return mind


@pytest.fixture
def tab(page, live_server, ada):
    client = Client()
    client.force_login(ada)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])
    return page


def node(tab, key):
    return tab.locator(f'.graph-node[aria-label^="{key}:"]')


def test_open_the_graph_click_a_node_and_land_on_the_memory(tab, live_server, mind):
    errors = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/")
    tab.get_by_role("navigation", name=mind.name).get_by_role("link", name="Graph").click()
    expect(tab.get_by_role("heading", name=re.compile("^Graph of"))).to_be_visible()
    expect(tab.locator(".graph-node")).to_have_count(6)
    expect(tab.locator(".graph-stats")).to_contain_text("6 memories")
    node(tab, "skill_sql").click()
    expect(tab).to_have_url(re.compile(r"/memories/[^/]+/$"))
    expect(tab.locator("h1")).to_contain_text("skill_sql")
    assert errors == []  # no script refused by the page's policy, nothing thrown


def test_a_filter_draws_fewer_nodes(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/graph/")
    expect(tab.locator(".graph-node")).to_have_count(6)
    tab.get_by_label("Tag", exact=True).fill("dev")
    tab.get_by_role("button", name="Apply").click()
    expect(tab).to_have_url(re.compile(r"tag=dev"))
    expect(tab.locator(".graph-node")).to_have_count(4)
    tab.get_by_label("Verified", exact=True).select_option("yes")
    tab.get_by_role("button", name="Apply").click()
    expect(tab.locator(".graph-node")).to_have_count(1)
    expect(node(tab, "preference_editor").locator("circle")).to_have_count(1)


def test_the_zoom_buttons_zoom_and_reset(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/graph/")
    figure = tab.locator("[data-graph]")
    expect(figure).to_have_attribute("data-graph-scale", "1")
    box = node(tab, "fact_city").bounding_box()
    tab.get_by_role("button", name="Zoom in").click()
    expect(figure).to_have_attribute("data-graph-scale", "1.25")
    assert node(tab, "fact_city").bounding_box()["width"] > box["width"]
    tab.get_by_role("button", name="Zoom out").click()
    tab.get_by_role("button", name="Zoom out").click()
    expect(figure).to_have_attribute("data-graph-scale", "0.8")
    tab.get_by_role("button", name="Reset view").click()
    expect(figure).to_have_attribute("data-graph-scale", "1")


def test_a_dragged_node_takes_its_lines_and_opens_nothing(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/graph/")
    city = node(tab, "fact_city")
    node_id = city.get_attribute("data-node")
    before = city.bounding_box()
    x, y = before["x"] + before["width"] / 2, before["y"] + before["height"] / 2
    tab.mouse.move(x, y)
    tab.mouse.down()
    tab.mouse.move(x + 60, y + 40, steps=6)
    tab.mouse.up()
    after = city.bounding_box()
    assert after["x"] > before["x"] + 30 and after["y"] > before["y"] + 20
    assert "/graph/" in tab.url  # the drag opened nothing
    line = tab.locator(f'line[data-source="{node_id}"], line[data-target="{node_id}"]').first
    end = "1" if line.get_attribute("data-source") == node_id else "2"
    assert line.get_attribute(f"x{end}") == city.get_attribute("data-x")


def test_the_keyboard_reaches_a_node_and_enter_opens_it(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/graph/")
    first = tab.locator(".graph-node").first
    key = first.get_attribute("aria-label").split(":")[0]
    tab.get_by_role("button", name="Reset view").focus()
    tab.keyboard.press("Tab")
    expect(first).to_be_focused()
    tab.keyboard.press("Enter")
    expect(tab.locator("h1")).to_contain_text(key)


def test_the_wheel_zooms_and_dragging_the_background_moves_the_picture(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/graph/")
    figure = tab.locator("[data-graph]")
    svg = tab.locator("[data-graph-svg]").bounding_box()
    # A corner of the picture, clear of every node.
    x, y = svg["x"] + 8, svg["y"] + 8
    tab.mouse.move(x, y)
    tab.mouse.wheel(0, -100)
    expect(figure).to_have_attribute("data-graph-scale", "1.25")
    before = node(tab, "fact_city").bounding_box()
    tab.mouse.down()
    tab.mouse.move(x + 80, y + 50, steps=6)
    tab.mouse.up()
    after = node(tab, "fact_city").bounding_box()
    assert after["x"] > before["x"] + 40 and after["y"] > before["y"] + 20
    assert "/graph/" in tab.url
    # The keyboard zooms too, from anywhere in the picture.
    node(tab, "fact_city").focus()
    tab.keyboard.press("-")
    expect(figure).to_have_attribute("data-graph-scale", "1")
