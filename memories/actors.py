"""Who writes: a person (their email), an agent (its Mind Key's prefix) or the system."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from minds.access import MindAgent, is_human

ActorKind = Literal["user", "agent", "system"]


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    name: str

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(kind="user", name=user.email)

    @classmethod
    def for_agent(cls, agent: MindAgent) -> Actor:
        return cls(kind="agent", name=agent.actor)

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(kind="system", name=name)

    @classmethod
    def for_caller(cls, user: Any) -> Actor | None:
        """The actor behind an authenticated caller (agent or person), None for anyone else."""
        if isinstance(user, MindAgent):
            return cls.for_agent(user)
        if is_human(user):
            return cls.for_user(user)
        return None
