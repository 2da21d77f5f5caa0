"""Content negotiation for views that answer in a type of their own.

DRF negotiates against the view's renderers, which speak JSON only, so `Accept: text/plain`
on recall or `Accept: text/csv` on a CSV export was a 406 although that is exactly what
the view sends. A view lists what it produces; an Accept that admits one of those passes,
and errors are still JSON.

Not DRF's renderer classes: a text or CSV renderer in `renderer_classes` also renders the
view's errors (a 401 under `Accept: text/plain` would be a Python repr, not JSON).
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotAcceptable
from rest_framework.request import Request
from rest_framework.views import APIView


class Produces(APIView):
    """Mixin: `produces` lists the media types the view's answers have, parameters included."""

    produces: tuple[str, ...] = ()

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        try:
            return super().perform_content_negotiation(request, force)
        except NotAcceptable:
            if not any(request.accepts(media_type) for media_type in self.produces):
                raise
            renderer = self.get_renderers()[0]
            return renderer, renderer.media_type
