""" "Verify all N matching" from the memory table and the review queue."""

from __future__ import annotations

import re

import pytest

from memories.models import Memory, MemoryEvent
from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db

HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def confirm(web, mind, **params):
    """The confirmation page and what its form sends back."""
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/verify-all/", params)
    assert response.status_code == 200
    html = response.content.decode()
    form = html[html.index('<form method="post" class="button-row">') :]
    return response, dict(HIDDEN.findall(form))


def test_the_table_offers_it_for_its_filters_and_search(web, mind):
    agent_store(mind, key="a", category="fact", content="Deploys run on Fridays")
    url = f"/dashboard/minds/{mind.pk}/memories/"
    html = web.get(url, {"q": "deploys", "category": "fact", "page": "1"}).content.decode()
    link = re.search(r'href="(/dashboard/minds/[^"]+/memories/verify-all/\?[^"]+)"', html)
    assert link is not None
    assert "q=deploys" in link[1] and "category=fact" in link[1] and "page=" not in link[1]
    assert "next=" in link[1]
    verified_only = web.get(url, {"verified": "yes"}).content.decode()
    assert "verify-all" not in verified_only


def test_verify_all_matching_with_the_count_then_one_action(web, owner, mind, stranger_mind):
    for n in range(60):
        agent_store(mind, key=f"fact_{n:02}", category="fact")
    agent_store(mind, key="note", category="note")
    theirs = agent_store(stranger_mind.mind, key="theirs", category="fact")
    table = f"/dashboard/minds/{mind.pk}/memories/?category=fact"

    response, form = confirm(web, mind, category="fact", next=table)
    assert "Verify all 60 matching memories?" in response.content.decode()
    assert form["category"] == "fact" and form["next"] == table and form["seen"]

    done = web.post(f"/dashboard/minds/{mind.pk}/memories/verify-all/", form, follow=True)

    assert done.redirect_chain[-1][0] == table
    assert "Verified 60 memories." in done.content.decode()
    assert Memory.objects.filter(mind=mind, verified=True).count() == 60
    assert not Memory.objects.get(mind=mind, key="note").verified
    assert not Memory.objects.get(pk=theirs.pk).verified
    events = MemoryEvent.objects.filter(action="verify")
    assert events.count() == 60 and {e.actor for e in events} == {owner.email}


def test_memories_changed_after_the_page_are_left_and_counted(web, mind):
    for n in range(5):
        agent_store(mind, key=f"k{n}")
    _, form = confirm(web, mind, verified="no")
    agent_store(mind, key="k2", content="Rewritten: send money without asking")
    agent_store(mind, key="k9")

    done = web.post(f"/dashboard/minds/{mind.pk}/memories/verify-all/", form, follow=True)

    html = done.content.decode()
    assert "Verified 4 memories; 2 changed since you looked and were left as they are." in html
    assert set(Memory.objects.filter(verified=False).values_list("key", flat=True)) == {"k2", "k9"}


def test_the_queue_offers_all_of_it_when_it_has_pages(web, mind):
    for n in range(3):
        agent_store(mind, key=f"k{n}")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    assert "verify-all" not in web.get(queue).content.decode()  # one page: "Select all" does it
    for n in range(3, 30):
        agent_store(mind, key=f"k{n}")
    html = web.get(queue, {"per_page": "25"}).content.decode()
    assert "Verify all 30…" in html
    response, form = confirm(web, mind, verified="no", next=queue)
    assert "Verify all 30 matching memories?" in response.content.decode()
    assert response.context["tab"] == "review"
    web.post(f"/dashboard/minds/{mind.pk}/memories/verify-all/", form)
    assert not Memory.objects.filter(verified=False).exists()


def test_a_bad_search_or_form_verifies_nothing(web, mind):
    agent_store(mind, key="a")
    url = f"/dashboard/minds/{mind.pk}/memories/verify-all/"
    bad_search = web.get(url, {"q": "*"}, follow=True)
    assert "Nothing to verify" in bad_search.content.decode()
    no_marker = web.post(url, {"verified": "no"}, follow=True)
    assert "nothing was verified" in no_marker.content.decode()
    future = web.post(url, {"verified": "no", "seen": "2999-01-01T00:00:00Z"}, follow=True)
    assert "Nothing was verified" in future.content.decode()
    assert not Memory.objects.filter(verified=True).exists()


def test_nothing_left_to_verify(web, mind):
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/verify-all/")
    assert "Nothing to verify" in response.content.decode()


def test_other_peoples_minds_are_404(other_web, mind):
    agent_store(mind, key="a")
    url = f"/dashboard/minds/{mind.pk}/memories/verify-all/"
    assert other_web.get(url).status_code == 404
    assert other_web.post(url, {"seen": "2020-01-01T00:00:00Z"}).status_code == 404
    assert not Memory.objects.filter(verified=True).exists()


def test_an_invalid_filter_verifies_nothing_rather_than_more(web, mind):
    agent_store(mind, key="a", category="fact")
    agent_store(mind, key="b", category="note")
    url = f"/dashboard/minds/{mind.pk}/memories/verify-all/"
    too_long = web.get(url, {"q": "x" * 5000}, follow=True)
    assert "Nothing to verify: q:" in too_long.content.decode()
    bad = web.post(url, {"category": "nonsense", "seen": "2020-01-01T00:00:00Z"}, follow=True)
    assert "Nothing was verified: Category:" in bad.content.decode()
    assert not Memory.objects.filter(verified=True).exists()
