"""GET /memory/expiring?within=: memories whose expiry falls in (now, now + within]."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, assert_isolated, ids
from tests.factories import remember


@pytest.fixture
def expiries(mind):
    now = timezone.now()
    return {
        "expired": remember(mind, "expired", expires_at=now - timedelta(hours=1)),
        "hour": remember(mind, "hour", expires_at=now + timedelta(minutes=50)),
        "day": remember(mind, "day", expires_at=now + timedelta(hours=20)),
        "week": remember(mind, "week", expires_at=now + timedelta(days=6)),
        "month": remember(mind, "month", expires_at=now + timedelta(days=25)),
        "never": remember(mind, "never"),
    }


def test_default_is_seven_days_soonest_first(agent, expiries):
    body = agent.get("/memory/expiring").json()
    assert ids(body) == [expiries[k].pk for k in ("hour", "day", "week")]
    assert body["total"] == 3


@pytest.mark.parametrize(
    ("within", "keys"),
    [
        ("3600", ["hour"]),
        ("60m", ["hour"]),
        ("24h", ["hour", "day"]),
        ("1d", ["hour", "day"]),
        ("7d", ["hour", "day", "week"]),
        ("2w", ["hour", "day", "week"]),
        ("4w", ["hour", "day", "week", "month"]),
        (str(86400 * 7), ["hour", "day", "week"]),
    ],
)
def test_within_takes_seconds_or_units(agent, expiries, within, keys):
    assert ids(agent.get(f"/memory/expiring?within={within}").json()) == [
        expiries[k].pk for k in keys
    ]


def test_include_expired_lists_the_expired_first(agent, expiries):
    body = agent.get("/memory/expiring?within=24h&include_expired=true").json()
    assert ids(body) == [expiries[k].pk for k in ("expired", "hour", "day")]


@pytest.mark.parametrize("within", ["soon", "7x", "-5", "0", "1.5h", "7 days", "999999w"])
def test_bad_within_names_the_accepted_forms(agent, within):
    body = assert_invalid(agent.get(f"/memory/expiring?within={within}"), "within")
    assert "30m, 24h, 7d, 2w" in body["fields"]["within"][0]


def test_expiring_query_count(agent, mind):
    now = timezone.now()
    for i in range(20):
        remember(mind, f"k{i}", expires_at=now + timedelta(hours=i + 1))
    with CaptureQueriesContext(connection) as ctx:
        assert agent.get("/memory/expiring").json()["total"] == 20
    assert len(ctx.captured_queries) <= 3


def test_expiring_isolation(mind, expiries, stranger_agent, other_human):
    assert stranger_agent.get("/memory/expiring?within=4w").json()["total"] == 0
    assert_isolated(
        "/memory/expiring", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )
