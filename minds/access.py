"""Who may reach which mind: one place, for every face.

- An agent (a Mind Key) reaches its own mind and nothing else.
- A person reaches the minds they own; any other mind is "not found", exactly like one that
  does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minds.models import Mind


@dataclass(eq=False)
class MindAgent:
    """The caller behind a Mind Key: an agent, never a person, bound to one mind.

    Shaped like a user where the frameworks look (`is_authenticated` …), so it can stand as
    `request.user`.
    """

    mind: Mind
    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    @property
    def actor(self) -> str:
        """How the audit trail names this agent: its key's display prefix."""
        return self.mind.key_prefix

    def __str__(self) -> str:
        return f"agent {self.mind.key_prefix}"


def is_human(user: Any) -> bool:
    """True for a signed-in person (JWT or session), false for agents and anonymous."""
    return bool(user and user.is_authenticated and not isinstance(user, MindAgent))


def mind_for_person(*, user: Any, mind_id: str) -> Mind | None:
    """The mind `mind_id` when `user` may reach it, else None (missing and foreign alike)."""
    if "\x00" in mind_id:  # no id holds one (PostgreSQL could not even compare it)
        return None
    return Mind.objects.owned_by(user).filter(pk=mind_id.strip()).first()


def only_mind_of(*, user: Any) -> tuple[Mind | None, int]:
    """The person's mind when they have exactly one, and how many they have (0, 1 or 2+)."""
    candidates = list(Mind.objects.owned_by(user)[:2])
    return (candidates[0] if len(candidates) == 1 else None), len(candidates)
