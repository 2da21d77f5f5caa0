"""The memory bodies and answers as the OpenAPI schema describes them.

Documentation only: every write body is judged by the core's one validator
(`rules.memory_body_clean`). Each field carries the JSON Schema declared with it in
`memories/fields.py`; tests/api/test_memory_schema.py fails when the two drift apart.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from memories.fields import FIELDS_BY_NAME, IGNORED_FIELDS, STORE_ACTIONS


def _accepts(name: str) -> dict[str, Any]:
    return FIELDS_BY_NAME[name].accepts or {}


def _documented(name: str, base: type[serializers.Field[Any, Any, Any, Any]]) -> Any:
    """A field class of `base` that the schema describes as `name` is declared."""
    return extend_schema_field(_accepts(name))(type(f"{name.title()}Field", (base,), {}))


CategoryField = _documented("category", serializers.CharField)
KeyField = _documented("key", serializers.CharField)
ContentField = _documented("content", serializers.CharField)
TagsField = _documented("tags", serializers.ListField)
PriorityField = _documented("priority", serializers.CharField)
SourceField = _documented("source", serializers.CharField)
ConfidenceField = _documented("confidence", serializers.FloatField)
ExpiresAtField = _documented("expires_at", serializers.CharField)


class MemoryWriteSerializer(serializers.Serializer[Any]):
    """The body of `POST /memory` (a store / upsert), and each item of sync and import."""

    category = CategoryField()
    key = KeyField(
        required=False,
        help_text="Stable id within the category; derived from the content when omitted.",
    )
    content = ContentField(help_text="1 to 50,000 characters of any text.")
    tags = TagsField(required=False, help_text="At most 20; trimmed, lower-cased, de-duplicated.")
    priority = PriorityField(required=False, help_text="Default normal.")
    source = SourceField(
        required=False,
        help_text="A Mind Key may ask for agent or tool; a person for user, tool or system.",
    )
    confidence = ConfidenceField(required=False)
    expires_at = ExpiresAtField(
        required=False, help_text="ISO-8601 or Unix epoch seconds; null clears."
    )

    # For the schema (synapse_site/schema.py): no other fields; these are read-only.
    schema_server_fields = IGNORED_FIELDS


class MemoryUpdateSerializer(MemoryWriteSerializer):
    """The body of `PUT` / `PATCH /memory/{id}`: every field optional."""

    category = CategoryField(required=False)
    content = ContentField(required=False)


@extend_schema_field(FIELDS_BY_NAME["tags"].schema)
class TagListField(serializers.ListField):
    pass


class MemorySerializer(serializers.Serializer[Any]):
    """The memory record as answered (`fields.memory_to_dict`)."""

    id = serializers.CharField()
    mind_id = serializers.CharField()
    category = serializers.ChoiceField(choices=FIELDS_BY_NAME["category"].schema["enum"])
    key = serializers.CharField()
    content = serializers.CharField()
    tags = TagListField()
    priority = serializers.ChoiceField(choices=FIELDS_BY_NAME["priority"].schema["enum"])
    # As in MemoryWriteSerializer: a declared field, not the Field.source attribute.
    source = serializers.ChoiceField(choices=FIELDS_BY_NAME["source"].schema["enum"])  # type: ignore[assignment]
    verified = serializers.BooleanField()
    confidence = serializers.FloatField()
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    verified_at = serializers.DateTimeField(allow_null=True)
    verified_by = serializers.CharField(allow_null=True)


class MemoryStoreAnswerSerializer(MemorySerializer):
    action = serializers.ChoiceField(choices=list(STORE_ACTIONS))
    warnings = serializers.ListField(child=serializers.CharField())


class MemoryUpdateAnswerSerializer(MemorySerializer):
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="Fields ignored, a source refused."
    )


@extend_schema_serializer(many=False)  # an object with a list inside, also for `list`
class MemoryListAnswerSerializer(serializers.Serializer[Any]):
    memories = MemorySerializer(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class MemoryDeletedSerializer(serializers.Serializer[Any]):
    deleted = serializers.BooleanField()
    id = serializers.CharField()
