from __future__ import annotations

from django.apps import AppConfig


def _wake_worker() -> None:
    # Imported on first use: huey opens its queue when its module loads.
    from webhooks.tasks import wake

    wake()


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from memories.services import on_change, on_purge
        from webhooks import events

        # Every audited change of a memory is an event, recorded in the change's transaction.
        on_change(events.memory_changes)
        # A purged memory's values leave the events that carried them.
        on_purge(events.memory_forget)
        events.on_recorded(_wake_worker)
