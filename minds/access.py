"""Who may reach which mind, and what they may do to it: one place, for every face.

- An agent (a Mind Key) reaches its own mind and nothing else.
- A person reaches the minds they own (level OWNER) and those shared with them by an active
  share (its `acl`: READ, WRITE or ADMIN). Any other mind is "not found", exactly like one
  that does not exist; a mind they reach at a lower level than a call needs is "forbidden".
- Read on every call, never kept between requests: a revoked share stops working at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from core.errors import Forbidden, NotFound
from minds.models import Mind, Share


class Level(IntEnum):
    """What a person may do to a mind; each level may do all the lower ones do.

    READ: every read. WRITE: and store, update, delete, sync, import, verify, unverify.
    ADMIN: and shares, webhooks, rename, rotate and revoke the key. OWNER: and delete the
    mind.
    """

    READ = 1
    WRITE = 2
    ADMIN = 3
    OWNER = 4

    @property
    def label(self) -> str:
        return self.name.lower()


ACL_LEVELS = {
    Share.Acl.READ: Level.READ,
    Share.Acl.WRITE: Level.WRITE,
    Share.Acl.ADMIN: Level.ADMIN,
}

MIND_NOT_FOUND = "No mind with this id is yours or shared with you."


class MindNotFound(NotFound):
    """The mind does not exist, or the person may not see it (one answer for both)."""

    def __init__(self, detail: str = MIND_NOT_FOUND) -> None:
        super().__init__(detail)


class LevelTooLow(Forbidden):
    """The person sees the mind but their share does not allow this."""

    def __init__(self, *, have: Level, need: Level) -> None:
        super().__init__(
            f"Your access to this mind is {have.label}; this needs {need.label}"
            + (" (only the owner may)." if need is Level.OWNER else " or more.")
        )
        self.have = have
        self.need = need


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


def minds_reachable(*, user: Any) -> QuerySet[Mind]:
    """The minds `user` reaches (owned or shared by an active share), each annotated with
    `shared_acl`: the share's acl, None on the minds they own."""
    if not is_human(user):
        return Mind.objects.none()
    acl = Share.objects.filter(mind=OuterRef("pk"), user=user).values("acl")[:1]
    return Mind.objects.filter(
        Q(owner=user) | Q(pk__in=Share.objects.filter(user=user).values("mind"))
    ).annotate(shared_acl=Subquery(acl))


def minds_at(*, user: Any, need: Level) -> QuerySet[Mind]:
    """The minds `user` reaches at `need` or above (minds_reachable, so `shared_acl` too)."""
    acls = [acl for acl, level in ACL_LEVELS.items() if level >= need]
    return minds_reachable(user=user).filter(Q(owner=user) | Q(shared_acl__in=acls))


def minds_shared_with(*, user: Any) -> QuerySet[Mind]:
    """The minds others share with `user` by an active share, annotated as minds_reachable."""
    return minds_reachable(user=user).exclude(owner_id=user.pk)


def level_of(*, user: Any, mind: Mind) -> Level:
    """The level of a mind read through minds_reachable."""
    if mind.owner_id == user.pk:
        return Level.OWNER
    return ACL_LEVELS[mind.shared_acl]  # type: ignore[attr-defined]


def level_on(*, user: Any, mind: Mind) -> Level | None:
    """The person's level on a mind already read (None: they may not see it)."""
    if not is_human(user):
        return None
    if mind.owner_id == user.pk:
        return Level.OWNER
    acl = Share.objects.filter(mind=mind, user=user).values_list("acl", flat=True).first()
    return None if acl is None else ACL_LEVELS[Share.Acl(acl)]


def mind_reach(*, user: Any, mind_id: str, need: Level) -> tuple[Mind, Level]:
    """The mind `mind_id` and the person's level on it, when it is at least `need`.

    Raises MindNotFound when they cannot see it (missing and foreign alike), LevelTooLow
    when they see it at a lower level.
    """
    if "\x00" in mind_id:  # no id holds one (PostgreSQL could not even compare it)
        raise MindNotFound
    mind = minds_reachable(user=user).filter(pk=mind_id.strip()).first()
    if mind is None:
        raise MindNotFound
    return mind, level_needed(level_of(user=user, mind=mind), need)


def level_needed(have: Level, need: Level) -> Level:
    """`have` when it is at least `need`, else LevelTooLow."""
    if have < need:
        raise LevelTooLow(have=have, need=need)
    return have


def mind_for_person(*, user: Any, mind_id: str, need: Level = Level.OWNER) -> Mind | None:
    """The mind `mind_id` when `user` may reach it at `need` (by default: owns it), else
    None (missing, foreign and too low alike)."""
    try:
        return mind_reach(user=user, mind_id=mind_id, need=need)[0]
    except (MindNotFound, LevelTooLow):
        return None


def only_mind_of(*, user: Any) -> tuple[Mind | None, int]:
    """The person's mind when they reach exactly one (owned or shared), and how many they
    reach (0, 1 or 2+)."""
    candidates = list(minds_reachable(user=user).order_by("created_at")[:2])
    return (candidates[0] if len(candidates) == 1 else None), len(candidates)
