"""One person's consent: an OAuth app acts as the agent of one mind they may write."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from oauth2_provider.models import Application

from minds.models import Mind


class Connection(models.Model):
    """What a person chose on the consent page. The app's tokens (django-oauth-toolkit's,
    for this person) act on `mind` at `resource` only; deleting the row ends them."""

    application = models.ForeignKey(
        Application, on_delete=models.CASCADE, related_name="connections"
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="connections"
    )
    mind = models.ForeignKey(Mind, on_delete=models.CASCADE, related_name="connections")
    # The MCP endpoint the tokens were issued for (RFC 8707), e.g. https://host/mcp.
    resource = models.CharField(max_length=2000)
    connected_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["application", "person"], name="one_connection_per_app_and_person"
            )
        ]
        indexes = [models.Index(fields=["mind", "-connected_at"], name="connection_mind_recent")]

    def __str__(self) -> str:
        return f"{self.application.name or self.application.client_id} → {self.mind_id}"
