"""The scheduler on the job engine (huey): every minute, and once when a worker starts (so a
job missed while no worker ran runs then, once), run the cron jobs that are due.

The minute's tick comes at the worker's own second (huey counts minutes from its start), so
each tick also wakes the worker at the minute's next due time: a job runs at its time, not
up to a minute late. Wakes from several workers, or a wake and a tick, are harmless: each due
time is claimed once (scheduler/runner.py)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.utils import timezone
from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from scheduler.runner import next_due, run_due

logger = logging.getLogger(__name__)

# How far a tick looks ahead for a due time to wake at: up to the next tick.
WAKE_WITHIN = timedelta(seconds=60)


@db_periodic_task(crontab(minute="*"))
def cron_tick() -> int:
    """Run the due cron jobs; each due time runs once however many workers tick."""
    ran = run_due()
    wake_at_next_due()
    return ran


@db_task()
def cron_wake() -> int:
    """Run the jobs due at the time this was scheduled for (a tick schedules it)."""
    return run_due()


def wake_at_next_due() -> None:
    """Schedule cron_wake at the soonest due time before the next tick."""
    soonest = next_due(now=timezone.now(), within=WAKE_WITHIN)
    if soonest is not None:
        cron_wake.schedule(eta=soonest)


@on_startup()
def cron_tick_at_start() -> None:
    try:
        run_due()
        wake_at_next_due()
    except Exception:  # the periodic tick tries again within the minute
        logger.exception("Could not run the due cron jobs at start")
