"""Forms of the dashboard. They check shape only; the services decide what a write means."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from django import forms
from django.contrib.auth import authenticate
from django.contrib.auth import forms as auth_forms
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.views.decorators.debug import sensitive_variables

from accounts.services import password_problems
from memories.filters import SORTS, Expired, MemoryFilters
from memories.models import MAX_TAG_LENGTH, Category, Memory, Priority, Source
from memories.pictures import NODES_RANGE, SHARED_TAGS_RANGE, GraphQuery
from memories.rules import normalize_tag
from memories.search import MAX_QUERY_CHARS
from memories.selectors import EXPIRING_SOON
from memories.versions import memory_version
from minds.models import Share
from webhooks.events import PATTERNS
from webhooks.models import Webhook

CATEGORY_CHOICES = [(c, c) for c in Category.values]
PRIORITY_CHOICES = [(p.label, p.label) for p in sorted(Priority, reverse=True)]
SOURCE_CHOICES = [(s, s) for s in Source.values]


class LoginForm(AuthenticationForm):
    """Django's login form, labelled for an account keyed by email."""

    username = forms.EmailField(
        label="Email",
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )


class PasswordChangeForm(auth_forms.PasswordChangeForm):
    """Django's form, its old password checked as a login checks one: a wrong one counts
    toward the lockout of this email from this address (django-axes), and during a lockout
    the right one is refused too (AxesMiddleware then answers with the lockout page)."""

    def __init__(self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    @sensitive_variables("old_password")
    def clean_old_password(self) -> str:
        old_password: str = self.cleaned_data["old_password"]
        checked = authenticate(self.request, username=self.user.email, password=old_password)
        if checked is None or checked.pk != self.user.pk:
            raise ValidationError(
                self.error_messages["password_incorrect"], code="password_incorrect"
            )
        return old_password


class SignupForm(forms.Form):
    email = forms.EmailField(
        label="Email", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    name = forms.CharField(
        label="Name",
        max_length=150,
        required=False,
        help_text="Optional: how the dashboard greets you.",
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
    password1 = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters; not a common or all-numeric password.",
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data, never None
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first:
            # Every rule the password breaks, together with a mismatch: one round, not two.
            for problem in password_problems(
                password=first, email=cleaned.get("email", ""), name=cleaned.get("name", "")
            ):
                self.add_error("password1", problem)
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        return cleaned


class MindForm(forms.Form):
    name = forms.CharField(label="Name", max_length=100)
    description = forms.CharField(
        label="Description",
        max_length=1000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional: what this mind is for.",
    )


# The orders of memories.filters.SORTS a person can pick, by label. A search lists its best
# match first until another is picked; a list without a search, the most recently updated.
BEST_MATCH = "Best match"
SORT_LABELS = {
    "-updated": "Recently updated",
    "updated": "Least recently updated",
    "-created": "Newest",
    "-priority": "Priority, highest first",
    "confidence": "Confidence, lowest first",
    "key": "Key, A to Z",
    "category": "Category",
    "expires": "Expires soonest",
}
assert set(SORT_LABELS) <= set(SORTS)
DEFAULT_LIST_SORT = "-updated"
SEARCH_SORT_CHOICES = [("", BEST_MATCH), *SORT_LABELS.items()]
LIST_SORT_CHOICES = [
    ("", SORT_LABELS[DEFAULT_LIST_SORT]),
    *((name, label) for name, label in SORT_LABELS.items() if name != DEFAULT_LIST_SORT),
]
EXPIRED_CHOICES = [
    ("", "Hide expired"),
    ("include", "Include expired"),
    ("only", "Only expired"),
]
EXPIRED_MODES: dict[str, Expired] = {"": "hide", "include": "include", "only": "only"}
# "soon": what the overview counts as expiring soon (memories.selectors.EXPIRING_SOON).
EXPIRING_CHOICES = [("", "Any expiry"), ("soon", f"Expiring within {EXPIRING_SOON.days} days")]


MAX_FILTER_TAGS = 10


def filter_tags(text: str) -> list[str]:
    """The tags of a comma-separated filter, normalised, each once, in the order given."""
    return list(dict.fromkeys(t for t in (normalize_tag(p) for p in text.split(",")) if t))


class MemoryFilterForm(forms.Form):
    """The filters of a mind's memory table (all optional; read from the query string)."""

    # No length rule here: the core's (MAX_QUERY_CHARS) refuses a longer search, in words.
    q = forms.CharField(
        label="Search",
        required=False,
        widget=forms.SearchInput(
            attrs={
                "maxlength": MAX_QUERY_CHARS,
                "placeholder": "Words, “a phrase”, prefix*, -exclude",
            }
        ),
    )
    category = forms.ChoiceField(
        label="Category", required=False, choices=[("", "Any category"), *CATEGORY_CHOICES]
    )
    priority = forms.ChoiceField(
        label="Priority", required=False, choices=[("", "Any priority"), *PRIORITY_CHOICES]
    )
    source = forms.ChoiceField(
        label="Source", required=False, choices=[("", "Any source"), *SOURCE_CHOICES]
    )
    verified = forms.ChoiceField(
        label="Verified",
        required=False,
        choices=[("", "Verified or not"), ("yes", "Verified"), ("no", "Unverified")],
    )
    # Several tags, comma-separated: a memory must have every one. The page offers the
    # mind's most used tags to pick from (`data-tag-list`, dashboard.js).
    tag = forms.CharField(
        label="Tags (all must match)",
        required=False,
        max_length=MAX_FILTER_TAGS * (MAX_TAG_LENGTH + 2),
        widget=forms.TextInput(
            attrs={
                "placeholder": "e.g. office, munich",
                "list": "mind-tags",
                "autocomplete": "off",
                "data-tag-list": "",
            }
        ),
    )
    expired = forms.ChoiceField(label="Expired", required=False, choices=EXPIRED_CHOICES)
    expiring = forms.ChoiceField(label="Expiry", required=False, choices=EXPIRING_CHOICES)
    superseded = forms.ChoiceField(
        label="Superseded",
        required=False,
        choices=[("", "Hide superseded"), ("include", "Include superseded")],
    )
    sort = forms.ChoiceField(label="Sort by", required=False, choices=LIST_SORT_CHOICES)

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        # The empty choice is the default order: the best match during a search, else the
        # most recently updated, which a list without a search then names only once.
        searching = bool(data and str(data.get("q", "")).strip())
        if data is not None and hasattr(data, "getlist") and len(data.getlist("tag")) > 1:
            data = data.copy()  # ?tag=office&tag=munich means what "office, munich" does
            data["tag"] = ", ".join(data.getlist("tag"))
        if data is not None and not searching and data.get("sort") == DEFAULT_LIST_SORT:
            data = data.copy()
            data["sort"] = ""
        super().__init__(data, *args, **kwargs)
        if searching:
            self.fields["sort"].choices = SEARCH_SORT_CHOICES  # type: ignore[attr-defined]

    def clean_tag(self) -> str:
        """The tags as one canonical text: normalised, each once, ", " between them."""
        tags = filter_tags(self.cleaned_data.get("tag", ""))
        if len(tags) > MAX_FILTER_TAGS:
            raise ValidationError(f"At most {MAX_FILTER_TAGS} tags at once.")
        if any(len(tag) > MAX_TAG_LENGTH for tag in tags):
            raise ValidationError(f"A tag has at most {MAX_TAG_LENGTH} characters.")
        return ", ".join(tags)

    def filters(self) -> MemoryFilters:
        """The valid filters as the core's MemoryFilters (call after is_valid(); an invalid
        value narrows nothing)."""
        data = {name: value for name, value in self.cleaned_data.items() if value}
        return MemoryFilters(
            category=data.get("category"),
            tags=tuple(filter_tags(data.get("tag", ""))),
            priority=Priority.from_name(data["priority"]).value if "priority" in data else None,
            source=data.get("source"),
            verified={"yes": True, "no": False}.get(data.get("verified", "")),
            expired=EXPIRED_MODES[data.get("expired", "")],
            expiring_within=EXPIRING_SOON if data.get("expiring") == "soon" else None,
            superseded=data.get("superseded") == "include",
        )

    def query(self) -> str | None:
        """The search words, or None (call after is_valid())."""
        return self.cleaned_data.get("q", "").strip() or None

    def active_filters(self) -> list[tuple[str, str]]:
        """(label, value as its control shows it) for each filter and order set, the search
        words aside (call after is_valid()): what the folded filter panel names."""
        shown = []
        for name, field in self.fields.items():
            value = self.cleaned_data.get(name)
            if name == "q" or not value:
                continue
            choices = dict(getattr(field, "choices", ()))
            shown.append((str(field.label), str(choices.get(value, value))))
        return shown


class MemoryEditForm(forms.Form):
    """What a person may change on a memory. The form only reads the page's inputs (text to
    numbers, dates, a tag list); the core's validator judges the values, as for the API."""

    # The page opens with the focus here, the form's first control.
    category = forms.CharField(
        label="Category",
        required=False,
        widget=forms.Select(choices=CATEGORY_CHOICES, attrs={"autofocus": True}),
    )
    key = forms.CharField(label="Key", required=False, strip=False)
    content = forms.CharField(
        label="Content", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8})
    )
    tags = forms.CharField(
        label="Tags",
        required=False,
        help_text="Comma-separated, e.g. docker, deploy. Stored lower-case.",
    )
    priority = forms.CharField(
        label="Priority", required=False, widget=forms.Select(choices=PRIORITY_CHOICES)
    )
    confidence = forms.CharField(
        label="Confidence",
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "1"}),
        help_text="From 0.0 to 1.0.",
    )
    # The page shows and sends UTC; with the script, the person's own time and its offset
    # from UTC (minutes east, at that moment), which the form applies.
    expires_at = forms.CharField(
        label="Expires at (UTC)",
        required=False,
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "data-offset-field": "expires_at_offset"},
            format="%Y-%m-%dT%H:%M",
        ),
        help_text="Leave empty to keep it forever.",
    )
    expires_at_offset = forms.CharField(required=False, widget=forms.HiddenInput)
    # The version the form showed: a memory that changed since is not overwritten.
    version = forms.CharField(required=False, widget=forms.HiddenInput)

    @classmethod
    def initial_for(cls, memory: Memory) -> dict[str, Any]:
        expires = memory.expires_at.astimezone(UTC) if memory.expires_at else None
        return {
            "category": memory.category,
            "key": memory.key,
            "content": memory.content,
            "tags": ", ".join(memory.tags),
            "priority": memory.priority_name,
            "confidence": memory.confidence,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M") if expires else "",
            "expires_at_offset": "0",
            "version": memory_version(memory),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data, never None
        offset = _offset_minutes(cleaned.get("expires_at_offset", ""))
        if offset is None:
            self.add_error("expires_at", NO_ZONE)
            return cleaned
        try:
            cleaned["expires_at"] = _utc(cleaned.get("expires_at", ""), offset)
        except OverflowError:
            self.add_error("expires_at", "Must be a time between the years 1 and 9999.")
        return cleaned

    def body(self) -> dict[str, Any]:
        """The inputs as an update body: tags as a list, confidence as a number, the expiry
        as UTC (a time without a zone taken at the offset sent with it, else UTC, as the
        field is labelled without the script) or null; anything unreadable as typed."""
        data = self.cleaned_data
        return {
            "category": data["category"],
            "key": data["key"],
            "content": data["content"],
            "tags": [t.strip() for t in data["tags"].split(",") if t.strip()],
            "priority": data["priority"],
            "confidence": _number(data["confidence"]),
            "expires_at": data["expires_at"],
        }

    def changed_values(self, memory: Memory) -> dict[str, Any]:
        """Only what differs from the stored memory: the body of `memory_update`."""
        body = self.body()
        current = {
            "category": memory.category,
            "key": memory.key,
            "content": memory.content,
            "tags": list(memory.tags),
            "priority": memory.priority_name,
            "confidence": memory.confidence,
            "expires_at": memory.expires_at,
        }
        changed = {name: body[name] for name in current if body[name] != current[name]}
        if "expires_at" in changed and _same_minute(body["expires_at"], memory.expires_at):
            # The input shows minutes: an untouched field must not shave off the seconds.
            del changed["expires_at"]
        return changed


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text  # the validator names the field and the rule


# The widest offset of any time zone from UTC is 14 hours (Pacific/Kiritimati).
MAX_OFFSET_MINUTES = 14 * 60


NO_ZONE = (
    "This time came without a usable time zone (its offset from UTC in minutes, which the "
    "page sends): enter it again."
)


def _offset_minutes(text: str) -> int | None:
    """The offset a date-and-time input sent beside it (minutes east of UTC; none: UTC), or
    None when it is no offset any time zone has."""
    try:
        offset = int(text.strip()) if text.strip() else 0
    except ValueError:
        return None
    return offset if abs(offset) <= MAX_OFFSET_MINUTES else None


def _utc(text: str, offset_minutes: int = 0) -> Any:
    """A typed time as UTC (None if empty; as typed if unreadable, for the validator to
    name): one without a zone is at `offset_minutes` east of UTC. OverflowError when
    that moment is before year 1 or after 9999 in UTC."""
    if not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        return text  # the validator names the field and the rule
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    return value.astimezone(UTC)


def _same_minute(first: Any, second: datetime | None) -> bool:
    if not isinstance(first, datetime) or second is None:
        return False
    return first.replace(second=0, microsecond=0) == second.replace(second=0, microsecond=0)


# Each pattern a webhook may take (webhooks.events.PATTERNS), as its checkbox names it.
EVENT_LABELS = {
    "*": "Every event (*)",
    "memory.*": "Every memory event (memory.*)",
    "chat.*": "Every chat event (chat.*)",
    "cron.*": "Every scheduled run (cron.*)",
}
EVENT_CHOICES = [(pattern, EVENT_LABELS.get(pattern, pattern)) for pattern in PATTERNS]


class WebhookForm(forms.Form):
    """A webhook's URL and events, and on creation an optional secret. Shape only: the
    webhooks core judges the values (its messages land on these fields)."""

    url = forms.CharField(
        label="URL",
        required=False,
        strip=False,
        help_text="Where each event is POSTed, signed; https:// for a public receiver.",
        widget=forms.URLInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    events = forms.MultipleChoiceField(
        label="Events",
        required=False,
        choices=EVENT_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        help_text="A test event (ping) is sent whatever is picked.",
    )
    secret = forms.CharField(
        label="Secret (optional)",
        required=False,
        strip=False,
        help_text="Leave empty to have one generated, shown once. At least 8 characters.",
        # Not sent back into the page: a form with an error asks for it again.
        widget=forms.PasswordInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    enabled = forms.BooleanField(
        label="Enabled: send events to this URL", required=False, initial=True
    )

    def __init__(self, *args: Any, creating: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if creating:
            del self.fields["enabled"]
        else:
            del self.fields["secret"]

    @classmethod
    def initial_for(cls, webhook: Webhook) -> dict[str, Any]:
        return {"url": webhook.url, "events": list(webhook.events), "enabled": webhook.enabled}

    def body(self) -> dict[str, Any]:
        """The inputs as a create body (call after is_valid()); no secret: one is generated."""
        data = self.cleaned_data
        body: dict[str, Any] = {"url": data["url"], "events": data["events"]}
        if data.get("secret"):
            body["secret"] = data["secret"]
        return body

    def changed_values(self, webhook: Webhook) -> dict[str, Any]:
        """Only what differs from the stored webhook: the body of `webhook_update` (an
        unchanged URL is not checked again)."""
        data = self.cleaned_data
        changed: dict[str, Any] = {}
        if data["url"].strip() != webhook.url:
            changed["url"] = data["url"]
        if set(data["events"]) != set(webhook.events) or not data["events"]:
            changed["events"] = data["events"]
        if data["enabled"] != webhook.enabled:
            changed["enabled"] = data["enabled"]
        return changed


# The levels a mind is shared at, as the invite and the change forms offer them.
SHARE_LEVELS = [
    (Share.Acl.READ, "read: every list, search and page"),
    (Share.Acl.WRITE, "write: read, and change memories (verify, edit, delete)"),
    (Share.Acl.ADMIN, "admin: write, and sharing, webhooks, settings and the key"),
]


class ShareForm(forms.Form):
    """An invitation: an address and a level. Shape only: minds.services judges both (its
    messages land on these fields), so a bad value is refused in one place."""

    user_email = forms.CharField(
        label="Email address",
        required=False,
        widget=forms.EmailInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="They get access when they sign in with this address.",
    )
    acl = forms.CharField(
        label="Level",
        required=False,
        initial=Share.Acl.READ,
        widget=forms.Select(choices=SHARE_LEVELS),
    )


class AsOfForm(forms.Form):
    """A moment to see a mind or a memory as it was then (read from the query string): typed
    in UTC, or with the script in the person's own time and its offset; not in the future."""

    at = forms.CharField(
        label="View as of (UTC)",
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "data-offset-field": "at_offset"},
            format="%Y-%m-%dT%H:%M",
        ),
        error_messages={"required": "Pick a date and time to see it as it was then."},
    )
    at_offset = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, data: Any = None, *, now: datetime) -> None:
        super().__init__(data)
        self.now = now

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data, never None
        if "at" not in cleaned:
            return cleaned
        offset = _offset_minutes(cleaned.get("at_offset", ""))
        if offset is None:
            self.add_error("at", NO_ZONE)
            return cleaned
        try:
            moment = _utc(cleaned["at"], offset)
        except OverflowError:
            moment = None
        if not isinstance(moment, datetime):
            self.add_error("at", "Enter a date and time, e.g. 2026-05-01T09:30.")
        elif moment > self.now:
            self.add_error("at", "That moment is in the future: pick one up to now.")
        else:
            cleaned["at"] = moment
        return cleaned


# The Graph page draws at most this many nodes: beyond it an SVG of circles is a blur.
GRAPH_NODES_RANGE = (NODES_RANGE[0], 300)
GRAPH_NODES_DEFAULT = 150


class GraphFilterForm(forms.Form):
    """The filters of a mind's Graph page (all optional; read from the query string)."""

    category = forms.ChoiceField(
        label="Category", required=False, choices=[("", "Any category"), *CATEGORY_CHOICES]
    )
    tag = forms.CharField(
        label="Tag",
        required=False,
        max_length=MAX_TAG_LENGTH,
        widget=forms.TextInput(attrs={"list": "mind-tags", "autocomplete": "off"}),
    )
    verified = forms.ChoiceField(
        label="Verified",
        required=False,
        choices=[("", "Verified or not"), ("yes", "Verified"), ("no", "Unverified")],
    )
    min_shared_tags = forms.IntegerField(
        label="Tags shared for a link",
        required=False,
        min_value=SHARED_TAGS_RANGE[0],
        max_value=SHARED_TAGS_RANGE[1],
        widget=forms.NumberInput(attrs={"placeholder": str(SHARED_TAGS_RANGE[0])}),
    )
    max_nodes = forms.IntegerField(
        label="At most this many memories",
        required=False,
        min_value=GRAPH_NODES_RANGE[0],
        max_value=GRAPH_NODES_RANGE[1],
        widget=forms.NumberInput(attrs={"placeholder": str(GRAPH_NODES_DEFAULT)}),
    )

    def clean_tag(self) -> str:
        return normalize_tag(self.cleaned_data.get("tag", ""))

    def query(self) -> GraphQuery:
        """The valid filters as the core's GraphQuery (call after is_valid(); an invalid value
        narrows nothing)."""
        data = {name: value for name, value in self.cleaned_data.items() if value}
        return GraphQuery(
            max_nodes=data.get("max_nodes", GRAPH_NODES_DEFAULT),
            category=data.get("category"),
            tag=data.get("tag"),
            verified={"yes": True, "no": False}.get(data.get("verified", "")),
            min_shared_tags=data.get("min_shared_tags", SHARED_TAGS_RANGE[0]),
        )
