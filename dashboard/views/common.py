"""What every dashboard view shares: the person's own mind, paging through a selector, and
where to go after an action."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from memories.errors import NotFound
from memories.models import Memory
from memories.selectors import MemoryPage, memory_get
from minds.access import mind_for_person
from minds.models import Mind


def own_mind(request: HttpRequest, mind_id: str) -> Mind:
    """The signed-in person's mind `mind_id`; anyone else's is a 404 like a missing one."""
    mind = mind_for_person(user=request.user, mind_id=mind_id)
    if mind is None:
        raise Http404("No mind with this id is yours.")
    return mind


def own_memory(request: HttpRequest, mind_id: str, memory_id: str) -> tuple[Mind, Memory]:
    """The person's mind and its memory `memory_id`; a 404 for anything else."""
    mind = own_mind(request, mind_id)
    try:
        return mind, memory_get(mind=mind, memory_id=memory_id)
    except NotFound as exc:
        raise Http404(exc.detail) from None


def next_url(request: HttpRequest, default: str) -> str:
    """Where to go after an action: a same-site `next`, else `default`."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


class SelectorPages:
    """A paged selector (`limit`/`offset` in; a MemoryPage or `(rows, total)` out) as a
    sequence Django's Paginator can page through: it asks only for the page it shows."""

    def __init__(self, selector: Callable[..., Any], **arguments: Any) -> None:
        self.selector = selector
        self.arguments = arguments
        self._total: int | None = None

    def _call(self, *, limit: int, offset: int) -> tuple[list[Any], int]:
        result = self.selector(**self.arguments, limit=limit, offset=offset)
        if isinstance(result, MemoryPage):
            return result.memories, result.total
        rows, total = result
        return rows, total

    def __len__(self) -> int:
        if self._total is None:
            _, self._total = self._call(limit=1, offset=0)
        return self._total

    def __getitem__(self, window: slice) -> list[Any]:
        start = window.start or 0
        rows, self._total = self._call(limit=max(window.stop - start, 1), offset=start)
        return rows
