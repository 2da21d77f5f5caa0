"""What every dashboard view shares: the person's own mind, paging through a selector,
where to go after an action, and forms that act once."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from accounts import once
from accounts.once import FormSend
from core.errors import NotFound
from memories.models import Memory
from memories.selectors import MemoryPage, memory_get
from memories.services import Batch
from minds.access import Level, LevelTooLow, MindNotFound, mind_reach
from minds.models import Mind


@dataclass(frozen=True)
class Can:
    """What the signed-in person may do on the mind a page shows (templates: `can.write` …);
    buttons follow it, and the view refuses what it does not allow anyway."""

    level: Level

    @property
    def write(self) -> bool:
        return self.level >= Level.WRITE

    @property
    def admin(self) -> bool:
        return self.level >= Level.ADMIN

    @property
    def own(self) -> bool:
        return self.level is Level.OWNER


def mind_at(request: HttpRequest, mind_id: str, *, need: Level) -> Mind:
    """The mind `mind_id` when the signed-in person may do what needs `need` to it (their own,
    or one shared with them): a 404 when they cannot see it, like a missing one; a 403 when
    they see it at a lower level. Their level is kept on the request for the page."""
    try:
        mind, level = mind_reach(user=request.user, mind_id=mind_id, need=need)
    except MindNotFound as exc:
        raise Http404(exc.detail) from None
    except LevelTooLow as exc:
        raise PermissionDenied(exc.detail) from None
    request.mind_can = Can(level)  # type: ignore[attr-defined]
    return mind


def mind_memory(
    request: HttpRequest, mind_id: str, memory_id: str, *, need: Level
) -> tuple[Mind, Memory]:
    """The mind (as mind_at) and its memory `memory_id`; a 404 for a memory not in it."""
    mind = mind_at(request, mind_id, need=need)
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


UNDO_OFFER = "dashboard_undo"


def offer_undo(request: HttpRequest, *, memory: Memory, action: str) -> None:
    """Show an Undo button beside the next page's messages, for the person's `action`
    ("verify" or "delete") on `memory` (services.memory_undo decides whether it still can)."""
    request.session[UNDO_OFFER] = {
        "mind": memory.mind_id,
        "memory": memory.pk,
        "key": memory.key,
        "action": action,
    }


def offer_batch_undo(request: HttpRequest, *, mind: Mind, batch: Batch, count: int) -> None:
    """Show an Undo button for a bulk action of the person (services.memory_undo_batch
    decides whether it still can): the session keeps what names the batch, its action and
    instant, and how many memories it changed; no id and no content of any of them."""
    request.session[UNDO_OFFER] = {
        "mind": mind.pk,
        "batch": batch.action,
        "at": batch.at.isoformat(),
        "count": count,
    }


def take_undo_offer(request: HttpRequest) -> dict[str, Any] | None:
    """The Undo offer to show on this page, once, as a message is shown once."""
    session = getattr(request, "session", None)
    return session.pop(UNDO_OFFER, None) if session is not None else None


# The page sizes a person can pick (`?per_page=`), and the one shown until they do.
PAGE_SIZES = (25, 50, 100, 200)
PAGE_SIZE = 50


def page_size(request: HttpRequest) -> int:
    """The page size the query string asks for, when it is one of PAGE_SIZES."""
    asked = request.GET.get("per_page", "")
    return int(asked) if asked in {str(size) for size in PAGE_SIZES} else PAGE_SIZE


def paged(request: HttpRequest, rows: Any) -> Page[Any]:
    """The page `?page=` names (a number, or `last`) of `rows` (a SelectorPages or a list), at
    the size `?per_page=` names; a page past the end shows the last one."""
    size = page_size(request)
    number = request.GET.get("page") or "1"
    if number.isdigit() and 0 < int(number) < 10**9 and isinstance(rows, SelectorPages):
        # Read the page first: its total comes with it, so the paginator asks no more (a
        # number far past any list is left to the paginator, which shows the last page).
        start = (int(number) - 1) * size
        rows.prefetch(start, start + size)
    paginator = Paginator(rows, size)
    return paginator.get_page(paginator.num_pages if number == "last" else number)


class SelectorPages:
    """A paged selector (`limit`/`offset` in; a MemoryPage or `(rows, total)` out) as a
    sequence Django's Paginator can page through: it asks only for the page it shows."""

    def __init__(self, selector: Callable[..., Any], **arguments: Any) -> None:
        self.selector = selector
        self.arguments = arguments
        self._total: int | None = None
        self._window: tuple[int, int, list[Any]] | None = None

    def prefetch(self, start: int, stop: int) -> None:
        """Read rows [start, stop) now; the total comes with them, and a slice asking for
        the same rows later is answered from them."""
        rows, self._total = self._call(limit=max(stop - start, 1), offset=max(start, 0))
        self._window = (start, stop, rows)

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
        if self._window is not None:
            first, stop, rows = self._window
            if first == start and window.stop <= stop:  # the last page stops at the total
                return rows[: window.stop - start]
        rows, self._total = self._call(limit=max(window.stop - start, 1), offset=start)
        return rows


# --- Forms that act once (a reload of the page that shows a secret sends its form again) ----

FORM_TOKEN = "form_token"


def form_send(request: HttpRequest) -> AbstractContextManager[FormSend]:
    """This POST as one send of a form that acts once (accounts/once.py): the form carries
    `{% form_token %}`; the view acts only when the send is the first."""
    return once.form_send(user=request.user, token=request.POST.get(FORM_TOKEN, ""))


def sent_before(request: HttpRequest, url: str, *, what: str, hint: str) -> HttpResponse:
    """The answer to a second send: nothing more done, said where the first one's result
    can be seen (a redirect, so reloading that page sends nothing)."""
    text = f"That form was sent before (a reload sends it again), so {what}."
    messages.info(request, f"{text} {hint}" if hint else text)
    return redirect(url)
