"""What the overview and a memory's page share to show a mind as it was at a moment: the
picked moment read from `?at=` (with its form and errors), and the status the page answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.http import HttpRequest

from dashboard.forms import AsOfForm


@dataclass
class AsOfShown:
    """The picker's state for a page: the moment to show (None: today, or a refused pick),
    the page's status, and what the template reads (`as_of_form`, `as_of`)."""

    at: datetime | None
    status: int = 200
    context: dict[str, Any] = field(default_factory=dict)

    def refused(self, message: str, status: int = 409) -> AsOfShown:
        """The pick refused by the core (its history folded): the message on the form, today's
        page beside it."""
        self.context["as_of_form"].add_error("at", message)
        self.context["as_of"] = None
        self.at, self.status = None, status
        return self


def as_of_asked(request: HttpRequest, now: datetime) -> AsOfShown:
    """The moment `?at=` names (with `?at_offset=`), checked by AsOfForm: a bad one is a
    form error and a 400; none asked, an empty picker."""
    asked = "at" in request.GET
    form = AsOfForm(request.GET if asked else None, now=now)
    if not asked:
        return AsOfShown(at=None, context={"as_of_form": form, "as_of": None})
    if not form.is_valid():
        return AsOfShown(at=None, status=400, context={"as_of_form": form, "as_of": None})
    at = form.cleaned_data["at"]
    return AsOfShown(at=at, context={"as_of_form": form, "as_of": at})
