"""Times in the person's zone: every time is a UTC <time> the browser rewrites, the expiry is
typed in local time with its offset, and the expiring memories are one link away."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from dashboard.forms import MemoryEditForm
from memories.selectors import EXPIRING_SOON
from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db

TIME = re.compile(r'<time datetime="([^"]+)" title="([^"]+ UTC)">([^<]+)</time>')


def edit_url(memory) -> str:
    return f"/dashboard/minds/{memory.mind_id}/memories/{memory.pk}/edit/"


def edit(web, memory, **changes):
    form = {**web.get(edit_url(memory)).context["form"].initial, **changes}
    return web.post(edit_url(memory), form)


def test_the_memory_page_shows_each_time_as_utc_with_utc_in_its_title(web, mind):
    expiry = datetime(2031, 7, 1, 12, 30, 9, tzinfo=UTC)
    memory = agent_store(mind, expires_at=expiry)
    html = web.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/").content.decode()
    times = TIME.findall(html)
    # Expires, created, updated, and the history's version and its expiry value.
    assert len(times) >= 4
    assert ("2031-07-01T12:30:09+00:00", "2031-07-01 12:30 UTC", "2031-07-01 12:30 UTC") in times
    for iso, title, text in times:
        assert datetime.fromisoformat(iso).utcoffset() == timedelta(0)
        assert text == title  # what reads without the script: UTC, labelled


@pytest.mark.parametrize(
    ("typed", "offset", "stored"),
    [
        # Berlin in summer (UTC+2) and in winter (UTC+1), New York (UTC-5), India (UTC+5:30).
        ("2031-07-01T14:30", "120", datetime(2031, 7, 1, 12, 30, tzinfo=UTC)),
        ("2031-01-10T09:00", "60", datetime(2031, 1, 10, 8, 0, tzinfo=UTC)),
        ("2031-01-10T21:00", "-300", datetime(2031, 1, 11, 2, 0, tzinfo=UTC)),
        ("2031-01-10T05:15", "330", datetime(2031, 1, 9, 23, 45, tzinfo=UTC)),
        # Without the script nothing is sent: the time is UTC, as the label says then.
        ("2031-07-01T14:30", "", datetime(2031, 7, 1, 14, 30, tzinfo=UTC)),
    ],
)
def test_an_expiry_typed_in_local_time_is_stored_in_utc(web, mind, typed, offset, stored):
    memory = agent_store(mind)
    response = edit(web, memory, expires_at=typed, expires_at_offset=offset)
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.expires_at == stored


def test_the_edit_form_shows_the_stored_expiry_in_utc_with_offset_zero(web, mind):
    memory = agent_store(mind, expires_at=datetime(2031, 7, 1, 12, 30, tzinfo=UTC))
    page = web.get(edit_url(memory))
    assert page.context["form"].initial["expires_at"] == "2031-07-01T12:30"
    html = page.content.decode()
    assert 'name="expires_at_offset" value="0"' in html
    assert 'data-offset-field="expires_at_offset"' in html
    assert "Expires at (UTC)" in html


@pytest.mark.parametrize(
    ("typed", "offset", "says"),
    [
        ("next tuesday", "120", "ISO"),
        ("2031-02-30T10:00", "60", "ISO"),
        ("2031-07-01T14:30", "Europe/Berlin", "usable time zone"),
        ("2031-07-01T14:30", "99999", "usable time zone"),
        ("2031-07-01T14:30", "1.5", "usable time zone"),
        ("0001-01-01T00:10", "60", "between the years"),  # before year 1 in UTC
    ],
)
def test_an_unreadable_expiry_or_offset_is_a_form_error(web, mind, typed, offset, says):
    memory = agent_store(mind)
    response = edit(web, memory, expires_at=typed, expires_at_offset=offset)
    assert response.status_code == 200
    errors = " ".join(response.context["form"].errors["expires_at"])
    assert says in errors
    memory.refresh_from_db()
    assert memory.expires_at is None


def test_the_form_reads_an_offset_only_for_a_time_without_a_zone():
    form = MemoryEditForm(
        {
            "category": "fact",
            "key": "k",
            "content": "c",
            "tags": "",
            "priority": "normal",
            "confidence": "0.5",
            "expires_at": "2031-07-01T14:30+00:00",
            "expires_at_offset": "120",
        }
    )
    assert form.is_valid()
    assert form.body()["expires_at"] == datetime(2031, 7, 1, 14, 30, tzinfo=UTC)


def test_the_expiring_tile_links_to_every_expiring_memory(web, mind):
    now = timezone.now()
    for i in range(12):  # more than the overview's panel lists
        agent_store(mind, key=f"soon_{i:02d}", expires_at=now + timedelta(days=1, hours=i))
    agent_store(mind, key="later", expires_at=now + timedelta(days=60))
    agent_store(mind, key="forever")
    agent_store(mind, key="gone", expires_at=now - timedelta(days=1))
    html = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    link = f"/dashboard/minds/{mind.pk}/memories/?expiring=soon&amp;sort=expires"
    tile = re.search(r'<li><a href="([^"]+)"><span class="stat-number">12</span> expiring', html)
    assert tile and tile[1] == link
    assert html.count(f'href="{link}"') == 2  # the tile and the panel's "every memory" link

    listed = web.get(link.replace("&amp;", "&"))
    assert [row["memory"].key for row in listed.context["rows"]] == [
        f"soon_{i:02d}" for i in range(12)
    ]
    days = EXPIRING_SOON.days
    assert f"Expiry: Expiring within {days} days" in listed.content.decode()


def test_the_expires_column_shows_only_under_expires_soonest(web, mind):
    expiry = datetime(2031, 7, 1, 12, 30, tzinfo=UTC)
    agent_store(mind, key="dated", expires_at=expiry)
    agent_store(mind, key="undated")
    url = f"/dashboard/minds/{mind.pk}/memories/"
    sorted_by_expiry = web.get(url, {"sort": "expires"}).content.decode()
    assert '<th scope="col">Expires</th>' in sorted_by_expiry
    assert '<td data-label="Expires"><time datetime="2031-07-01T12:30:00+00:00"' in (
        sorted_by_expiry
    )
    assert '<td data-label="Expires">never</td>' in sorted_by_expiry
    for other in ({}, {"sort": "key"}, {"expiring": "soon"}):
        assert '<th scope="col">Expires</th>' not in web.get(url, other).content.decode()


def test_another_persons_expiring_list_is_not_found(other_web, mind):
    response = other_web.get(
        f"/dashboard/minds/{mind.pk}/memories/", {"expiring": "soon", "sort": "expires"}
    )
    assert response.status_code == 404


def test_an_unknown_expiry_filter_narrows_nothing_and_says_so(web, mind):
    agent_store(mind, key="forever")
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/", {"expiring": "tomorrow"})
    assert response.status_code == 200
    assert [row["memory"].key for row in response.context["rows"]] == ["forever"]
    assert response.context["form"].errors["expiring"]
