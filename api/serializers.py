"""The API's bodies and answers as the OpenAPI schema describes them: memories, minds, accounts.

The memory serializers are documentation only: every write body is judged by the core's one
validator (`rules.memory_body_clean`). Each field carries the JSON Schema declared with it in
`memories/fields.py`; tests/api/test_memory_schema.py fails when the two drift apart.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from memories.fields import FIELDS_BY_NAME, IGNORED_FIELDS, STORE_ACTIONS
from memories.rules import MEMORY_ID_PATTERN
from minds.models import Mind, Share


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


@extend_schema_field({"type": ["string", "null"], "pattern": MEMORY_ID_PATTERN})
class MemoryIdField(serializers.CharField):
    """Another memory's id as a body names it (rules.clean_memory_id), or null."""


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
    supersedes = MemoryIdField(
        required=False,
        allow_null=True,
        help_text="The id of a memory of this mind that this one replaces (POST "
        "/memory/{id}/supersede); a verified one is only proposed when a Mind Key writes.",
    )

    # For the schema (api/schema.py): no other fields; these are read-only.
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
    superseded_by = serializers.CharField(allow_null=True)


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
    purged = serializers.BooleanField(required=False, help_text="Only with ?purge=true.")


# Minds


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


class ShareSerializer(serializers.ModelSerializer[Share]):
    """A share, shaped as the public client reads it."""

    mind_id = serializers.CharField(read_only=True)
    user_email = serializers.EmailField(source="email", read_only=True)
    status = serializers.CharField(
        read_only=True, help_text="pending until the invited address's account signs in; active"
    )

    class Meta:
        model = Share
        fields = ["id", "mind_id", "user_email", "acl", "status", "created_at"]
        read_only_fields = fields


class ShareCreateSerializer(serializers.Serializer[Any]):
    """For the schema only: minds.services.share_create judges the body."""

    user_email = serializers.EmailField()
    acl = serializers.ChoiceField(choices=Share.Acl.choices, default=Share.Acl.READ)


class ShareUpdateSerializer(serializers.Serializer[Any]):
    """For the schema only: minds.services.share_update judges the body."""

    acl = serializers.ChoiceField(choices=Share.Acl.choices)


@extend_schema_serializer(many=False)
class ShareListSerializer(serializers.Serializer[Any]):
    shares = ShareSerializer(many=True)
    total = serializers.IntegerField()


class SharedMindSerializer(MindSerializer):
    """A mind shared with the caller: their level and who owns it."""

    acl = serializers.CharField(source="shared_acl", read_only=True)
    owner_email = serializers.EmailField(source="owner.email", read_only=True)

    class Meta(MindSerializer.Meta):
        fields = [*MindSerializer.Meta.fields, "acl", "owner_email"]


@extend_schema_serializer(many=False)
class SharedMindListSerializer(serializers.Serializer[Any]):
    minds = SharedMindSerializer(many=True)
    total = serializers.IntegerField()


# Accounts


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
