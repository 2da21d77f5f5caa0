from __future__ import annotations

from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    name = "connections"
    verbose_name = "Connected apps"
