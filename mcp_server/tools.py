"""The MCP tools and resources: thin adapters over the memory services and selectors.

Every tool acts for one mind as its agent, so the rules of the REST API hold unchanged.
Design notes: docs/internals.md#the-tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NotRequired, TypedDict
from urllib.parse import parse_qs, urlsplit

from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from chat import selectors as chat_selectors
from chat import services as chat_services
from chat.rules import CONTENT_SCHEMA, POLL_MAX, REPLY_TO_SCHEMA
from core.errors import CoreError, NotFound
from memories import selectors, services
from memories.actors import Actor
from memories.fields import (
    CATEGORIES,
    PRIORITIES,
    STORE_ACTIONS,
    input_schema,
    memory_to_dict,
    output_schema,
    page_to_dict,
    search_to_dict,
    stored_to_dict,
)
from memories.filters import MAX_OFFSET, MemoryFilters
from memories.models import MAX_KEY_LENGTH, MAX_TAG_LENGTH, Priority
from memories.recall import (
    ABOUT_DEPTH,
    DEFAULT_BUDGET,
    MAX_BUDGET,
    recall_render_text,
    recall_selection,
)
from memories.rules import (
    DURATION_FORMS,
    MEMORY_ID_PATTERN,
    SUPERSEDES,
    normalize_tag,
    parse_duration,
)
from memories.search import MAX_LIMIT as SEARCH_MAX_LIMIT
from memories.search import MAX_QUERY_CHARS, memory_search
from memories.search import MODES as SEARCH_MODES
from memories.selectors import (
    EXPIRING_SOON,
    LIST_LIMIT_MAX,
    MemoryPage,
    expiring_filters,
)
from minds.access import MindAgent
from minds.models import Mind

LIST_DEFAULT = 50
SEARCH_DEFAULT = 10


class ToolError(Exception):
    """A refusal the model should read: becomes a result with `isError: true`."""


@dataclass(frozen=True)
class ToolContext:
    """Who calls: the agent of one mind."""

    agent: MindAgent
    now: datetime = field(default_factory=timezone.now)

    @property
    def mind(self) -> Mind:
        return self.agent.mind

    @property
    def actor(self) -> Actor:
        return Actor.for_agent(self.agent)


@dataclass(frozen=True)
class ToolOutput:
    text: str
    structured: dict[str, Any] | None = None


class TextContent(TypedDict):
    type: str  # "text"
    text: str


class ToolResult(TypedDict):
    """A `tools/call` result."""

    content: list[TextContent]
    isError: bool
    structuredContent: NotRequired[dict[str, Any]]


class ToolDescription(TypedDict):
    """A tool as `tools/list` shows it (its schemas are JSON Schema objects)."""

    name: str
    title: str
    description: str
    inputSchema: dict[str, Any]
    annotations: dict[str, Any]
    outputSchema: NotRequired[dict[str, Any]]


Handler = Callable[[ToolContext, dict[str, Any]], ToolOutput]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    annotations: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    # Whether tool_call checks the arguments against input_schema before the handler runs.
    schema_checked: bool = True

    def describe(self) -> ToolDescription:
        described: ToolDescription = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"title": self.title, **self.annotations},
        }
        if self.output_schema is not None:
            described["outputSchema"] = self.output_schema
        return described


# --- Schemas --------------------------------------------------------------------------------

CATEGORY = {
    "type": "string",
    "enum": list(CATEGORIES),
    "description": "identity (who the user is), preference (how they like things), fact, "
    "project (state of their work), skill, mistake (what went wrong, to avoid repeating), "
    "context (this period or session), note.",
}
PRIORITY = {
    "type": "string",
    "enum": list(PRIORITIES),
    "description": "critical memories are always recalled; low ones are the first left out.",
}
TAG = {"type": "string", "minLength": 1, "maxLength": MAX_TAG_LENGTH}
OFFSET = {
    "type": "integer",
    "minimum": 0,
    "maximum": MAX_OFFSET,
    "default": 0,
    "description": "Skip this many.",
}


def _limit(default: int, maximum: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": maximum,
        "default": default,
        "description": f"At most this many (default {default}).",
    }


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


MEMORY_OUTPUT = output_schema()
LIST_OUTPUT = {
    "type": "object",
    "properties": {
        "memories": {"type": "array", "items": MEMORY_OUTPUT},
        "total": {"type": "integer"},
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
    },
    "required": ["memories", "total", "limit", "offset"],
}
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


# --- Helpers --------------------------------------------------------------------------------


def _json_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _structured(data: dict[str, Any]) -> ToolOutput:
    return ToolOutput(text=_json_text(data), structured=data)


def _page(page: MemoryPage, limit: int, offset: int) -> ToolOutput:
    return _structured(page_to_dict(page.memories, total=page.total, limit=limit, offset=offset))


def _tag(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    return normalize_tag(value)


def _priority(value: str | None) -> int | None:
    return None if value is None else Priority.from_name(value).value


def _list(
    ctx: ToolContext, args: dict[str, Any], filters: MemoryFilters, sort: str | None = None
) -> ToolOutput:
    limit, offset = args.get("limit", LIST_DEFAULT), args.get("offset", 0)
    page = selectors.memory_list(
        mind=ctx.mind, filters=filters, sort=sort, limit=limit, offset=offset, now=ctx.now
    )
    return _page(page, limit, offset)


# --- Tools ----------------------------------------------------------------------------------


def recall_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    selection = recall_selection(
        mind=ctx.mind,
        category=args.get("category"),
        tag=_tag(args.get("tag")),
        now=ctx.now,
        about=args.get("about"),
    )
    # Always budgeted: the answer is one JSON body, built whole in memory before it is sent.
    budget = args.get("budget", DEFAULT_BUDGET)
    return ToolOutput(text=recall_render_text(selection=selection, budget=budget))


def remember_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    # The arguments are a store body, judged by the core's one validator like POST /memory.
    result = services.memory_store(mind=ctx.mind, actor=ctx.actor, body=args, now=ctx.now)
    return _structured(
        stored_to_dict(result.memory, action=result.outcome, warnings=result.warnings)
    )


def search_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    page = memory_search(
        mind=ctx.mind,
        q=args["q"],
        filters=MemoryFilters(tag=_tag(args.get("tag")), category=args.get("category")),
        limit=args.get("limit", SEARCH_DEFAULT),
        mode=args.get("mode"),
        now=ctx.now,
    )
    return _structured(search_to_dict(page))


def forget_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    memory_id, category, key = args.get("id"), args.get("category"), args.get("key")
    if memory_id is not None and (category is not None or key is not None):
        raise ToolError("Give either id, or category and key, not both.")
    if memory_id is not None:
        memory = selectors.memory_get(mind=ctx.mind, memory_id=memory_id)
    elif category is not None and key is not None:
        memory = selectors.memory_get_by_key(mind=ctx.mind, category=category, key=key)
    else:
        raise ToolError("Say which memory: its id (mem_…), or its category and key.")
    services.memory_delete(memory=memory, actor=ctx.actor, now=ctx.now)
    return _structured(
        {"deleted": True, "id": memory.id, "category": memory.category, "key": memory.key}
    )


def list_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    filters = MemoryFilters(
        category=args.get("category"),
        tag=_tag(args.get("tag")),
        priority=_priority(args.get("priority")),
        verified=args.get("verified"),
    )
    return _list(ctx, args, filters)


def by_tag_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    tag = _tag(args["tag"])
    if tag is None:
        raise ToolError("tag: may not be empty.")
    return _list(ctx, args, MemoryFilters(tag=tag))


def expiring_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    try:
        within = parse_duration(args["within"]) if "within" in args else EXPIRING_SOON
    except ValueError as exc:
        raise ToolError(f"within: {exc}") from None
    return _list(ctx, args, expiring_filters(within=within), sort="expires")


def check_messages_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    poll = chat_services.chat_poll(
        mind=ctx.mind, actor=ctx.actor, since=args.get("since"), now=ctx.now
    )
    return _structured(
        {
            "messages": [chat_selectors.message_to_dict(m) for m in poll.messages],
            "last_id": poll.last_id,
        }
    )


def reply_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    # The arguments are a message body, judged by the chat's rules like POST /chat/reply.
    message = chat_services.chat_reply(mind=ctx.mind, actor=ctx.actor, body=args, now=ctx.now)
    return _structured(chat_selectors.message_to_dict(message))


CHAT_MESSAGE_OUTPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "role": {"type": "string", "enum": ["human", "agent"]},
        "content": {"type": "string"},
        "reply_to_id": {"type": ["integer", "null"]},
        "author": {"type": ["string", "null"]},
        "created_at": {"type": "string"},
        "read_at": {"type": ["string", "null"]},
    },
    "required": ["id", "role", "content", "reply_to_id", "author", "created_at", "read_at"],
}


def _remember_schema() -> dict[str, Any]:
    """The store body's fields (fields.input_schema), described for a model."""
    schema = input_schema()
    descriptions = {
        "category": CATEGORY["description"],
        "content": "The memory itself, a self-contained statement.",
        "key": "Stable identifier within the category, no spaces, e.g. "
        "preference_code_style. Omit to derive one from the content.",
        "tags": 'Topics to find it by, e.g. ["docker", "work"].',
        "priority": f"Default normal; {PRIORITY['description']}",
        "source": "agent (default) or tool, when a tool produced it.",
        "confidence": "How sure you are, 0.0 to 1.0 (default 0.7).",
        "expires_at": "When it stops being true: ISO-8601 (2026-12-31T23:59:00Z) or Unix "
        "epoch seconds; null removes an expiry. Use it for temporary context.",
    }
    for name, text in descriptions.items():
        schema["properties"][name]["description"] = text
    schema["properties"][SUPERSEDES] = {
        "type": ["string", "null"],
        "pattern": MEMORY_ID_PATTERN,
        "description": "The id (mem_…) of a memory this one replaces, when what you learned "
        "changes an earlier fact under another key (the user moved, switched tools, changed "
        "their mind). The old one leaves recall and search but stays in history; if a person "
        "verified it, your change waits for them to accept it.",
    }
    return {**schema, "additionalProperties": False}


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in [
        Tool(
            name="recall",
            title="Recall memories",
            description=(
                "Load what you know about the user and your shared work: identity, "
                "preferences, facts, project state, skills, past mistakes, context, notes. "
                "Call recall at the start of every session, before your first answer, and "
                "again when the conversation moves to another topic (narrow with category or "
                "tag, or say the topic with about). Returns plain text, most important first "
                "(critical, high, normal, low; then most recently updated). With about (the "
                "task or question at hand, in a few words): the critical memories, then the "
                "ones most relevant to it, best first; the others are named at the end as on "
                f"other topics. `budget` (default {DEFAULT_BUDGET:,}) caps the answer at "
                "about that many tokens: critical memories always stay, the rest is cut from "
                "the lowest priority up (with about: from the least relevant up) and the "
                "left-out keys are named at the end (find them with search, or raise the "
                "budget). Entries marked [unverified] were stored by an agent and not yet "
                "confirmed by the user."
            ),
            input_schema=_object(
                {
                    "budget": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_BUDGET,
                        "default": DEFAULT_BUDGET,
                        "description": "Token budget (about 4 characters a token), "
                        f"default {DEFAULT_BUDGET:,}, at most {MAX_BUDGET:,}.",
                    },
                    "about": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "The topic to recall for, in plain words (the task "
                        "or question at hand): after the critical memories, the "
                        f"{ABOUT_DEPTH} most relevant to it at most, best first, instead of "
                        "priority order. Omit it for everything by priority.",
                    },
                    "category": {**CATEGORY, "description": "Only this category."},
                    "tag": {**TAG, "description": "Only memories with this tag."},
                }
            ),
            handler=recall_tool,
            annotations=READ_ONLY,
        ),
        Tool(
            name="remember",
            title="Remember something",
            description=(
                "Store something worth knowing in a later session: who the user is, how "
                "they like things done, facts, the state of a project, a skill, a mistake "
                "not to repeat. Call it as soon as you learn something durable; do not "
                "store secrets (passwords, API keys) or one-off chatter. Storing the same "
                "category + key again updates that memory in place instead of adding a "
                "duplicate, so reuse a key to correct or extend what you know (the answer's "
                "`action` says created, updated or unchanged). Use stable snake_case keys "
                "prefixed with the category, e.g. preference_code_style. When a new fact "
                "replaces one stored under another key, pass that memory's id as supersedes "
                "so only the current truth is recalled. What you store is unverified until "
                "the user confirms it in the dashboard; you cannot verify it yourself."
            ),
            input_schema=_remember_schema(),
            # Judged by the core's validator (memory_body_clean), like every store body.
            schema_checked=False,
            handler=remember_tool,
            annotations={
                "readOnlyHint": False,
                "destructiveHint": True,  # an existing memory with that key is overwritten
                "idempotentHint": True,
                "openWorldHint": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    **MEMORY_OUTPUT["properties"],
                    "action": {"type": "string", "enum": list(STORE_ACTIONS)},
                    "warnings": {"type": "array", "items": {"type": "string"}},
                },
                "required": [*MEMORY_OUTPUT["required"], "action", "warnings"],
            },
        ),
        Tool(
            name="search",
            title="Search memories",
            description=(
                "Find memories about something specific, best match first. Call it before "
                "asking the user something they may have told you already, and when recall "
                "named keys it left out. By keyword over content, key and tags (any of the "
                "words may match, case and accents are ignored and English word forms match: "
                '"deploying" finds "deployed") and, while the server has embeddings on, by '
                "meaning too, so your own words find a memory phrased differently. "
                '"a phrase" must appear as written, prefix* matches a prefix, -word excludes, '
                "in every mode. Each result has a score, a snippet of the content with the "
                "matched words marked «like this», and match: keyword, meaning or both. "
                "When search by meaning is unavailable, mode says keyword and warnings says so."
            ),
            input_schema=_object(
                {
                    "q": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1000,
                        "description": "What to look for, in plain words.",
                    },
                    "tag": {**TAG, "description": "Only memories with this tag."},
                    "category": {**CATEGORY, "description": "Only this category."},
                    "limit": _limit(SEARCH_DEFAULT, SEARCH_MAX_LIMIT),
                    "mode": {
                        "type": "string",
                        "enum": list(SEARCH_MODES),
                        "description": "hybrid (by keyword and by meaning; the default while "
                        "the server has embeddings on), keyword (exact words only) or semantic "
                        "(meaning only; an error when embeddings are off).",
                    },
                },
                required=("q",),
            ),
            handler=search_tool,
            annotations=READ_ONLY,
            output_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "results": {"type": "array", "items": MEMORY_OUTPUT},
                    "total": {"type": "integer"},
                    "mode": {"type": "string", "enum": list(SEARCH_MODES)},
                    "warnings": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query", "results", "total", "mode", "warnings"],
            },
        ),
        Tool(
            name="forget",
            title="Forget a memory",
            description=(
                "Delete a memory that is wrong, obsolete, or that the user asked you to "
                "forget. Name it by id (mem_…), or by category and key. To correct a memory, "
                "prefer remember with the same category and key. You cannot undo a delete "
                "(the user can restore it from its history in the dashboard)."
            ),
            input_schema=_object(
                {
                    "id": {"type": "string", "pattern": "^mem_", "description": "mem_…"},
                    "category": {**CATEGORY, "description": "With key: the memory's category."},
                    "key": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_KEY_LENGTH,
                        "description": "With category: the memory's key.",
                    },
                }
            ),
            handler=forget_tool,
            annotations={
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "deleted": {"type": "boolean"},
                    "id": {"type": "string"},
                    "category": {"type": "string"},
                    "key": {"type": "string"},
                },
                "required": ["deleted", "id"],
            },
        ),
        Tool(
            name="list_memories",
            title="List memories",
            description=(
                "Page through stored memories with exact filters, most recently updated "
                "first. Use it to review or tidy up what is stored (e.g. all unverified "
                "high-priority ones); for the start-of-session overview use recall, to "
                "answer a question use search. Expired memories are not listed."
            ),
            input_schema=_object(
                {
                    "category": CATEGORY,
                    "tag": {**TAG, "description": "Only memories with this tag."},
                    "priority": PRIORITY,
                    "verified": {
                        "type": "boolean",
                        "description": "true: confirmed by the user; false: not yet.",
                    },
                    "limit": _limit(LIST_DEFAULT, LIST_LIMIT_MAX),
                    "offset": OFFSET,
                }
            ),
            handler=list_tool,
            annotations=READ_ONLY,
            output_schema=LIST_OUTPUT,
        ),
        Tool(
            name="memories_by_tag",
            title="Memories with a tag",
            description=(
                "All memories carrying one tag (case-insensitive), most recently updated "
                "first. Use it when a topic has a tag, e.g. a project name or 'docker'."
            ),
            input_schema=_object(
                {"tag": TAG, "limit": _limit(LIST_DEFAULT, LIST_LIMIT_MAX), "offset": OFFSET},
                required=("tag",),
            ),
            handler=by_tag_tool,
            annotations=READ_ONLY,
            output_schema=LIST_OUTPUT,
        ),
        Tool(
            name="expiring",
            title="Memories about to expire",
            description=(
                "Memories whose expiry falls between now and now + within, soonest first. "
                "Use it to renew what is still true (remember it again with a later "
                "expires_at) before it drops out of recall."
            ),
            input_schema=_object(
                {
                    "within": {
                        "type": ["string", "integer"],
                        "default": f"{EXPIRING_SOON.days}d",
                        "description": f"{DURATION_FORMS[0].upper()}{DURATION_FORMS[1:]}. "
                        f"Default {EXPIRING_SOON.days}d.",
                    },
                    "limit": _limit(LIST_DEFAULT, LIST_LIMIT_MAX),
                    "offset": OFFSET,
                }
            ),
            handler=expiring_tool,
            annotations=READ_ONLY,
            output_schema=LIST_OUTPUT,
        ),
        Tool(
            name="check_messages",
            title="Check the user's messages",
            description=(
                "Read what the user wrote to you in the Synapse chat (their dashboard) while "
                "you were away or busy. Call check_messages at the start of every session, "
                "after recall, and again each time you finish a task, so a question or a "
                "change of plan does not wait. Without since: the messages you have not read "
                "yet; with since (an id): every message after it. Oldest first, at most "
                f"{POLL_MAX} at a time (check again with last_id for the rest). Checking marks "
                "them read and shows the user you are online for a minute. When a message "
                "asks something, answer it with reply."
            ),
            input_schema=_object(
                {
                    "since": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Only messages after this id (a last_id you got).",
                    }
                }
            ),
            handler=check_messages_tool,
            annotations={
                "readOnlyHint": False,  # marks what it hands over read
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "messages": {"type": "array", "items": CHAT_MESSAGE_OUTPUT},
                    "last_id": {"type": "integer"},
                },
                "required": ["messages", "last_id"],
            },
        ),
        Tool(
            name="reply",
            title="Reply to the user",
            description=(
                "Write to the user in the Synapse chat; they see it in their dashboard "
                "without reloading. Call it when a message from check_messages asked you "
                "something or asked you to do something (say what you did, or why not), and "
                "to tell the user something they should know while they are away. Pass the "
                "id of the message you answer as reply_to_id. To keep something for later "
                "sessions use remember, not reply."
            ),
            input_schema=_object(
                {
                    "content": {**CONTENT_SCHEMA, "description": "Your message, plain text."},
                    "reply_to_id": {
                        **REPLY_TO_SCHEMA,
                        "description": "The id of the user's message this answers.",
                    },
                },
                required=("content",),
            ),
            # Judged by the chat's rules (chat/rules.py), like POST /chat/reply.
            schema_checked=False,
            handler=reply_tool,
            annotations={
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": False,
            },
            output_schema=CHAT_MESSAGE_OUTPUT,
        ),
    ]
}

VALIDATORS = {name: Draft202012Validator(tool.input_schema) for name, tool in TOOLS.items()}


def _where(error: ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    return f"{path}: " if path else ""


def _argument_errors(name: str, arguments: dict[str, Any]) -> list[str]:
    errors = sorted(VALIDATORS[name].iter_errors(arguments), key=lambda e: list(e.absolute_path))
    messages = []
    for error in errors[:5]:
        if error.validator == "enum":
            allowed = ", ".join(str(v) for v in error.validator_value)
            messages.append(f"{_where(error)}must be one of: {allowed}.")
        else:
            messages.append(f"{_where(error)}{error.message}.")
    return messages


def _error_result(message: str) -> ToolResult:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def tool_call(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Run one tool for `ctx`'s mind: a `tools/call` result, `isError` on refusal.

    Unknown names are the caller's business (a protocol error); anything unexpected is left
    to propagate, so a bug is logged as one instead of being dressed up as a tool error.
    """
    tool = TOOLS[name]
    problems = _argument_errors(name, arguments) if tool.schema_checked else []
    if problems:
        return _error_result(f"Invalid arguments for {name}: " + " ".join(problems))
    try:
        output = tool.handler(ctx, arguments)
    except ToolError as exc:
        return _error_result(str(exc))
    except CoreError as exc:  # a refusal the API would answer with a 4xx
        return _error_result(exc.text())
    result: ToolResult = {"content": [{"type": "text", "text": output.text}], "isError": False}
    if output.structured is not None:
        result["structuredContent"] = output.structured
    return result


# --- Resources ------------------------------------------------------------------------------

RECALL_URI = "synapse://recall"
MEMORY_URI_TEMPLATE = "synapse://memory/{id}"


class ResourceNotFound(Exception):
    pass


class ResourceDescription(TypedDict):
    uri: str
    name: str
    title: str
    description: str
    mimeType: str


class ResourceTemplate(TypedDict):
    uriTemplate: str
    name: str
    title: str
    description: str
    mimeType: str


class ResourceContents(TypedDict):
    uri: str
    mimeType: str
    text: str


def resource_list(ctx: ToolContext) -> list[ResourceDescription]:
    return [
        {
            "uri": RECALL_URI,
            "name": "recall",
            "title": f"Recall: {ctx.mind.name}",
            "description": "The mind's memories as text for your context, most important "
            "first (the same text as the recall tool). Query parameters budget (default "
            f"{DEFAULT_BUDGET:,} tokens), about, category and tag work as for the tool, e.g. "
            "synapse://recall?budget=500&about=deploying%20the%20app.",
            "mimeType": "text/plain",
        }
    ]


def resource_templates() -> list[ResourceTemplate]:
    return [
        {
            "uriTemplate": MEMORY_URI_TEMPLATE,
            "name": "memory",
            "title": "One memory",
            "description": "One memory of this mind as JSON, by id (mem_…).",
            "mimeType": "application/json",
        }
    ]


def resource_read(ctx: ToolContext, uri: str) -> list[ResourceContents]:
    """The contents of `uri`; raises ResourceNotFound (or ToolError for bad parameters)."""
    parts = urlsplit(uri)
    if parts.scheme != "synapse":
        raise ResourceNotFound(uri)
    if parts.netloc == "recall" and parts.path in ("", "/"):
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(params) - {"budget", "about", "category", "tag"}
        if unknown:
            raise ToolError(f"Unknown recall parameters: {', '.join(sorted(unknown))}.")
        args: dict[str, Any] = dict(params)
        # ASCII digits of sane length only: anything else reaches the schema check as text.
        if re.fullmatch(r"[0-9]{1,12}", args.get("budget", "")):
            args["budget"] = int(args["budget"])
        problems = _argument_errors("recall", args)
        if problems:
            raise ToolError(" ".join(problems))
        try:
            text = recall_tool(ctx, args).text
        except CoreError as exc:  # what the core refuses (an `about` with no words)
            raise ToolError(exc.text()) from None
        return [{"uri": uri, "mimeType": "text/plain", "text": text}]
    if parts.netloc == "memory" and parts.path.strip("/").startswith("mem_"):
        try:
            memory = selectors.memory_get(mind=ctx.mind, memory_id=parts.path.strip("/"))
        except NotFound:
            raise ResourceNotFound(uri) from None
        text = _json_text(memory_to_dict(memory))
        return [{"uri": uri, "mimeType": "application/json", "text": text}]
    raise ResourceNotFound(uri)
