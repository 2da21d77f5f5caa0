"""The scheduler on the job engine (huey): every minute, and once when a worker starts (so a
job missed while no worker ran runs then, once), run the cron jobs that are due."""

from __future__ import annotations

import logging

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, on_startup

from scheduler.runner import run_due

logger = logging.getLogger(__name__)


@db_periodic_task(crontab(minute="*"))
def cron_tick() -> int:
    """Run the due cron jobs; each due time runs once however many workers tick."""
    return run_due()


@on_startup()
def cron_tick_at_start() -> None:
    try:
        run_due()
    except Exception:  # the periodic tick tries again within the minute
        logger.exception("Could not run the due cron jobs at start")
