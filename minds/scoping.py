"""Which mind a memory request acts on: one place, so no endpoint can forget to scope."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, ValidationError

from minds.authentication import MindAgent
from minds.models import Mind


def mind_for_request(request) -> Mind:
    """The mind of a Mind Key, or the user's mind named by `?mind=` / `X-Mind-Id`.

    A user with exactly one mind may omit it. A mind the user does not own answers 404,
    like one that does not exist.
    """
    cached = getattr(request, "_synapse_mind", None)
    if cached is not None:
        return cached
    user = request.user
    if isinstance(user, MindAgent):
        mind = user.mind
    else:
        mind_id = request.query_params.get("mind") or request.headers.get("X-Mind-Id")
        owned = Mind.objects.owned_by(user)
        if mind_id:
            # An id with NUL matches no mind (and PostgreSQL cannot even compare it).
            mind = None if "\x00" in mind_id else owned.filter(pk=mind_id.strip()).first()
            if mind is None:
                raise NotFound("No mind with this id is yours.")
        else:
            candidates = list(owned[:2])
            if len(candidates) != 1:
                raise ValidationError(
                    {
                        "mind": [
                            "Name the mind with ?mind=m_… or the X-Mind-Id header "
                            f"(you have {'no' if not candidates else 'several'} minds)."
                        ]
                    }
                )
            mind = candidates[0]
    request._synapse_mind = mind
    return mind
