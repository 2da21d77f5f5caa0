from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        # Registers the OpenAPI descriptions of our authentication classes.
        from synapse_site import schema  # noqa: F401
