from __future__ import annotations

from typing import Any

from rest_framework import serializers


class RegisterSerializer(serializers.Serializer[Any]):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=128, trim_whitespace=False)
    name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")


class LoginSerializer(serializers.Serializer[Any]):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class TokenPairSerializer(serializers.Serializer[Any]):
    access = serializers.CharField()
    refresh = serializers.CharField()


class RegisterResponseSerializer(serializers.Serializer[Any]):
    detail = serializers.CharField(
        help_text="The same answer whether or not the address already had an account."
    )


class TokenField(serializers.RegexField):
    """A JWT: three base64url parts joined by dots, sent as a JSON string (never a number)."""

    def __init__(self, **kwargs: Any) -> None:
        message = "Not a token: a refresh token from POST /login is expected."
        super().__init__(r"^[A-Za-z0-9_.-]+$", error_messages={"invalid": message}, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class RefreshSerializer(serializers.Serializer[Any]):
    refresh = TokenField(max_length=4096)


class AccessSerializer(serializers.Serializer[Any]):
    access = serializers.CharField()


class LogoutResponseSerializer(serializers.Serializer[Any]):
    logged_out = serializers.BooleanField()
