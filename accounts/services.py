"""Writes for human accounts."""

from __future__ import annotations

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from rest_framework.exceptions import ValidationError

from accounts.models import User


def user_register(*, email: str, password: str, name: str = "") -> User:
    """Create an account, validating the password with Django's validators.

    Raises a field-level ValidationError for a taken email or a weak password.
    """
    email = User.objects.normalize_email(email).lower()
    if User.objects.filter(email__iexact=email).exists():
        raise ValidationError({"email": ["An account with this email already exists."]})
    try:
        validate_password(password, user=User(email=email, name=name))
    except DjangoValidationError as exc:
        raise ValidationError({"password": list(exc.messages)}) from None
    try:
        with transaction.atomic():
            return User.objects.create_user(email=email, password=password, name=name)
    except IntegrityError:
        # Two sign-ups with one address raced; the loser gets the same answer as above.
        raise ValidationError({"email": ["An account with this email already exists."]}) from None
