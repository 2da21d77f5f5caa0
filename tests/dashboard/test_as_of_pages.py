"""A memory's page and a mind's overview as they were at a picked moment (`?at=`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
from django.urls import reverse

from core.errors import Conflict
from memories import services
from minds.models import Mind
from tests.dashboard.conftest import AGENT
from tests.factories import PERSON, share_make, upsert, user_make

NOW = datetime(2026, 12, 4, 18, 30, tzinfo=UTC)
BORN = NOW - timedelta(days=3)  # the memory's first write
EDITED = NOW - timedelta(days=1)  # its edit
FOLDED = "This mind's history up to 2026-11-01T00:00:00Z was folded"


@pytest.fixture
def frozen(monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    return NOW


@pytest.fixture
def memory(mind, frozen):
    """A memory stored three days ago and edited yesterday, in a mind a month old."""
    Mind.objects.filter(pk=mind.pk).update(created_at=NOW - timedelta(days=30))
    mind.refresh_from_db()
    stored = upsert(mind, "city", "Lives in Lyon", priority="high", now=BORN).memory
    return services.memory_change(
        memory=stored,
        actor=AGENT,
        body={"content": "Lives in Paris", "tags": ["home"]},
        now=EDITED,
    ).memory


def _page(memory, **params):
    return reverse("dashboard:memory", args=[memory.mind_id, memory.pk]), params


def _at(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")


def _panel(response) -> str:
    """The as-of panel of a page, its text unescaped."""
    html = unescape(response.content.decode())
    return html[html.index('id="as-of"') : html.index("</section>", html.index('id="as-of"'))]


def test_before_the_edit_shows_the_old_content(web, memory):
    response = web.get(*_page(memory, at=_at(EDITED - timedelta(hours=1))))
    assert response.status_code == 200
    panel = _panel(response)
    assert "As it was on <time" in panel
    assert "Lives in Lyon" in panel
    assert "Lives in Paris" not in panel
    assert "priority-high" in panel


def test_after_the_edit_shows_the_new_content(web, memory):
    panel = _panel(web.get(*_page(memory, at=_at(EDITED + timedelta(minutes=5)))))
    assert "Lives in Paris" in panel
    assert '<span class="tag">home</span>' in panel


def test_before_the_memory_existed(web, memory):
    response = web.get(*_page(memory, at=_at(BORN - timedelta(hours=1))))
    assert response.status_code == 200
    panel = _panel(response)
    assert "This memory did not exist then" in panel
    assert "Lives in" not in panel


def test_the_offset_sent_with_the_time_is_applied(web, memory):
    """10:00 at two hours east of UTC is 08:00 UTC, an hour before the edit (09:00 local
    would be after it)."""
    local = (EDITED + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    panel = _panel(web.get(*_page(memory, at=local, at_offset="120")))
    assert "Lives in Lyon" in panel


def test_without_a_pick_the_page_shows_only_the_picker(web, memory):
    response = web.get(*_page(memory))
    assert response.status_code == 200
    panel = _panel(response)
    assert 'type="datetime-local" name="at"' in panel
    assert "As it was on" not in panel


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"at": "yesterday"}, "Enter a date and time"),
        ({"at": ""}, "Pick a date and time"),
        ({"at": "2026-12-05T09:00"}, "in the future"),
        ({"at": "2026-12-01T09:00", "at_offset": "east"}, "without a usable time zone"),
        ({"at": "2026-12-01T09:00", "at_offset": "9999"}, "without a usable time zone"),
        ({"at": "0001-01-01T00:00", "at_offset": "60"}, "Enter a date and time"),
    ],
)
def test_a_bad_moment_is_a_form_error(web, memory, params, error):
    response = web.get(*_page(memory, **params))
    assert response.status_code == 400
    panel = _panel(response)
    assert error in panel
    assert 'aria-invalid="true"' in panel
    assert "As it was on" not in panel


def test_folded_history_shows_the_core_message(web, memory, monkeypatch):
    def refuse(**kwargs):
        raise Conflict(FOLDED)

    monkeypatch.setattr("dashboard.views.memories.memory_as_of", refuse)
    response = web.get(*_page(memory, at=_at(BORN)))
    assert response.status_code == 409
    assert FOLDED in _panel(response)


def test_a_reader_can_view_as_of_a_stranger_gets_404(memory, client):
    reader = user_make("reader@example.com")
    share_make(memory.mind, reader, "read")
    client.force_login(reader)
    response = client.get(*_page(memory, at=_at(EDITED - timedelta(hours=1))))
    assert response.status_code == 200
    assert "Lives in Lyon" in _panel(response)
    client.force_login(user_make("nobody@example.com"))
    assert client.get(*_page(memory, at=_at(EDITED))).status_code == 404


# --- The overview -------------------------------------------------------------------------


def _overview(mind, **params):
    return reverse("dashboard:mind", args=[mind.pk]), params


def _cards(panel: str) -> dict[str, str]:
    found = re.findall(r'<span class="stat-number">([^<]+)</span>\s*([a-z]+)', panel)
    return {name: number for number, name in found}


@pytest.fixture
def grown(memory):
    """Besides the memory: a preference stored two days ago and verified by a person
    yesterday, and a note stored an hour ago."""
    mind = memory.mind
    liked = upsert(
        mind, "tea", "Prefers tea", category="preference", now=BORN + timedelta(days=1)
    ).memory
    services.memory_verify(memory=liked, actor=PERSON, now=EDITED)
    upsert(mind, "todo", "Call back", category="note", now=NOW - timedelta(hours=1))
    return mind


def test_overview_counts_as_of_a_moment(web, grown):
    response = web.get(*_overview(grown, at=_at(EDITED - timedelta(hours=1))))
    assert response.status_code == 200
    panel = _panel(response)
    assert "As it was on <time" in panel
    assert "not today" in panel
    assert _cards(panel) == {"memories": "2", "verified": "0", "unverified": "2"}
    assert "Memories by category, then" in panel
    assert "identity: 0, preference: 1, fact: 1, project: 0" in panel
    assert "Back to today" in panel


def test_overview_after_the_verify(web, grown):
    panel = _panel(web.get(*_overview(grown, at=_at(EDITED + timedelta(hours=1)))))
    assert _cards(panel) == {"memories": "2", "verified": "1", "unverified": "1"}


def test_overview_before_any_memory(web, grown):
    panel = _panel(web.get(*_overview(grown, at=_at(BORN - timedelta(days=1)))))
    assert _cards(panel) == {"memories": "0", "verified": "0", "unverified": "0"}
    assert "No memories yet." in panel


def test_overview_keeps_the_period_while_picking(web, grown):
    html = web.get(*_overview(grown, period="week", at=_at(EDITED))).content.decode()
    assert '<input type="hidden" name="period" value="week">' in html
    assert 'aria-current="true">Week</a>' in html


@pytest.mark.parametrize("at", ["not a date", "2026-12-24T00:00", "2026-13-01T00:00"])
def test_overview_bad_moment_is_a_400(web, grown, at):
    response = web.get(*_overview(grown, at=at))
    assert response.status_code == 400
    assert 'class="field-error"' in _panel(response)
    # Today's page is still there.
    assert "Memories by category" in response.content.decode()


def test_overview_folded_history_shows_the_core_message(web, grown, monkeypatch):
    def refuse(**kwargs):
        raise Conflict(FOLDED)

    monkeypatch.setattr("dashboard.views.minds.mind_as_of", refuse)
    response = web.get(*_overview(grown, at=_at(BORN)))
    assert response.status_code == 409
    assert FOLDED in _panel(response)


def test_overview_as_of_reader_and_stranger(grown, client):
    reader = user_make("reader@example.com")
    share_make(grown, reader, "read")
    client.force_login(reader)
    assert client.get(*_overview(grown, at=_at(EDITED))).status_code == 200
    client.force_login(user_make("nobody@example.com"))
    assert client.get(*_overview(grown, at=_at(EDITED))).status_code == 404


def test_the_picker_keeps_a_safe_next_only(web, memory):
    url, _ = _page(memory)
    html = web.get(url, {"next": "/dashboard/minds/", "at": _at(EDITED)}).content.decode()
    assert '<input type="hidden" name="next" value="/dashboard/minds/">' in html
    assert 'href="?next=/dashboard/minds/#as-of">Back to today</a>' in html
    unsafe = web.get(url, {"next": "https://evil.example/", "at": _at(EDITED)}).content.decode()
    assert "evil.example" not in unsafe
