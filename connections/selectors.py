"""Reading connections: the dashboard's panel, and the MCP endpoint's token check."""

from __future__ import annotations

from django.db.models import QuerySet
from oauth2_provider.models import AccessToken

from connections.models import Connection
from minds.access import Level, level_on, minds_at
from minds.models import Mind


def minds_to_connect(*, person: object) -> QuerySet[Mind]:
    """The minds a person may connect an app to: those they may write, by name."""
    return minds_at(user=person, need=Level.WRITE).order_by("name", "pk")


def connections_of(*, mind: Mind) -> QuerySet[Connection]:
    return (
        Connection.objects.filter(mind=mind)
        .select_related("application", "person")
        .order_by("-connected_at")
    )


def connection_for_token(*, token: AccessToken, resource: str) -> Connection | None:
    """The connection a valid access token acts through, or None when it must be refused: no
    connection (revoked), another resource, a deactivated person, or a person who may no
    longer write the mind (a share taken back). Read on every request, never cached."""
    person = token.user
    if person is None or not person.is_active or token.application_id is None:
        return None
    connection = (
        Connection.objects.select_related("mind", "mind__owner")
        .filter(application_id=token.application_id, person=person)
        .first()
    )
    if connection is None or connection.resource != resource:
        return None
    if not connection.mind.owner.is_active:
        return None
    level = level_on(user=person, mind=connection.mind)
    if level is None or level < Level.WRITE:
        return None
    return connection
