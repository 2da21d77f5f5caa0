"""The atomic per-credential counter: several requests counted at once (an MCP batch)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from minds.access import MindAgent
from synapse_site.throttling import CredentialRateThrottle

pytestmark = pytest.mark.django_db


@pytest.fixture
def ten_a_minute(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": "10/min", "login": None},
    }


def caller(mind_with_key) -> SimpleNamespace:
    return SimpleNamespace(user=MindAgent(mind=mind_with_key.mind), META={})


def test_admit_counts_every_request_and_says_how_many_fit(ten_a_minute, owner_mind):
    me = caller(owner_mind)
    assert CredentialRateThrottle().admit(me, None, 4) == 4
    assert CredentialRateThrottle().admit(me, None, 4) == 4
    assert CredentialRateThrottle().admit(me, None, 4) == 2  # 2 of 10 were left
    assert CredentialRateThrottle().admit(me, None, 4) == 0
    assert not CredentialRateThrottle().allow_request(me, None)
    throttle = CredentialRateThrottle()
    throttle.admit(me, None, 1)
    assert throttle.wait() is not None and 1 <= throttle.wait() <= 60


def test_one_minds_count_is_not_anothers(ten_a_minute, owner_mind, stranger_mind):
    assert CredentialRateThrottle().admit(caller(owner_mind), None, 10) == 10
    assert CredentialRateThrottle().admit(caller(stranger_mind), None, 10) == 10
    assert CredentialRateThrottle().admit(caller(owner_mind), None, 1) == 0


def test_without_a_rate_everything_fits(settings, owner_mind):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": None},
    }
    assert CredentialRateThrottle().admit(caller(owner_mind), None, 50) == 50
