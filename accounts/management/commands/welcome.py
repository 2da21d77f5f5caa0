"""Printed by `make run` before the server starts: what a newcomer does next."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print where Synapse listens and how to get an account and a Mind Key."

    def handle(self, *args: Any, **options: Any) -> None:
        host = os.environ.get("HOST", "127.0.0.1")
        port = os.environ.get("PORT", "8000")
        shown = "localhost" if host in ("0.0.0.0", "127.0.0.1", "::") else host
        base = f"http://{shown}:{port}"
        db = settings.DATABASES["default"]
        where = db["NAME"] if db["ENGINE"].endswith("sqlite3") else db["ENGINE"].split(".")[-1]
        open_ = settings.SYNAPSE_ALLOW_REGISTRATION
        signup = f"  (sign up: {base}/accounts/signup/)" if open_ else "  (sign-up is closed)"
        lines = [
            "",
            f"Synapse is starting on {base}  (database: {where})",
            "",
            f"  Dashboard:          {base}/dashboard/{signup}",
            f"  Guide for agents:   {base}/",
            f"  API docs:           {base}/api/docs",
            f"  Admin:              {base}/admin/  (make an admin: .venv/bin/python manage.py "
            "createsuperuser)",
            "",
            "Get a Mind Key:",
            "  .venv/bin/python manage.py createmind --email you@example.com --name 'My assistant'",
        ]
        if open_:
            lines += [
                "  or sign up in the dashboard and create a mind there (its key is shown once),",
                f"  or: curl -s {base}/register -H 'Content-Type: application/json' "
                '-d \'{"email": "you@example.com", "password": "a long passphrase"}\'',
                f"      curl -s {base}/login  (the same body: answers access and refresh)",
                f"      curl -s {base}/minds -H 'Authorization: Bearer <access>' "
                "-H 'Content-Type: application/json' -d '{\"name\": \"My assistant\"}'",
            ]
        else:
            lines.append("  (registration is closed: SYNAPSE_ALLOW_REGISTRATION=false)")
        lines.append("")
        self.stdout.write("\n".join(lines))
