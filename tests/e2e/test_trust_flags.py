"""In a real browser, at 1280 and 390 px: a review row flags a memory that contradicts or
nearly repeats another and leads to it; the memory page shows its flags and its related
memories; "verify all matching" says how many of its memories are flagged and leaves them
out unless told otherwise. axe finds nothing on these pages."""

from __future__ import annotations

import re

import pytest

from accounts.models import User
from memories.actors import Actor
from memories.hygiene.health import hygiene_check
from memories.models import Memory
from memories.services import memory_upsert
from minds.services import mind_create
from tests.e2e.browsing import sign_in

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENT = Actor(kind="agent", name="mk_Xf3kQ9aB")
WIDTHS = [pytest.param(1280, id="wide"), pytest.param(390, id="phone")]
MEMORIES = [
    ("office_days_1", "Works from the office on Wednesday", ["work"]),
    ("office_days_2", "Works from the office on Friday", ["work"]),
    ("coffee", "Likes strong black coffee in the morning", ["food"]),
    ("coffee_again", "Likes strong black coffee every morning", ["food"]),
    ("cat", "Has a cat called Miso", ["home"]),
    ("desk", "Sits by the window at work", ["work"]),
]


@pytest.fixture
def ada(db):
    return User.objects.create_user(email="ada@example.com", password="unused passphrase")


@pytest.fixture
def mind(ada):
    mind, _ = mind_create(owner=ada, name="Ada's assistant")
    for key, content, tags in MEMORIES:
        memory_upsert(mind=mind, actor=AGENT, category="fact", key=key, content=content, tags=tags)
    hygiene_check(mind=mind)  # the worker's part
    return mind


@pytest.fixture
def tab(browser, live_server, ada, request):
    context = browser.new_context(viewport={"width": request.param, "height": 860})
    context.set_default_timeout(10_000)
    sign_in(context, live_server, ada)
    yield context.new_page()
    context.close()


def no_sideways_scroll(tab) -> None:
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("tab", WIDTHS, indirect=True)
def test_a_review_row_shows_its_flag_and_leads_to_the_other_memory(tab, live_server, mind):
    first = Memory.objects.get(key="office_days_1")
    second = Memory.objects.get(key="office_days_2")
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/review/")
    row = tab.locator(f"#row-{first.pk}")
    expect(row.locator(".flags")).to_contain_text("Contradicts: office_days_2")
    expect(tab.locator(f"#row-{Memory.objects.get(key='coffee').pk} .flags")).to_contain_text(
        "Near-repeat of: coffee_again"
    )
    expect(tab.locator(f"#row-{Memory.objects.get(key='cat').pk} .flags")).to_have_count(0)
    no_sideways_scroll(tab)

    # By keyboard: the flag's link takes the focus and Enter follows it.
    link = row.get_by_role("link", name="office_days_2")
    link.focus()
    tab.keyboard.press("Enter")
    expect(tab).to_have_url(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/{second.pk}/")
    expect(tab.locator(".flags")).to_contain_text("Contradicts: office_days_1")
    related = tab.get_by_role("region", name="Related memories")
    expect(related.get_by_role("link")).to_have_text(["desk", "office_days_1"])  # most recent first
    no_sideways_scroll(tab)

    related.get_by_role("link", name="desk").click()
    expect(tab.get_by_role("heading", level=1)).to_contain_text("desk")


@pytest.mark.parametrize("tab", WIDTHS, indirect=True)
def test_verify_matching_states_the_flagged_count_and_leaves_them_out(tab, live_server, mind):
    tab.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/memories/verify-all/?verified=no")
    expect(tab.locator(".verify-flagged")).to_contain_text(
        "4 of these 6 are flagged as contradicting or nearly repeating another memory"
    )
    tab.get_by_text("See the flagged memories").click()
    expect(tab.locator(".flagged-list > li")).to_have_count(4)
    skip = tab.get_by_label(re.compile("Leave the flagged memories unverified"))
    expect(skip).to_be_checked()
    no_sideways_scroll(tab)

    tab.get_by_role("button", name="Verify matching memories").click()
    expect(tab.get_by_role("status").first).to_contain_text(
        "Verified 2 memories; left 4 flagged memories unverified"
    )
    verified = set(Memory.objects.filter(verified=True).values_list("key", flat=True))
    assert verified == {"cat", "desk"}


@pytest.mark.parametrize("tab", WIDTHS, indirect=True)
def test_axe_finds_nothing_on_the_flagged_pages(axe, tab, live_server, mind):
    base = f"{live_server.url}/dashboard/minds/{mind.pk}"
    first = Memory.objects.get(key="office_days_1")
    found = {}
    for path in ("/review/", f"/memories/{first.pk}/", "/memories/verify-all/?verified=no"):
        tab.goto(base + path)
        for summary in tab.locator("details:not([open]) > summary").all():
            if summary.is_visible():
                summary.click()
        response = axe.run(tab).response["violations"]
        found[path] = [f"{v['id']}: {[n['target'] for n in v['nodes']][:5]}" for v in response]
    assert {path: v for path, v in found.items() if v} == {}
