from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Agents' API"

    def ready(self) -> None:
        # Registers the OpenAPI descriptions of our authentication classes.
        from api import schema  # noqa: F401
