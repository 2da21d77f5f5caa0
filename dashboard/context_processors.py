"""What every dashboard template may read."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def mind_access(request: HttpRequest) -> dict[str, Any]:
    """`can`: what the person may do on the mind the page shows (dashboard.views.common.Can),
    None on pages of no mind."""
    return {"can": getattr(request, "mind_can", None)}
