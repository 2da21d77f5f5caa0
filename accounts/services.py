"""Writes for human accounts."""

from __future__ import annotations

from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from accounts.models import User, email_normalized
from core.errors import Invalid
from minds.services import share_claim


def password_problems(*, password: str, email: str, name: str = "") -> list[str]:
    """Every message Django's password validators have against `password` for an account
    with this address and name (none: it will do). It does not look up the address, so the
    answer is the same whether or not it has an account."""
    email = email_normalized(email)
    try:
        validate_password(password, user=User(email=email, name=name))
    except DjangoValidationError as exc:
        return list(exc.messages)
    return []


def user_register(*, email: str, password: str, name: str = "") -> User | None:
    """Create an account, validating the password with Django's validators.

    Returns the new user, or None when the address already has an account (left unchanged).
    The faces answer both the same way, so sign-up never tells who has an account; the
    password is checked and hashed either way, so the two cases also take about as long.
    Raises Invalid naming `password` for a weak password.
    """
    email = email_normalized(email)
    if problems := password_problems(password=password, email=email, name=name):
        raise Invalid({"password": problems})
    if User.objects.filter(email__iexact=email).exists():
        make_password(password)
        return None
    try:
        with transaction.atomic():
            user = User.objects.create_user(email=email, password=password, name=name)
            share_claim(user=user)  # the minds shared with this address before it had one
            return user
    except IntegrityError:
        return None  # two sign-ups with one address raced; the other one created it
