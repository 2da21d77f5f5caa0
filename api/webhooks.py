"""/webhooks: a mind's webhooks, their tests, secrets and delivery logs, for its agent (Mind
Key) or a person who may reach the mind (`?mind=`). Bodies are judged by webhooks/services.py."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.memories import MIND_PARAM, actor_for_request
from api.params import param_choice, param_limit, param_offset
from api.scoping import mind_for_request
from minds.access import Level
from webhooks import selectors, services
from webhooks.events import PATTERNS
from webhooks.models import MAX_URL_LENGTH, Webhook, WebhookDelivery
from webhooks.signing import MAX_SECRET_LENGTH, MIN_SECRET_LENGTH

WEBHOOK_ID = r"wh_[a-z0-9]+"
DELIVERY_ID = r"dlv_[a-z0-9]+"
STATUSES = tuple(WebhookDelivery.Status.values)


# --- The schema (documentation only: the core judges every body) --------------------------------

_PATTERN = "|".join(re.escape(p) for p in PATTERNS)
EVENTS_SCHEMA = {
    "oneOf": [
        {"type": "string", "pattern": rf"^ *({_PATTERN}) *(, *({_PATTERN}) *)*$"},
        {"type": "array", "items": {"type": "string", "enum": list(PATTERNS)}, "minItems": 1},
    ],
    "description": f"One of {', '.join(PATTERNS)}, a comma-separated string of them, or a "
    'list; default "*".',
}
# What signing.secret_check takes, as far as a pattern says it: a whsec_ secret's base64 key
# of at least MIN_SECRET_LENGTH bytes, or printable text with no space at either end.
SECRET_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^whsec_([A-Za-z0-9+/]{4}){3,48}$"},
        {
            "type": "string",
            "pattern": rf"^[!-~][ -~]{{{MIN_SECRET_LENGTH - 2},{MAX_SECRET_LENGTH - 2}}}[!-~]$",
        },
    ],
    "description": "Signs every delivery; left out, one is generated and answered once. "
    "A whsec_ secret's key is the base64 after the prefix, as Standard Webhooks libraries "
    "read it.",
}


@extend_schema_field(
    {"type": "string", "pattern": r"^https?://[^\s/?#@]+(/\S*)?$", "maxLength": MAX_URL_LENGTH}
)
class UrlField(serializers.CharField):
    """Where events are sent; whether its address is allowed is judged when it is given."""


@extend_schema_field(SECRET_SCHEMA)
class SecretField(serializers.CharField):
    """A secret as signing.secret_check takes it."""


@extend_schema_field(EVENTS_SCHEMA)
class EventsField(serializers.JSONField):
    """A string or a list of strings, which no DRF field describes."""


class WebhookWriteSerializer(serializers.Serializer[Any]):
    """The body of POST /webhooks."""

    schema_server_fields = ()  # a strict body: an unknown field is a 400

    url = UrlField(
        help_text="An https URL on a public address (plain http and private addresses only "
        "with SYNAPSE_WEBHOOKS_ALLOW_PRIVATE)."
    )
    events = EventsField(required=False)
    secret = SecretField(required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False, help_text="Default true.")


class WebhookUpdateSerializer(WebhookWriteSerializer):
    """The body of PUT / PATCH /webhooks/{id}: any of the fields."""

    url = UrlField(required=False)
    secret = SecretField(
        required=False,
        help_text="A new secret: it signs at once, the previous one for 24 hours more.",
    )


def _webhook_fields() -> dict[str, serializers.Field[Any, Any, Any, Any]]:
    # Fresh fields per answer: a DRF field belongs to one serializer.
    return {
        "id": serializers.CharField(),
        "url": serializers.CharField(),
        "events": serializers.ListField(child=serializers.CharField()),
        "enabled": serializers.BooleanField(),
        "disabled_reason": serializers.CharField(
            allow_null=True, help_text="Why the server turned it off, when it did."
        ),
        "disabled_at": serializers.DateTimeField(allow_null=True),
        "previous_secret_until": serializers.DateTimeField(
            allow_null=True, help_text="Until when the replaced secret still signs."
        ),
        "created_at": serializers.DateTimeField(),
        "updated_at": serializers.DateTimeField(),
    }


def _delivery_fields() -> dict[str, serializers.Field[Any, Any, Any, Any]]:
    return {
        "id": serializers.CharField(),
        "event": serializers.CharField(help_text="The event's type: memory.created, ping…"),
        "event_id": serializers.CharField(help_text="Its webhook-id header, the same on retries."),
        "seq": serializers.IntegerField(),
        "status": serializers.ChoiceField(choices=list(STATUSES)),
        "attempts": serializers.IntegerField(help_text="Attempts in this round of sending."),
        "response_status": serializers.IntegerField(allow_null=True),
        "duration_ms": serializers.IntegerField(allow_null=True),
        "error": serializers.CharField(allow_null=True),
        "next_attempt_at": serializers.DateTimeField(allow_null=True),
        "created_at": serializers.DateTimeField(),
        "finished_at": serializers.DateTimeField(allow_null=True),
    }


WEBHOOK = inline_serializer("Webhook", _webhook_fields())
WEBHOOK_WITH_SECRET = inline_serializer(
    "WebhookWithSecret",
    {
        **_webhook_fields(),
        "secret": serializers.CharField(
            required=False, help_text="Shown only here: the generated (or new) secret."
        ),
    },
)
DELIVERY = inline_serializer("WebhookDelivery", _delivery_fields())
ATTEMPT = inline_serializer(
    "WebhookAttempt",
    {
        "at": serializers.DateTimeField(),
        "response_status": serializers.IntegerField(allow_null=True),
        "duration_ms": serializers.IntegerField(),
        "response_body": serializers.CharField(help_text="The first bytes of the answer."),
        "error": serializers.CharField(allow_null=True),
    },
)
DELIVERY_WITH_ATTEMPTS = inline_serializer(
    "WebhookDeliveryWithAttempts",
    {
        **_delivery_fields(),
        "attempt_log": serializers.ListField(
            child=ATTEMPT, help_text="Every attempt, oldest first (redeliveries included)."
        ),
    },
)

WEBHOOK_ID_PARAM = OpenApiParameter(
    "webhook_id", {"type": "string", "pattern": f"^{WEBHOOK_ID}$"}, OpenApiParameter.PATH
)
DELIVERY_ID_PARAM = OpenApiParameter(
    "delivery_id", {"type": "string", "pattern": f"^{DELIVERY_ID}$"}, OpenApiParameter.PATH
)
ONE = [WEBHOOK_ID_PARAM, MIND_PARAM]


# --- Answers -------------------------------------------------------------------------------------


def with_attempts(delivery: WebhookDelivery) -> dict[str, Any]:
    """A delivery and every attempt at it; `attempts` stays the count, as in the log."""
    return {
        **selectors.delivery_to_dict(delivery),
        "attempt_log": [
            selectors.attempt_to_dict(a) for a in selectors.delivery_attempts(delivery=delivery)
        ],
    }


def webhook_for_request(request: Request, webhook_id: str) -> Webhook:
    """The caller's mind's webhook; 404 for any other."""
    return selectors.webhook_get(
        mind=mind_for_request(request, need=Level.ADMIN), webhook_id=webhook_id
    )


# --- Views ---------------------------------------------------------------------------------------


class WebhookListView(APIView):
    @extend_schema(
        operation_id="webhooks_list",
        summary="The mind's webhooks, oldest first (never their secrets)",
        parameters=[MIND_PARAM],
        responses=inline_serializer(
            "WebhookList",
            {"webhooks": serializers.ListField(child=WEBHOOK), "total": serializers.IntegerField()},
        ),
    )
    def get(self, request: Request) -> Response:
        webhooks = selectors.webhook_list(mind=mind_for_request(request, need=Level.ADMIN))
        return Response(
            {"webhooks": [selectors.webhook_to_dict(w) for w in webhooks], "total": len(webhooks)}
        )

    @extend_schema(
        operation_id="webhooks_create",
        summary="Register a webhook: the mind's changes are POSTed to its URL, signed",
        description=(
            "Events are signed the Standard Webhooks way. Without a `secret` one is generated "
            "(`whsec_…`) and answered here only. A URL on a loopback, private or link-local "
            "address, or plain http to a public host, is a 400 naming `url`."
        ),
        parameters=[MIND_PARAM],
        request=WebhookWriteSerializer,
        responses={201: WEBHOOK_WITH_SECRET},
    )
    def post(self, request: Request) -> Response:
        registered = services.webhook_create(
            mind=mind_for_request(request, need=Level.ADMIN), body=request.data
        )
        answer = selectors.webhook_to_dict(registered.webhook)
        if registered.secret is not None:
            answer["secret"] = registered.secret
        return Response(answer, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    @extend_schema(
        operation_id="webhooks_retrieve",
        summary="One webhook (never its secret)",
        parameters=ONE,
        responses=WEBHOOK,
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        return Response(selectors.webhook_to_dict(webhook_for_request(request, webhook_id)))

    @extend_schema(
        operation_id="webhooks_update",
        summary="Change any of url, events, secret, enabled",
        description=(
            "A new `secret` signs at once; the previous one still signs for 24 hours. "
            "Enabling a disabled webhook clears why it was disabled and sends what waited."
        ),
        parameters=ONE,
        request=WebhookUpdateSerializer,
        responses=WEBHOOK,
    )
    def put(self, request: Request, webhook_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        webhook = services.webhook_update(webhook=webhook, body=request.data)
        return Response(selectors.webhook_to_dict(webhook))

    @extend_schema(
        operation_id="webhooks_partial_update",
        summary="The same as PUT: any of url, events, secret, enabled",
        parameters=ONE,
        request=WebhookUpdateSerializer,
        responses=WEBHOOK,
    )
    def patch(self, request: Request, webhook_id: str) -> Response:
        return self.put(request, webhook_id)

    @extend_schema(
        operation_id="webhooks_destroy",
        summary="Remove the webhook and its delivery log",
        parameters=ONE,
        responses=inline_serializer(
            "WebhookDeleted",
            {"deleted": serializers.BooleanField(), "id": serializers.CharField()},
        ),
    )
    def delete(self, request: Request, webhook_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        deleted = webhook.pk
        services.webhook_delete(webhook=webhook)
        return Response({"deleted": True, "id": deleted})


class WebhookTestView(APIView):
    @extend_schema(
        operation_id="webhooks_test",
        summary="Send a ping now and answer how it went",
        description=(
            "The `ping` is sent within this request (up to the send timeout) and not retried; "
            "the answer is its delivery with the attempt: the receiver's status and the first "
            "bytes of its answer, or why nothing was sent."
        ),
        parameters=ONE,
        request=None,
        responses=DELIVERY_WITH_ATTEMPTS,
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        delivery = services.webhook_test(webhook=webhook, actor=actor_for_request(request))
        return Response(with_attempts(delivery))


class WebhookRotateSecretView(APIView):
    @extend_schema(
        operation_id="webhooks_rotate_secret",
        summary="A new generated secret, answered once; the old one signs 24 hours more",
        parameters=ONE,
        request=None,
        responses=WEBHOOK_WITH_SECRET,
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        secret = services.webhook_rotate_secret(webhook=webhook)
        return Response({**selectors.webhook_to_dict(webhook), "secret": secret})


class WebhookDeliveriesView(APIView):
    @extend_schema(
        operation_id="webhooks_deliveries",
        summary="The webhook's delivery log, newest first",
        parameters=[
            WEBHOOK_ID_PARAM,
            MIND_PARAM,
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": selectors.DELIVERIES_MAX},
                description=f"1 to {selectors.DELIVERIES_MAX}, default "
                f"{selectors.DELIVERIES_DEFAULT}; `total` counts them all.",
            ),
            OpenApiParameter("offset", {"type": "integer", "minimum": 0}),
            OpenApiParameter("status", str, enum=list(STATUSES)),
        ],
        responses=inline_serializer(
            "WebhookDeliveries",
            {
                "deliveries": serializers.ListField(child=DELIVERY),
                "total": serializers.IntegerField(),
                "limit": serializers.IntegerField(),
                "offset": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        params = request.query_params
        limit = param_limit(
            params, default=selectors.DELIVERIES_DEFAULT, maximum=selectors.DELIVERIES_MAX
        )
        offset = param_offset(params)
        wanted = param_choice(params, "status", STATUSES)
        webhook = webhook_for_request(request, webhook_id)
        page, total = selectors.delivery_page(
            webhook=webhook, limit=limit, offset=offset, status=wanted
        )
        return Response(
            {
                "deliveries": [selectors.delivery_to_dict(d) for d in page],
                "total": total,
                "limit": limit,
                "offset": offset,
            }
        )


class WebhookDeliveryView(APIView):
    @extend_schema(
        operation_id="webhooks_delivery",
        summary="One delivery and every attempt at it",
        parameters=[WEBHOOK_ID_PARAM, DELIVERY_ID_PARAM, MIND_PARAM],
        responses=DELIVERY_WITH_ATTEMPTS,
    )
    def get(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        delivery = selectors.delivery_get(webhook=webhook, delivery_id=delivery_id)
        return Response(with_attempts(delivery))


class WebhookRedeliverView(APIView):
    @extend_schema(
        operation_id="webhooks_redeliver",
        summary="Send the delivery again: a new round of attempts, by the worker",
        description="A 409 when the webhook is disabled: enable it first.",
        parameters=[WEBHOOK_ID_PARAM, DELIVERY_ID_PARAM, MIND_PARAM],
        request=None,
        responses={202: DELIVERY},
    )
    def post(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        webhook = webhook_for_request(request, webhook_id)
        delivery = selectors.delivery_get(webhook=webhook, delivery_id=delivery_id)
        delivery = services.delivery_redeliver(delivery=delivery)
        return Response(selectors.delivery_to_dict(delivery), status=status.HTTP_202_ACCEPTED)
