"""Which mind an API request acts on, at which level: one place, so no endpoint can forget
to scope or to check what the caller may do."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from memories.as_of import memory_mind_for_person
from memories.models import Memory
from memories.selectors import memory_for_person, memory_get
from minds.access import Level, MindAgent, level_needed, level_of, mind_reach, only_mind_of
from minds.models import Mind
from synapse_site.logs import bind_mind

KEY_NAMES_ANOTHER_MIND = (
    "A Mind Key acts only for its own mind: leave out ?mind= and X-Mind-Id, "
    "or name the key's own mind."
)


def _named_mind(request: Request) -> str | None:
    return request.query_params.get("mind") or request.headers.get("X-Mind-Id")


def mind_for_request(request: Request, *, need: Level) -> Mind:
    """The mind of a Mind Key, or the person's mind named by `?mind=` / `X-Mind-Id`, when
    the caller may do what needs `need` to it.

    A person who reaches exactly one mind (owned or shared) may omit it; with none or
    several it is a 400 asking for it. A mind they cannot see answers 404, like one that
    does not exist; one they see at a lower level than `need`, 403. A Mind Key may name
    only its own mind there (400 otherwise) and may do every call its face offers.
    """
    cached: tuple[Mind, Level] | None = getattr(request, "_synapse_mind", None)
    if cached is not None:
        mind, level = cached
        level_needed(level, need)
        return mind
    user = request.user
    if isinstance(user, MindAgent):
        mind, level = user.mind, Level.OWNER
        named = (request.query_params.get("mind"), request.headers.get("X-Mind-Id"))
        if any(mind_id is not None and mind_id.strip() != mind.pk for mind_id in named):
            # Refused, not ignored: the caller meant another mind. One answer whether or not
            # that mind exists, so it tells nothing about it.
            raise ValidationError({"mind": [KEY_NAMES_ANOTHER_MIND]})
    else:
        mind_id = _named_mind(request)
        if mind_id:
            # Read now, not kept: a revoked share stops working with the next request.
            mind, level = mind_reach(user=user, mind_id=mind_id, need=Level.READ)
        else:
            only, count = only_mind_of(user=user)
            if only is None:
                raise ValidationError(
                    {
                        "mind": [
                            "Name the mind with ?mind=m_… or the X-Mind-Id header "
                            f"(you reach {'no' if count == 0 else 'several'} minds)."
                        ]
                    }
                )
            mind, level = only, level_of(user=user, mind=only)
    request._synapse_mind = (mind, level)  # type: ignore[attr-defined]
    bind_mind(mind.pk)
    level_needed(level, need)
    return mind


def memory_for_request(request: Request, memory_id: str, *, need: Level) -> Memory:
    """The memory `memory_id` a call on one memory acts on, when the caller may do what
    needs `need` to it.

    A Mind Key: in its own mind. A person who names a mind: in that one. A person who does
    not: in whichever mind they reach holds it (404 when none does, 403 when their level
    there is too low).
    """
    user = request.user
    if isinstance(user, MindAgent) or _named_mind(request):
        mind = mind_for_request(request, need=need)
        memory = memory_get(mind=mind, memory_id=memory_id)
        memory.mind = mind  # already read: the caller may use it without a query
        return memory
    memory = memory_for_person(user=user, memory_id=memory_id, need=need)
    bind_mind(memory.mind_id)
    return memory


def memory_mind_for_request(request: Request, memory_id: str, *, need: Level) -> Mind:
    """The mind a call on one memory as of a moment reads: as memory_for_request, but the
    memory may have been deleted since (its mind is then found from its audit rows)."""
    if isinstance(request.user, MindAgent) or _named_mind(request):
        return mind_for_request(request, need=need)
    mind = memory_mind_for_person(user=request.user, memory_id=memory_id, need=need)
    bind_mind(mind.pk)
    return mind
