from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Agents' API"

    def ready(self) -> None:
        # Registers the OpenAPI descriptions of our authentication classes.
        from api import schema  # noqa: F401
        from api.idempotency import idempotency_forget_memory
        from api.scheduler import register_local_runners
        from memories.services import on_purge

        # A stored answer holding a purged memory goes with it.
        on_purge(idempotency_forget_memory)
        # The paths on this server a cron job may name run in-process, as the mind's agent.
        register_local_runners()
