"""The chat's unread count where a mind's tabs show it."""

from __future__ import annotations

from django import template

from chat.selectors import chat_unread
from minds.models import Mind

register = template.Library()


@register.simple_tag
def chat_unread_for_people(mind: Mind) -> int:
    """The agent's messages no person has read yet in `mind`'s chat."""
    return chat_unread(mind=mind, role="human")
