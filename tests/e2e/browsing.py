"""What several browser tests do: sign a person in, and read axe-core's findings."""

from __future__ import annotations

from django.conf import settings
from django.test import Client


def sign_in(context, live_server, user) -> None:
    """The browser context carries a session of `user` (no log-in form on the way)."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])


def violations(axe, tab, context=None) -> list[str]:
    found = axe.run(tab, context=context).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}"
        for v in found
    ]
