"""Forms of the dashboard. They check shape only; the services decide what a write means."""

from __future__ import annotations

from datetime import UTC

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from memories.models import MAX_CONTENT_LENGTH, MAX_KEY_LENGTH, Category, Priority, Source

CATEGORY_CHOICES = [(c, c) for c in Category.values]
PRIORITY_CHOICES = [(p.label, p.label) for p in sorted(Priority, reverse=True)]
SOURCE_CHOICES = [(s, s) for s in Source.values]


class LoginForm(AuthenticationForm):
    """Django's login form, labelled for an account keyed by email."""

    username = forms.EmailField(
        label="Email",
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )


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

    def clean(self):
        cleaned = super().clean()
        first, second = cleaned.get("password1"), cleaned.get("password2")
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


SORTS = {
    # value: (label, ordering)
    "-updated": ("Recently updated", ("-updated_at", "-id")),
    "updated": ("Least recently updated", ("updated_at", "id")),
    "-created": ("Newest", ("-created_at", "-id")),
    "-priority": ("Priority, highest first", ("-priority", "-updated_at", "-id")),
    "confidence": ("Confidence, lowest first", ("confidence", "-priority", "-id")),
    "key": ("Key, A to Z", ("key", "id")),
    "category": ("Category", ("category", "key", "id")),
    "expires": ("Expires soonest", ("expires_at", "-priority", "id")),
}
EXPIRED_CHOICES = [
    ("", "Hide expired"),
    ("include", "Include expired"),
    ("only", "Only expired"),
]


class MemoryFilterForm(forms.Form):
    """The filters of a mind's memory table (all optional; read from the query string)."""

    q = forms.CharField(label="Search", required=False, max_length=500)
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
    tag = forms.CharField(label="Tag", required=False, max_length=64)
    expired = forms.ChoiceField(label="Expired", required=False, choices=EXPIRED_CHOICES)
    sort = forms.ChoiceField(
        label="Sort by",
        required=False,
        choices=[(value, label) for value, (label, _) in SORTS.items()],
    )


class MemoryEditForm(forms.Form):
    """What a person may change on a memory; the service cleans and audits it."""

    category = forms.ChoiceField(label="Category", choices=CATEGORY_CHOICES)
    key = forms.CharField(label="Key", max_length=MAX_KEY_LENGTH)
    content = forms.CharField(
        label="Content",
        max_length=MAX_CONTENT_LENGTH,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8}),
    )
    tags = forms.CharField(
        label="Tags",
        required=False,
        help_text="Comma-separated, e.g. docker, deploy. Stored lower-case.",
    )
    priority = forms.ChoiceField(label="Priority", choices=PRIORITY_CHOICES)
    confidence = forms.FloatField(
        label="Confidence",
        min_value=0.0,
        max_value=1.0,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
        help_text="From 0.0 to 1.0.",
    )
    expires_at = forms.DateTimeField(
        label="Expires at (UTC)",
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Leave empty to keep it forever.",
    )

    @classmethod
    def initial_for(cls, memory) -> dict:
        expires = memory.expires_at.astimezone(UTC) if memory.expires_at else None
        return {
            "category": memory.category,
            "key": memory.key,
            "content": memory.content,
            "tags": ", ".join(memory.tags),
            "priority": memory.priority_name,
            "confidence": memory.confidence,
            "expires_at": expires.replace(tzinfo=None) if expires else None,
        }

    def clean_tags(self) -> list[str]:
        return [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]

    def clean_expires_at(self):
        value = self.cleaned_data["expires_at"]
        # The field is labelled UTC; Django would read it in the current time zone (also UTC).
        return value.astimezone(UTC) if value else None

    def changed_values(self, memory) -> dict:
        """Only what differs from the stored memory, as arguments for `memory_update`."""
        data = self.cleaned_data
        current = {
            "category": memory.category,
            "key": memory.key,
            "content": memory.content,
            "tags": list(memory.tags),
            "priority": memory.priority_name,
            "confidence": memory.confidence,
            "expires_at": memory.expires_at,
        }
        changed = {name: data[name] for name in current if data[name] != current[name]}
        if "expires_at" in changed and _same_minute(data["expires_at"], memory.expires_at):
            # The input shows minutes: an untouched field must not shave off the seconds.
            del changed["expires_at"]
        return changed


def _same_minute(first, second) -> bool:
    if first is None or second is None:
        return False
    return first.replace(second=0, microsecond=0) == second.replace(second=0, microsecond=0)
