"""A mind's Chat tab: the conversation with its agent, a box to write (write level), the
agent's answers fetched every few seconds by static/js/chat.js (the page works without it:
the form posts and comes back), and a message kept as a verified memory in one click.
Every write is a chat service; every read a chat selector."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from chat.models import ChatMessage
from chat.rules import HISTORY_DEFAULT, MAX_CONTENT_LENGTH, ONLINE_WINDOW, POLL_MAX
from chat.selectors import agent_online, agent_seen_at, chat_after, chat_history
from chat.services import chat_read, chat_remember, chat_send
from core.errors import Invalid, NotFound
from dashboard.views.common import mind_at
from minds.access import Level
from minds.models import Mind

# How often the page asks for new messages (static/js/chat.js reads it from the page).
POLL_SECONDS = 3


def _chat_url(mind_id: str) -> str:
    return reverse("dashboard:chat", args=[mind_id])


def _seen(request: HttpRequest, mind: Mind, shown: list[ChatMessage]) -> None:
    """The person has the agent's messages shown to them in front of them: read."""
    if shown:
        chat_read(mind=mind, user=request.user, upto=shown[-1].number)


def _status(mind: Mind) -> dict[str, object]:
    seen = agent_seen_at(mind=mind)
    return {"agent_online": agent_online(seen), "agent_seen_at": seen}


@login_required
@require_http_methods(["GET", "POST"])
def chat(request: HttpRequest, mind_id: str) -> HttpResponse:
    """The conversation, newest last, and the box to write; a POST sends (write level)."""
    mind = mind_at(request, mind_id, need=Level.WRITE if request.method == "POST" else Level.READ)
    errors: list[str] = []
    content = ""
    if request.method == "POST":
        content = request.POST.get("content", "")
        try:
            chat_send(mind=mind, user=request.user, body={"content": content})
        except Invalid as exc:
            errors = [m for field_messages in exc.fields.values() for m in field_messages]
        else:
            return redirect(_chat_url(mind.pk) + "#chat-form")
    shown, total = chat_history(mind=mind, limit=HISTORY_DEFAULT)
    _seen(request, mind, shown)
    return render(
        request,
        "dashboard/chat.html",
        {
            "mind": mind,
            "chat_messages": shown,
            "total": total,
            "last_number": shown[-1].number if shown else 0,
            "errors": errors,
            "content": content,
            "max_length": MAX_CONTENT_LENGTH,
            "poll_seconds": POLL_SECONDS,
            "online_seconds": int(ONLINE_WINDOW.total_seconds()),
            **_status(mind),
        },
        status=400 if errors else 200,
    )


@login_required
def chat_messages(request: HttpRequest, mind_id: str) -> HttpResponse:
    """What chat.js adds to the page: the messages after `?after=N` as the page's list items,
    the last number, and whether the agent is online."""
    mind = mind_at(request, mind_id, need=Level.READ)
    if request.method != "GET":  # after the lookup: another person's mind stays a 404
        return HttpResponseNotAllowed(["GET"])
    try:
        after = max(0, int(request.GET.get("after", "0")))
    except ValueError:
        return JsonResponse(
            {"error": "invalid", "detail": "after: Must be a whole number."}, status=400
        )
    shown = chat_after(mind=mind, after=after, limit=POLL_MAX)
    _seen(request, mind, shown)
    html = render_to_string(
        "dashboard/_chat_messages.html",
        {"mind": mind, "chat_messages": shown, "can": getattr(request, "mind_can", None)},
        request=request,
    )
    status = _status(mind)
    return JsonResponse(
        {
            "html": html,
            "last": shown[-1].number if shown else after,
            "agent_online": status["agent_online"],
        }
    )


@login_required
@require_POST
def chat_remember_view(request: HttpRequest, mind_id: str, number: int) -> HttpResponse:
    """Keep a message as a verified note of the person's, tagged `chat`."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    try:
        result = chat_remember(mind=mind, user=request.user, number=number)
    except NotFound as exc:
        raise Http404(exc.detail) from None
    except Invalid as exc:  # e.g. the message holds a credential and secrets are refused
        messages.error(request, f"Not remembered: {exc.text()}")
        return redirect(_chat_url(mind.pk))
    what = "Remembered" if result.action == "created" else "Remembered again"
    messages.success(
        request,
        f"{what}: message {number} is a verified note “{result.memory.key}” (tag chat).",
    )
    return redirect(_chat_url(mind.pk) + f"#message-{number}")
