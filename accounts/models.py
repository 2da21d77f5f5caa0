"""Human accounts: one user per email address."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.contrib.auth.base_user import BaseUserManager
from django.contrib.auth.models import AbstractBaseUser, PermissionsMixin
from django.db import models
from django.utils import timezone


def email_normalized(email: str) -> str:
    """An address as accounts keep it (and look it up): the domain normalised, all lower case."""
    return BaseUserManager.normalize_email(email).lower()


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def _create_user(self, email: str, password: str | None, **extra: Any) -> User:
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=email_normalized(email), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self._create_user(email, password, **extra)

    def get_by_natural_key(self, username: str | None) -> User:
        return self.get(email__iexact=username or "")


class User(AbstractBaseUser, PermissionsMixin):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=150, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email

    def get_full_name(self) -> str:
        return self.name or self.email

    def get_short_name(self) -> str:
        return self.name or self.email


class RevokedToken(models.Model):
    """A refresh token ended by `POST /logout`, kept until it would have expired anyway.

    Only the token's id is stored, never the token: a copy of the database holds nothing that
    signs anyone in. Access tokens name the refresh token they were made from, so they stop
    working with it.
    """

    jti = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.jti


class SentForm(models.Model):
    """A form that must act once (it makes a secret a page shows once: a new mind, a new
    Mind Key, a webhook's secret), as its first send recorded it: a second send (a reload)
    finds it and acts no more. `target` names what the first send made or changed; nothing
    secret is kept. Rows go once their token is too old to be sent (accounts/once.py)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    token = models.CharField(max_length=64, unique=True)
    target = models.CharField(max_length=64, blank=True)
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user", "sent_at"])]

    def __str__(self) -> str:
        return f"{self.token} → {self.target or '…'}"
