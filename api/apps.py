from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Agents' API"

    def ready(self) -> None:
        # Registers the OpenAPI descriptions of our authentication classes.
        from api import schema  # noqa: F401
        from api.idempotency import idempotency_forget_memory
        from memories.services import on_purge

        # A stored answer holding a purged memory goes with it.
        on_purge(idempotency_forget_memory)
