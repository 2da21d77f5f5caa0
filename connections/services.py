"""Connecting an app to a mind, and ending its access."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken, clear_expired

from connections.models import Connection
from minds.access import Level, mind_reach

# last_used_at is written at most this often per connection, not on every MCP call.
USE_RESOLUTION = timedelta(minutes=1)


def connect(*, application: Application, person: Any, mind_id: str, resource: str) -> Connection:
    """The person's consent: the app acts as the agent of `mind_id`, which they must be able
    to write. Moving an existing connection to another mind ends the tokens it held."""
    mind, _ = mind_reach(user=person, mind_id=mind_id, need=Level.WRITE)
    with transaction.atomic():
        connection = (
            Connection.objects.select_for_update()
            .filter(application=application, person=person)
            .first()
        )
        if connection is None:
            return Connection.objects.create(
                application=application, person=person, mind=mind, resource=resource
            )
        if connection.mind_id != mind.pk or connection.resource != resource:
            end_tokens(application=application, person=person)
        connection.mind = mind
        connection.resource = resource
        connection.connected_at = timezone.now()
        connection.save(update_fields=["mind", "resource", "connected_at"])
        return connection


def disconnect(*, connection: Connection) -> None:
    """Revoke: the app's tokens for this person stop working on the next request."""
    with transaction.atomic():
        end_tokens(application=connection.application, person=connection.person)
        connection.delete()


def end_tokens(*, application: Application, person: Any) -> None:
    RefreshToken.objects.filter(application=application, user=person).delete()
    AccessToken.objects.filter(application=application, user=person).delete()
    Grant.objects.filter(application=application, user=person).delete()


def note_use(*, connection: Connection) -> None:
    """Record that the app used its token now (at most one write a minute)."""
    now = timezone.now()
    if connection.last_used_at and now - connection.last_used_at < USE_RESOLUTION:
        return
    Connection.objects.filter(pk=connection.pk).update(last_used_at=now)
    connection.last_used_at = now


def clear_expired_tokens() -> int:
    """The library's sweep of expired tokens and codes; how many access tokens it removed."""
    before = AccessToken.objects.count()
    clear_expired()  # type: ignore[no-untyped-call]
    return before - AccessToken.objects.count()
