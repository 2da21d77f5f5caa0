"""The dashboard's and the admin's sessions, whose database row holds only a hash of the key.

A session key (the `sessionid` cookie) is a bearer secret: whoever sends it is signed in.
Django's database store keeps it as the row's primary key, so a copy of the database (a
backup, a dump) would open the dashboard of everyone signed in, and the admin for staff.
Here `django_session.session_key` holds SHA-256 of the key instead (hex, cut to the column's
40 characters: 160 bits), and the cookie is the only copy of the key itself. Sessions are
otherwise Django's (settings.SESSION_ENGINE): data, expiry, `cycle_key` at login, `flush` at
logout, `clearsessions`.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.contrib.sessions.backends import db
from django.contrib.sessions.base_session import AbstractBaseSession
from django.core.exceptions import SuspiciousOperation
from django.utils import timezone

# django_session.session_key is a varchar(40); Django's own keys are 32 characters.
KEY_HASH_LENGTH = 40


def session_key_hash(session_key: str) -> str:
    """What the database keeps of a session key."""
    return hashlib.sha256(session_key.encode()).hexdigest()[:KEY_HASH_LENGTH]


class SessionStore(db.SessionStore):
    """Django's database store, looking rows up by the hash of the key the cookie holds."""

    def _get_session_from_db(self) -> AbstractBaseSession | None:
        if self.session_key is None:
            return None
        try:
            return self.model.objects.get(
                session_key=session_key_hash(self.session_key), expire_date__gt=timezone.now()
            )
        except (self.model.DoesNotExist, SuspiciousOperation) as exc:
            self._not_found(exc)
            return None

    async def _aget_session_from_db(self) -> AbstractBaseSession | None:
        if self.session_key is None:
            return None
        try:
            return await self.model.objects.aget(
                session_key=session_key_hash(self.session_key), expire_date__gt=timezone.now()
            )
        except (self.model.DoesNotExist, SuspiciousOperation) as exc:
            self._not_found(exc)
            return None

    def _not_found(self, exc: Exception) -> None:
        # As Django's store: a suspicious session is logged; either way the key is dropped.
        if isinstance(exc, SuspiciousOperation):
            logging.getLogger(f"django.security.{exc.__class__.__name__}").warning(str(exc))
        self._session_key = None

    def exists(self, session_key: str) -> bool:
        return self.model.objects.filter(session_key=session_key_hash(session_key)).exists()

    async def aexists(self, session_key: str) -> bool:
        return await self.model.objects.filter(session_key=session_key_hash(session_key)).aexists()

    def create_model_instance(self, data: dict[str, Any]) -> AbstractBaseSession:
        instance = super().create_model_instance(data)
        instance.session_key = session_key_hash(instance.session_key)
        return instance

    async def acreate_model_instance(self, data: dict[str, Any]) -> AbstractBaseSession:
        instance = await super().acreate_model_instance(data)
        instance.session_key = session_key_hash(instance.session_key)
        return instance

    def delete(self, session_key: str | None = None) -> None:
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        self.model.objects.filter(session_key=session_key_hash(session_key)).delete()

    async def adelete(self, session_key: str | None = None) -> None:
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        await self.model.objects.filter(session_key=session_key_hash(session_key)).adelete()
