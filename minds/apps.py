from django.apps import AppConfig


class MindsConfig(AppConfig):
    name = "minds"
    verbose_name = "Minds"
