"""The worker's housekeeping of OAuth tokens (on the job engine, huey)."""

from __future__ import annotations

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from connections.services import clear_expired_tokens


@db_periodic_task(crontab(hour="4", minute="17"))
def clear_expired_tokens_daily() -> int:
    """Expired access tokens, expired codes and refresh tokens past their life leave the
    database once a day (they already refuse every call)."""
    return clear_expired_tokens()
