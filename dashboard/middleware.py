"""The dashboard's one mapping of a core error no view catches: a memory or mind that
vanished between the page and the click (another tab, the agent) is a 404 page, not a 500."""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse

from core.errors import NotFound
from synapse_site.faces import face_of


class CoreNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        if isinstance(exception, NotFound) and face_of(request.path) == "dashboard":
            raise Http404(exception.detail) from exception
