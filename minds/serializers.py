from __future__ import annotations

from rest_framework import serializers

from minds.models import Mind


class MindSerializer(serializers.ModelSerializer):
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
