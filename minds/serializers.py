from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from minds.models import Mind


class TextField(serializers.CharField):
    """A JSON string only (DRF's CharField would store 42 as "42"); never a NUL character."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs: Any) -> None:
        self.blank_ok = kwargs.pop("allow_blank", False)
        super().__init__(**kwargs)  # allow_blank=False: the schema says it with a pattern

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data == "" and self.blank_ok:
            return ""
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# A name needs something besides whitespace (it is trimmed).
@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
        "pattern": r"^[^\x00]*[^\s\x00][^\x00]*$",
    }
)
class MindNameField(TextField):
    pass


@extend_schema_field({"type": "string", "maxLength": 1000, "pattern": r"^[^\x00]*$"})
class MindDescriptionField(TextField):
    pass


class MindSerializer(serializers.ModelSerializer[Mind]):
    name = MindNameField(max_length=100)
    description = MindDescriptionField(max_length=1000, allow_blank=True, required=False)
    key_prefix = serializers.CharField(read_only=True, help_text="Start of the active key.")
    key_active = serializers.BooleanField(source="has_active_key", read_only=True)
    memory_count = serializers.IntegerField(read_only=True, required=False)

    class Meta:
        model = Mind
        fields = [
            "id",
            "name",
            "description",
            "key_prefix",
            "key_active",
            "key_created_at",
            "memory_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "key_created_at", "created_at", "updated_at"]
        extra_kwargs = {"name": {"allow_blank": False}}

    def validate_name(self, value: str) -> str:
        value = value.strip()
        if not value:
            raise serializers.ValidationError("A mind needs a name.")
        return value


class MindWithKeySerializer(MindSerializer):
    mind_key = serializers.CharField(
        read_only=True, help_text="The full Mind Key. Shown only in this answer: store it now."
    )

    class Meta(MindSerializer.Meta):
        fields = [*MindSerializer.Meta.fields, "mind_key"]


@extend_schema_serializer(many=False)  # an object with a list inside, also for `list`
class MindListSerializer(serializers.Serializer[Any]):
    minds = MindSerializer(many=True)
    total = serializers.IntegerField()


class MindDeletedSerializer(serializers.Serializer[Any]):
    deleted = serializers.BooleanField()
    id = serializers.CharField()
