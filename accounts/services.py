"""Writes for human accounts."""

from __future__ import annotations

from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from rest_framework.exceptions import ValidationError

from accounts.models import User


def user_register(*, email: str, password: str, name: str = "") -> User | None:
    """Create an account, validating the password with Django's validators.

    Returns the new user, or None when the address already has an account (left unchanged).
    The faces answer both the same way, so sign-up never tells who has an account; the
    password is checked and hashed either way, so the two cases also take about as long.
    Raises a field-level ValidationError for a weak password.
    """
    email = User.objects.normalize_email(email).lower()
    try:
        validate_password(password, user=User(email=email, name=name))
    except DjangoValidationError as exc:
        raise ValidationError({"password": list(exc.messages)}) from None
    if User.objects.filter(email__iexact=email).exists():
        make_password(password)
        return None
    try:
        with transaction.atomic():
            return User.objects.create_user(email=email, password=password, name=name)
    except IntegrityError:
        return None  # two sign-ups with one address raced; the other one created it
