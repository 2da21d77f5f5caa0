"""In a real browser: what a keyboard, a phone, a zoomed screen and a screen reader meet.

The focus ring's contrast, the folded filters and the review queue's panel on a phone, the
writes chart's labels at 375 px and at 200 % zoom, the sign-up form's error summary, the
history's restore buttons, and axe-core over every main page and /api/docs.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import User
from memories.actors import Actor
from memories.services import memory_upsert
from minds.services import mind_create
from tests.e2e.browsing import sign_in, violations
from webhooks.events import fan_out
from webhooks.models import Webhook, WebhookAttempt
from webhooks.services import webhook_create

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")
PHONE = {"width": 375, "height": 812}


@pytest.fixture
def ada(db):
    return User.objects.create_user(
        email="ada@example.com", password="a long and careful passphrase", name="Ada"
    )


@pytest.fixture
def mind(ada, settings):
    """A small mind: agents' writes over two weeks, one memory expiring soon, one rewritten
    three times within one second; a webhook the server disabled, its log holding them."""
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    # Nothing is sent to it: no worker runs here, and it is disabled before the test starts.
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    webhook = webhook_create(mind=mind, body={"url": "http://127.0.0.1:9/hook"}).webhook
    now = timezone.now()
    for day, (category, key, content) in enumerate(
        [
            ("fact", "fact_timezone", "Lives in Berlin"),
            ("preference", "preference_editor", "Uses Helix"),
            ("project", "project_deploy", "Deploys with gunicorn behind Caddy"),
            ("skill", "skill_sql", "Comfortable with SQL window functions"),
            ("note", "note_coffee", "Drinks oat flat whites"),
        ]
    ):
        memory_upsert(
            mind=mind,
            actor=AGENT,
            category=category,
            key=key,
            content=content,
            tags=["home"],
            now=now - timedelta(days=2 * day + 1),
        )
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="context",
        key="context_sprint",
        content="This sprint: the review queue",
        expires_at=now + timedelta(days=2),
    )
    moment = now.replace(microsecond=0) - timedelta(hours=1)
    for content in ("First draft", "Second draft", "Third draft"):
        memory_upsert(
            mind=mind,
            actor=AGENT,
            category="project",
            key="project_thesis",
            content=content,
            now=moment,
        )
    fan_out(webhook, now=now)  # the worker's part: each event's delivery
    first = webhook.deliveries.order_by("seq").first()
    WebhookAttempt.objects.create(
        delivery=first, response_status=503, duration_ms=41, response_body="Try later"
    )
    Webhook.objects.filter(pk=webhook.pk).update(
        enabled=False,
        disabled_reason="8 attempts over 32 hours failed; the last: HTTP 503",
        disabled_at=now,
    )
    return mind


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(10_000)
    yield context
    context.close()


def main_pages(mind) -> list[str]:
    memory = mind.memories.get(key="project_thesis")
    base = f"/dashboard/minds/{mind.pk}"
    webhook = mind.webhooks.get()
    delivery = webhook.deliveries.order_by("seq").first()
    return [
        "/dashboard/",
        f"{base}/",
        f"{base}/memories/",
        f"{base}/memories/{memory.pk}/",
        f"{base}/review/",
        f"{base}/activity/",
        f"{base}/graph/",
        f"{base}/settings/",
        f"{base}/webhooks/",
        f"{base}/webhooks/{webhook.pk}/",
        f"{base}/webhooks/{webhook.pk}/deliveries/{delivery.pk}/",
        # The timeline per hour with the counts as of a moment, and a moment refused.
        f"{base}/?period=hour&at=2020-01-01T00:00",
        f"{base}/memories/{memory.pk}/?at=not-a-date",
    ]


# --- 11. The focus ring ---------------------------------------------------------------------


def luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""

    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two CSS colours as getComputedStyle gives them (rgb/rgba)."""
    lighter, darker = sorted((luminance(parse_rgb(first)), luminance(parse_rgb(second))))[::-1]
    return (lighter + 0.05) / (darker + 0.05)


def parse_rgb(colour: str) -> tuple[float, float, float]:
    match = re.match(r"rgba?\(([\d.]+),? ([\d.]+),? ([\d.]+)", colour)
    assert match, colour
    return (float(match[1]), float(match[2]), float(match[3]))


# Every element that takes the focus, focused in turn after one Tab (so that the browser
# shows its focus ring): its ring's colours (outline and box-shadow) and the colours it sits
# on, its own background and the one around it (the first opaque one up the tree).
RINGS = """() => {
  const opaque = (node) => {
    for (; node; node = node.parentElement) {
      const c = getComputedStyle(node).backgroundColor;
      if (c !== "transparent" && !/rgba\\(.*, 0\\)$/.test(c)) return c;
    }
    return "rgb(255, 255, 255)";
  };
  const focusable =
    "a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]";
  return Array.from(document.querySelectorAll(focusable))
    .filter((el) => el.getClientRects().length && !el.disabled && el.tabIndex >= 0)
    // What a folded <details> holds takes no focus until it is opened.
    .filter((el) => { el.focus(); return document.activeElement === el; })
    .map((el) => {
      el.focus();
      const style = getComputedStyle(el);
      const rings = [];
      if (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0) {
        rings.push(style.outlineColor);
      }
      (style.boxShadow.match(/rgba?\\([^)]*\\)/g) || []).forEach((c) => rings.push(c));
      return {
        what: el.outerHTML.slice(0, 80),
        visible: el.matches(":focus-visible"),
        rings: rings,
        own: opaque(el),
        around: opaque(el.parentElement),
      };
    });
}"""


def test_the_focus_ring_stands_out_on_every_background(page, live_server, ada, mind):
    checked = 0
    for path in ["/accounts/login/", "/accounts/signup/", *main_pages(mind)]:
        if path == "/dashboard/":
            sign_in(page.context, live_server, ada)
        page.goto(live_server.url + path)
        page.keyboard.press("Tab")
        for focused in page.evaluate(RINGS):
            where = f"{path}: {focused['what']}"
            assert focused["visible"] and focused["rings"], f"{where} shows no focus ring"
            for name in ("own", "around"):
                best = max(contrast(ring, focused[name]) for ring in focused["rings"])
                assert best >= 3, f"{where}: {focused['rings']} on {focused[name]}: {best:.2f}:1"
            checked += 1
    assert checked > 100  # links, buttons, inputs, selects, checkboxes, summaries


# --- 12. A phone: folded filters, the expiring panel first -----------------------------------


def test_on_a_phone_the_first_row_shows_on_the_first_screen(phone, live_server, ada, mind):
    sign_in(phone, live_server, ada)
    tab = phone.new_page()
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/?category=project&sort=key")
    panel = tab.locator("details.filter-panel")
    expect(panel).not_to_have_attribute("open", "")
    summary = panel.locator("summary")
    expect(summary).to_contain_text("Category: project")
    expect(summary).to_contain_text("Sort by: Key, A to Z")
    first_row = tab.locator("table.memories tbody tr").first
    assert first_row.bounding_box()["y"] < PHONE["height"]
    # The filters are one tap away.
    summary.click()
    expect(tab.get_by_label("Category")).to_be_visible()

    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    expiring = tab.get_by_role("heading", name="Expiring soon")
    first_row = tab.locator("table.review tbody tr").first
    expect(tab.locator(".expiring-panel summary")).to_have_text("1 memory within 7 days")
    # Above the queue and on the first screen, folded to one line.
    assert expiring.bounding_box()["y"] < first_row.bounding_box()["y"]
    panel = tab.locator(".expiring-panel").bounding_box()
    assert panel["y"] + panel["height"] < PHONE["height"]


def test_wide_screens_and_pages_without_script_show_the_filters_open(
    browser, page, live_server, ada, mind
):
    sign_in(page.context, live_server, ada)
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/")
    expect(page.get_by_label("Category")).to_be_visible()
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    # Beside the queue, at the top.
    panel = page.locator(".expiring-panel").bounding_box()
    queue = page.locator("section.queue").bounding_box()
    assert panel["x"] > queue["x"] + queue["width"] - 1 and abs(panel["y"] - queue["y"]) < 2
    expect(page.get_by_role("link", name="context / context_sprint")).to_be_visible()

    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    try:
        sign_in(context, live_server, ada)
        tab = context.new_page()
        tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/")
        expect(tab.get_by_label("Category")).to_be_visible()
    finally:
        context.close()


# --- 13. The writes chart's labels ------------------------------------------------------------

CHART_TEXTS = """() => Array.from(document.querySelectorAll('#chart-writes-title ~ svg text'))
  .map((t) => { const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom}; })"""


def overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and (b["top"] < a["bottom"])
    )


@pytest.mark.parametrize(
    "viewport, scale",
    [
        (PHONE, 1),
        # 200 % zoom of a 1280 by 800 window: a 640 by 400 CSS viewport at two device pixels
        # per CSS pixel, which is what the browser's zoom gives a page.
        ({"width": 640, "height": 400}, 2),
    ],
    ids=["375px", "zoom-200"],
)
def test_the_writes_chart_labels_do_not_overlap(browser, live_server, ada, mind, viewport, scale):
    context = browser.new_context(viewport=viewport, device_scale_factor=scale)
    try:
        sign_in(context, live_server, ada)
        tab = context.new_page()
        tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/")
        texts = tab.evaluate(CHART_TEXTS)
    finally:
        context.close()
    zero = next(t for t in texts if t["text"] == "0")
    days = [t for t in texts if re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", t["text"])]
    assert days, texts
    first_day = min(days, key=lambda t: t["left"])
    assert not overlap(zero, first_day), (zero, first_day)
    for i, one in enumerate(texts):
        for other in texts[i + 1 :]:
            assert not overlap(one, other), (one, other)


# --- 14. Sign-up errors -----------------------------------------------------------------------


def test_sign_up_errors_are_summed_up_at_the_top_and_keep_what_was_typed(page, live_server):
    page.goto(f"{live_server.url}/accounts/signup/")
    page.get_by_label("Email").fill("grace@example.com")
    page.get_by_label("Name").fill("Grace")
    page.get_by_label(re.compile(r"^Password:?$")).fill("1234")
    page.get_by_label("Password again").fill("12345")
    page.get_by_role("button", name="Create account").click()

    summary = page.locator("[data-error-summary]")
    expect(summary).to_be_focused()
    expect(page).to_have_title(re.compile("^Error: "))
    expect(summary.get_by_role("heading")).to_have_text("Fix these to create your account")
    links = summary.get_by_role("link")
    # Every rule the password breaks and the mismatch, in one round.
    expect(links.filter(has_text="too short")).to_have_count(1)
    expect(links.filter(has_text="too common")).to_have_count(1)
    expect(links.filter(has_text="entirely numeric")).to_have_count(1)
    expect(links.filter(has_text="The two passwords differ")).to_have_count(1)
    # What was typed stays, but the passwords.
    expect(page.get_by_label("Email")).to_have_value("grace@example.com")
    expect(page.get_by_label("Name")).to_have_value("Grace")
    expect(page.get_by_label(re.compile(r"^Password:?$"))).to_have_value("")
    # Each problem leads to its field.
    links.filter(has_text="The two passwords differ").click()
    expect(page.get_by_label("Password again")).to_be_focused()
    assert not User.objects.filter(email="grace@example.com").exists()


# --- 15. History: the restore buttons ---------------------------------------------------------


def test_restore_buttons_name_the_version_and_what_it_puts_back(page, live_server, ada, mind):
    sign_in(page.context, live_server, ada)
    memory = mind.memories.get(key="project_thesis")
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{memory.pk}/")
    entries = page.locator("li.history-entry").filter(has=page.locator("form.restore"))
    expect(entries).to_have_count(2)
    names = []
    for i in range(entries.count()):
        entry = entries.nth(i)
        number = re.search(r"Version (\d+)", entry.locator(".history-head").inner_text())[1]
        # The value the table beside it shows for content (its After or Value column).
        shown = entry.locator("tr").filter(has=page.locator("th", has_text="content"))
        value = shown.locator("td").last.inner_text()
        button = entry.get_by_role("button")
        expect(button).to_have_accessible_name(
            re.compile(rf"^Restore version {number} of .* UTC: puts back content: “{value}”$")
        )
        names.append(re.search(r'button "([^"]+)"', entry.aria_snapshot())[1])
    # Both were written in the same second, and still have different names.
    assert len(set(names)) == 2, names
    entries.first.get_by_role("button").click()
    expect(page.get_by_role("status").first).to_contain_text("Restored version 2, of ")
    memory.refresh_from_db()
    assert memory.content == "Second draft"


# --- 16. axe-core over the main pages and /api/docs ------------------------------------------


def test_axe_finds_nothing_on_the_main_pages(axe, page, phone, live_server, ada, mind):
    found = {}
    page.goto(f"{live_server.url}/accounts/login/")
    found["login"] = violations(axe, page)
    page.goto(f"{live_server.url}/accounts/signup/")
    found["signup"] = violations(axe, page)
    page.get_by_role("button", name="Create account").click()
    expect(page.locator("[data-error-summary]")).to_be_visible()
    found["signup with errors"] = violations(axe, page)

    sign_in(page.context, live_server, ada)
    for path in main_pages(mind):
        page.goto(live_server.url + path)
        found[path] = violations(axe, page)
    # The key page with each MCP client's set-up opened.
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/key/")
    page.evaluate("document.querySelectorAll('details.snippet-client').forEach(d => d.open = true)")
    found["key page, the MCP set-ups opened"] = violations(axe, page)
    # The pages whose layout changes most on a phone.
    sign_in(phone, live_server, ada)
    tab = phone.new_page()
    for path in main_pages(mind)[2:5]:
        tab.goto(live_server.url + path)
        found[f"{path} at 375px"] = violations(axe, tab)
    assert {where: v for where, v in found.items() if v} == {}


def test_axe_finds_nothing_on_the_api_docs_which_load_nothing_from_elsewhere(
    axe, page, live_server
):
    hosts = set()
    page.on("request", lambda request: hosts.add(re.match(r"(https?://[^/]+)?", request.url)[0]))
    page.goto(f"{live_server.url}/api/docs")
    # Swagger UI is a large script: give it time on a busy machine.
    expect(page.locator("#operations .opblock").first).to_be_visible(timeout=30_000)
    found = {"/api/docs": violations(axe, page)}
    # An operation opened, tried out and answered, and the authorization dialog: what a
    # reader meets beyond the folded list (checked on their own, the page is large).
    block = page.locator("#operations-memory-memory_retrieve")
    block.locator(".opblock-summary-control").click()
    block.get_by_role("button", name="Try it out").click()
    block.get_by_role("textbox", name=re.compile("^id")).fill("mem_0")
    block.get_by_role("button", name="Execute").click()
    expect(block.locator(".live-responses-table")).to_be_visible()
    page.get_by_role("button", name=re.compile("^Authorize")).first.click()
    expect(page.locator(".modal-ux")).to_be_visible()
    opened = {"include": [["#operations-memory-memory_retrieve"], [".modal-ux"]]}
    found["/api/docs, opened"] = violations(axe, page, opened)
    assert {where: v for where, v in found.items() if v} == {}
    # Swagger UI's scripts and styles are served from here: no CDN, no public validator.
    assert hosts - {""} == {live_server.url}
