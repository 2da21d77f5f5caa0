"""Which mind an API request acts on: one place, so no endpoint can forget to scope."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request

from minds.access import MindAgent, mind_for_person, only_mind_of
from minds.models import Mind
from synapse_site.logs import bind_mind

KEY_NAMES_ANOTHER_MIND = (
    "A Mind Key acts only for its own mind: leave out ?mind= and X-Mind-Id, "
    "or name the key's own mind."
)


def mind_for_request(request: Request) -> Mind:
    """The mind of a Mind Key, or the person's mind named by `?mind=` / `X-Mind-Id`.

    A person with exactly one mind may omit it. A mind they may not reach answers 404, like
    one that does not exist. A Mind Key may name only its own mind there (400 otherwise).
    """
    cached: Mind | None = getattr(request, "_synapse_mind", None)
    if cached is not None:
        return cached
    user = request.user
    if isinstance(user, MindAgent):
        mind = user.mind
        named = (request.query_params.get("mind"), request.headers.get("X-Mind-Id"))
        if any(mind_id is not None and mind_id.strip() != mind.pk for mind_id in named):
            # Refused, not ignored: the caller meant another mind. One answer whether or not
            # that mind exists, so it tells nothing about it.
            raise ValidationError({"mind": [KEY_NAMES_ANOTHER_MIND]})
    else:
        mind_id = request.query_params.get("mind") or request.headers.get("X-Mind-Id")
        if mind_id:
            found = mind_for_person(user=user, mind_id=mind_id)
            if found is None:
                raise NotFound("No mind with this id is yours.")
            mind = found
        else:
            only, count = only_mind_of(user=user)
            if only is None:
                raise ValidationError(
                    {
                        "mind": [
                            "Name the mind with ?mind=m_… or the X-Mind-Id header "
                            f"(you have {'no' if count == 0 else 'several'} minds)."
                        ]
                    }
                )
            mind = only
    request._synapse_mind = mind  # type: ignore[attr-defined]
    bind_mind(mind.pk)
    return mind
