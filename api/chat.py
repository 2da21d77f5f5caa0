"""/chat: a mind's conversation between its agent and its people (API.md §9.9), the client's
`chat` calls. The agent (Mind Key) polls, replies and asks its status; people (JWT, `?mind=`
as for lists) read the history and unread counts (read level) and write (write level). Each
side's calls answer the other side 403. Bodies are judged by chat/rules.py."""

from __future__ import annotations

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
from api.params import param_choice, param_int
from api.permissions import IsAgent, IsHuman
from api.scoping import mind_for_request
from chat import selectors, services
from chat.models import Role
from chat.rules import (
    CONTENT_SCHEMA,
    HISTORY_DEFAULT,
    HISTORY_MAX,
    MAX_CONTENT_LENGTH,
    ONLINE_WINDOW,
    POLL_MAX,
    REPLY_TO_SCHEMA,
    ROLES,
)
from minds.access import Level


class IsPerson(IsHuman):
    message = (
        "This is the people's side of the chat: call it with a person's login (JWT). "
        "The agent uses GET /chat/poll, POST /chat/reply and GET /chat/status."
    )


@extend_schema_field(CONTENT_SCHEMA)
class ContentField(serializers.CharField):
    pass


@extend_schema_field(REPLY_TO_SCHEMA)
class ReplyToField(serializers.IntegerField):
    pass


class ChatMessageWriteSerializer(serializers.Serializer[Any]):
    """The body of POST /chat/send and POST /chat/reply, for the schema only."""

    schema_server_fields = ()  # a strict body: an unknown field is a 400

    content = ContentField(help_text=f"1 to {MAX_CONTENT_LENGTH:,} characters.")
    reply_to_id = ReplyToField(
        required=False,
        allow_null=True,
        help_text="The id of a message of this mind's chat that this one answers.",
    )


def _message_fields() -> dict[str, serializers.Field[Any, Any, Any, Any]]:
    return {
        "id": serializers.IntegerField(help_text="1, 2, 3 … per mind."),
        "role": serializers.ChoiceField(choices=list(Role.values)),
        "content": serializers.CharField(),
        "reply_to_id": serializers.IntegerField(allow_null=True),
        "author": serializers.CharField(
            allow_null=True, help_text="The person's email; null for the agent's."
        ),
        "created_at": serializers.DateTimeField(),
        "read_at": serializers.DateTimeField(
            allow_null=True, help_text="When the other side read it."
        ),
    }


MESSAGE = inline_serializer("ChatMessage", _message_fields())
MESSAGES = serializers.ListField(child=inline_serializer("ChatMessageItem", _message_fields()))


def _since(request: Request) -> int | None:
    raw = request.query_params.get("since")
    if raw is None or raw == "":
        return None
    return param_int(request.query_params, "since", default=0, minimum=0)


class ChatPollView(APIView):
    permission_classes = [IsAgent]

    @extend_schema(
        operation_id="chat_poll",
        summary="The agent's poll: the people's new messages, oldest first; marks them read",
        description="With `since`: the people's messages after that id (read or not); "
        "without: those the agent has not read yet. At most "
        f"{POLL_MAX} at a time: poll again with `last_id` for the rest. The agent counts "
        f"as online for {int(ONLINE_WINDOW.total_seconds())} s after a poll.",
        parameters=[
            MIND_PARAM,
            OpenApiParameter(
                "since", {"type": "integer", "minimum": 0}, description="A message id."
            ),
        ],
        responses=inline_serializer(
            "ChatPoll",
            {
                "messages": MESSAGES,
                "last_id": serializers.IntegerField(
                    help_text="The last id handed over (or `since`): poll after it next."
                ),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        since = _since(request)
        mind = mind_for_request(request, need=Level.READ)
        poll = services.chat_poll(mind=mind, actor=actor_for_request(request), since=since)
        return Response(
            {
                "messages": [selectors.message_to_dict(m) for m in poll.messages],
                "last_id": poll.last_id,
            }
        )


class ChatReplyView(APIView):
    permission_classes = [IsAgent]

    @extend_schema(
        operation_id="chat_reply",
        summary="The agent writes to the mind's people",
        parameters=[MIND_PARAM],
        request=ChatMessageWriteSerializer,
        responses={201: MESSAGE},
    )
    def post(self, request: Request) -> Response:
        mind = mind_for_request(request, need=Level.WRITE)
        message = services.chat_reply(
            mind=mind, actor=actor_for_request(request), body=request.data
        )
        return Response(selectors.message_to_dict(message), status=status.HTTP_201_CREATED)


class ChatStatusView(APIView):
    permission_classes = [IsAgent]

    @extend_schema(
        operation_id="chat_status",
        summary="Whether the agent is online, and each side's unread messages",
        description=f"`agent_online`: the agent polled within the last "
        f"{int(ONLINE_WINDOW.total_seconds())} s.",
        parameters=[MIND_PARAM],
        responses=inline_serializer(
            "ChatStatus",
            {
                "agent_online": serializers.BooleanField(),
                "last_seen_at": serializers.DateTimeField(allow_null=True),
                "unread_for_agent": serializers.IntegerField(),
                "unread_for_human": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.chat_status(mind=mind_for_request(request, need=Level.READ)))


class ChatHistoryView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="chat_history",
        summary="The conversation's last messages, newest last",
        description="The agent's messages handed over are marked read by the person.",
        parameters=[
            MIND_PARAM,
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": HISTORY_MAX},
                description=f"Default {HISTORY_DEFAULT}.",
            ),
        ],
        responses=inline_serializer(
            "ChatHistory",
            {"messages": MESSAGES, "total": serializers.IntegerField()},
        ),
    )
    def get(self, request: Request) -> Response:
        limit = param_int(
            request.query_params, "limit", default=HISTORY_DEFAULT, minimum=1, maximum=HISTORY_MAX
        )
        mind = mind_for_request(request, need=Level.READ)
        messages, total = selectors.chat_history(mind=mind, limit=limit)
        if messages:
            services.chat_read(mind=mind, user=request.user, upto=messages[-1].number)
        return Response(
            {"messages": [selectors.message_to_dict(m) for m in messages], "total": total}
        )


class ChatUnreadView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="chat_unread",
        summary="How many messages one side has not read yet",
        description="`role=agent`: the people's messages the agent has not polled yet; "
        "`role=human`: the agent's messages no person has read yet.",
        parameters=[
            MIND_PARAM,
            OpenApiParameter("role", str, enum=list(ROLES), description="Default agent."),
        ],
        responses=inline_serializer("ChatUnread", {"unread": serializers.IntegerField()}),
    )
    def get(self, request: Request) -> Response:
        role = param_choice(request.query_params, "role", ROLES) or Role.AGENT
        mind = mind_for_request(request, need=Level.READ)
        return Response({"unread": selectors.chat_unread(mind=mind, role=role)})


class ChatSendView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="chat_send",
        summary="A person writes to the mind's agent (needs write)",
        parameters=[MIND_PARAM],
        request=ChatMessageWriteSerializer,
        responses={201: MESSAGE},
    )
    def post(self, request: Request) -> Response:
        mind = mind_for_request(request, need=Level.WRITE)
        message = services.chat_send(mind=mind, user=request.user, body=request.data)
        return Response(selectors.message_to_dict(message), status=status.HTTP_201_CREATED)
