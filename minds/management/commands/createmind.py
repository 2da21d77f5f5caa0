"""`manage.py createmind --email you@example.com --name "My assistant"`: prints a Mind Key once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from minds.services import mind_create


class Command(BaseCommand):
    help = "Create a mind for a user (creating the user if needed) and print its Mind Key once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True, help="The owner's email address.")
        parser.add_argument("--name", required=True, help="A name for the mind.")
        parser.add_argument("--description", default="", help="What this mind is for.")

    def handle(self, *args: Any, email: str, name: str, description: str, **options: Any) -> None:
        User = get_user_model()
        name = name.strip()
        if not name:
            raise CommandError("--name must not be empty.")
        user = User.objects.filter(email__iexact=email.strip()).first()
        if user is None:
            try:
                user = User.objects.create_user(email=email.strip(), password=None)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"Created user {user.email} without a password; set one with:\n"
                f"  python manage.py changepassword {user.email}"
            )
        # An operator's command: the cap on minds per account is for the account's own creates.
        mind, raw_key = mind_create(owner=user, name=name, description=description, over_limit=True)
        self.stdout.write(f"Mind {mind.name!r} ({mind.id}) for {user.email}.")
        self.stdout.write("Mind Key (shown only now, store it somewhere safe):")
        self.stdout.write(raw_key)
