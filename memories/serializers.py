"""Input validation for memory writes: JSON types and choices. The services decide the rest.

Fields the server owns (`id`, `mind_id`, `verified`, `verified_by`, `verified_at`,
`created_at`, `updated_at`, and `action`/`warnings` of a store answer) are ignored, so a
client may send back a record it read; a store answer names them in `warnings`. A
`mind_id` that names another mind than the request acts on is refused (400), because it
shows the client meant another mind. Any other unknown field is a 400 that names it, so a
typo such as `contnet` never loses data silently.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from memories.models import (
    MAX_CONTENT_LENGTH,
    MAX_KEY_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    Category,
    Priority,
    Source,
)
from memories.services import parse_timestamp

SERVER_FIELDS = (
    "id",
    "mind_id",
    "verified",
    "verified_by",
    "verified_at",
    "created_at",
    "updated_at",
    "action",
    "warnings",
)


class StrictCharField(serializers.CharField):
    """A JSON string only: DRF's CharField would turn 42 into "42"."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_blank", True)  # emptiness is judged by the services
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return data


# For the schema: what the services accept (memories/services.py, clean_*), as JSON Schema.
# A key has no whitespace, control or invisible format characters.
KEY_PATTERN = (
    r"^[^\s\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    r"\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    r"\ufff9-\ufffb]+$"
)


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_CONTENT_LENGTH,
        "pattern": r"^[^\x00]*[^\s\x00][^\x00]*$",
    }
)
class ContentField(StrictCharField):
    """Memory content: not blank; the services check the rest."""

    def __init__(self, **kwargs):
        super().__init__(allow_blank=False, **kwargs)

    def run_validation(self, data=serializers.empty):
        if data == "":
            return data  # refused by the services, whose message names the rule
        return super().run_validation(data)


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": KEY_PATTERN}
)
class KeyField(ContentField):
    """A memory key; the services check it."""


TAG_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": MAX_TAG_LENGTH, "pattern": TAG_PATTERN}
)
class TagField(ContentField):
    """One tag; trimmed and lower-cased by the services."""


@extend_schema_field(
    {
        "type": "array",
        "items": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TAG_LENGTH,
            "pattern": TAG_PATTERN,
        },
        "maxItems": MAX_TAGS,
        "nullable": True,
    }
)
class TagsField(serializers.ListField):
    """The tags; counted by the services after de-duplication."""


class NameChoiceField(serializers.ChoiceField):
    """A string naming one of `choices`, case-insensitive; errors list the allowed names."""

    default_error_messages = {
        "invalid_choice": "Must be one of: {allowed}; got {input}.",
        "invalid": "Must be a string, one of: {allowed}.",
    }

    def to_internal_value(self, data):
        allowed = ", ".join(str(c) for c in self.choices)
        if not isinstance(data, str):
            self.fail("invalid", allowed=allowed)
        name = data.strip().lower()
        if name not in self.choices:
            self.fail("invalid_choice", allowed=allowed, input=repr(data[:50]))
        return name


class ConfidenceField(serializers.FloatField):
    default_error_messages = {"invalid": "Must be a number between 0.0 and 1.0."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        value = float(data)
        if not 0.0 <= value <= 1.0:
            self.fail("invalid")
        return value


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "format": "date-time"},
            # Unix epoch seconds of the years 1 to 9999.
            {"type": "number", "minimum": -62135596800, "maximum": 253402300799},
        ],
        "nullable": True,
    }
)
class TimestampField(serializers.Field):
    """ISO-8601 or Unix epoch seconds (number or numeric string), or null."""

    def to_internal_value(self, data):
        try:
            return parse_timestamp(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value):
        return value


class MemoryWriteSerializer(serializers.Serializer):
    """The body of `POST /memory` (a store / upsert)."""

    category = NameChoiceField(choices=list(Category.values))
    content = ContentField(help_text="1 to 50,000 characters of any text.")
    key = KeyField(
        required=False,
        allow_null=True,
        help_text="Stable id within the category; derived from the content when omitted.",
    )
    tags = TagsField(child=TagField(), required=False, allow_null=True, help_text="At most 20.")
    priority = NameChoiceField(choices=[p.label for p in Priority], required=False)
    source = NameChoiceField(
        choices=list(Source.values),
        required=False,
        help_text="A Mind Key may ask for agent or tool; a person for user, tool or system.",
    )
    confidence = ConfidenceField(required=False, min_value=0.0, max_value=1.0)
    expires_at = TimestampField(
        required=False, allow_null=True, help_text="ISO-8601 or Unix epoch seconds; null clears."
    )

    # For the schema (synapse_site/schema.py): no other fields; these are read-only.
    schema_server_fields = SERVER_FIELDS

    def __init__(self, *args, mind_id: str | None = None, **kwargs):
        self.mind_id = mind_id
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            self._check_extra_fields(data)
        return super().to_internal_value(data)

    def _check_extra_fields(self, data: dict) -> None:
        errors: dict[str, list[str]] = {}
        writable = ", ".join(self.fields)
        for name in data:
            if name in self.fields or name in SERVER_FIELDS:
                continue
            errors[str(name)] = [f"Unknown field. Writable fields: {writable}."]
        sent_mind = data.get("mind_id")
        if self.mind_id and sent_mind is not None and sent_mind != self.mind_id:
            errors["mind_id"] = [
                f"This request acts on mind {self.mind_id}. Name the mind with ?mind=m_… "
                "or the X-Mind-Id header, not in the body."
            ]
        if errors:
            raise serializers.ValidationError(errors)

    def validated_for_service(self) -> dict[str, Any]:
        """validated_data in the services' terms: null tags clear them, null key derives one."""
        data = dict(self.validated_data)
        if "tags" in data and data["tags"] is None:
            data["tags"] = []
        return data


# Every name a store body may carry without being refused as unknown.
STORE_BODY_FIELDS = frozenset(MemoryWriteSerializer._declared_fields) | frozenset(SERVER_FIELDS)


def ignored_fields(data: Any) -> list[str]:
    """The fields the server sets that a store body carried (ignored, named in `warnings`)."""
    return [name for name in SERVER_FIELDS if name in data] if isinstance(data, dict) else []


class MemoryUpdateSerializer(MemoryWriteSerializer):
    """The body of `PUT` / `PATCH /memory/{id}`: every field optional."""

    category = NameChoiceField(choices=list(Category.values), required=False)
    content = ContentField(required=False)
    key = KeyField(required=False)


class MemorySerializer(serializers.Serializer):
    """The memory record as answered (for the API schema; answers use memory_to_dict)."""

    id = serializers.CharField()
    mind_id = serializers.CharField()
    category = serializers.ChoiceField(choices=list(Category.values))
    key = serializers.CharField()
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    priority = serializers.ChoiceField(choices=[p.label for p in Priority])
    source = serializers.ChoiceField(choices=list(Source.values))
    verified = serializers.BooleanField()
    confidence = serializers.FloatField()
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    verified_at = serializers.DateTimeField(allow_null=True)
    verified_by = serializers.CharField(allow_null=True)


class MemoryStoreAnswerSerializer(MemorySerializer):
    action = serializers.ChoiceField(choices=["created", "updated"])
    warnings = serializers.ListField(child=serializers.CharField())


@extend_schema_serializer(many=False)  # an object with a list inside, also for `list`
class MemoryListAnswerSerializer(serializers.Serializer):
    memories = MemorySerializer(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class MemoryDeletedSerializer(serializers.Serializer):
    deleted = serializers.BooleanField()
    id = serializers.CharField()
