"""The OpenAPI schema: how our two bearer credentials look, and a generator that makes
every operation document the errors it can answer.

Every endpoint can answer 400 (bad input), 401 (no or bad credentials), 403, 404 (also for
another mind's data), 405 and 429 in the one error shape of synapse_site/errors.py; those that
take a body can also answer 409, 413 and 415. Listing them keeps the schema honest for
clients and for the schema-driven tests (tests/security/test_schemathesis.py). Optional query
parameters are marked `allowEmptyValue`: `?tag=` means no tag filter, as the views read it.
"""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer[Any]):
    error = serializers.CharField(help_text="A machine code: invalid, not_found, rate_limited…")
    detail = serializers.CharField(help_text="A sentence a person can act on.")
    # DRF's metaclass takes declared fields off the class, so this never shadows .fields.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Messages per field or parameter, for 400.",
    )
    retry_after = serializers.IntegerField(required=False, help_text="Seconds, for 429.")


ERRORS = {
    "400": "Bad input; `fields` names what and why.",
    "401": "Missing or invalid credentials.",
    "403": "Not allowed with this credential (e.g. a Mind Key on a person-only endpoint).",
    "404": "No such thing in your mind (also: another mind's).",
    "405": "Method not allowed here.",
    "429": "Too many requests; see Retry-After.",
}
BODY_ERRORS = {
    "409": "Conflicts with the stored state (or an Idempotency-Key reused with another body).",
    "413": "The body is larger than SYNAPSE_MAX_BODY_BYTES.",
    "415": "The body is not JSON.",
}


# drf-spectacular ships no type information: its methods are untyped calls.
class SynapseAutoSchema(AutoSchema):
    def _map_serializer(
        self, serializer: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(  # type: ignore[no-untyped-call]
            serializer, direction, bypass_extensions
        )
        server_fields = getattr(serializer, "schema_server_fields", None)
        if direction == "request" and server_fields is not None:
            # Strict bodies: unknown fields are a 400; fields the server sets are ignored.
            schema = {**schema, "additionalProperties": False}
            properties = dict(schema.get("properties", {}))
            for name in server_fields:
                properties.setdefault(
                    name, {"readOnly": True, "description": "Set by the server; ignored."}
                )
            schema["properties"] = properties
        return schema

    def _get_parameters(self) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super()._get_parameters()
        for parameter in parameters:
            # An empty optional query parameter (`?tag=`) means the same as leaving it out.
            if parameter.get("in") == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
        return parameters

    def _get_response_bodies(
        self, direction: Literal["request", "response"] = "response"
    ) -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        errors = dict(ERRORS)
        if self.method in ("POST", "PUT", "PATCH"):
            errors.update(BODY_ERRORS)
        for code, description in errors.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                    OpenApiResponse(ErrorSerializer, description=description), code
                )
        return responses


# How our two bearer credentials look.


class MindKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "api.authentication.MindKeyAuthentication"
    name = "MindKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's Mind Key: `Authorization: Bearer mk_…`.",
        }


class UserJWTScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "api.authentication.BearerJWTAuthentication"
    name = "UserJWT"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A person's access token from POST /login.",
        }


def canonical_paths(endpoints: list[tuple[Any, ...]], **kwargs: Any) -> list[tuple[Any, ...]]:
    """Publish each path in its canonical form, without the trailing slash the routes also
    accept (`/memory`, not `/memory/`): clients generated from the schema call what the
    documentation and the public client call."""
    return [(path.rstrip("/") or "/", *rest) for path, *rest in endpoints]
