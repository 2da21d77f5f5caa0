"""Signed-in browsers (Django test clients with a session) for the dashboard tests."""

from __future__ import annotations

import re
from functools import partial

import pytest
from django.test import Client

from memories.actors import Actor
from tests.factories import remember

AGENT = Actor(kind="agent", name="mk_testagent")


@pytest.fixture
def web(owner, mind) -> Client:
    """The owner, signed in with a session (the way a browser uses the dashboard)."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def other_web(other_user) -> Client:
    client = Client()
    client.force_login(other_user)
    return client


# A memory stored the way an agent does (unverified, source agent).
agent_store = partial(remember, actor=AGENT, content="The sky is blue")


HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def shown(web, url: str, **params) -> dict[str, str]:
    """The hidden inputs of the page at `url` by name: what its forms send back (the CSRF
    token, `next`, and the version of each memory the page shows)."""
    response = web.get(url, params)
    assert response.status_code == 200
    return dict(HIDDEN.findall(response.content.decode()))
