"""The OAuth consent page, and revoking a connected app.

An app (a hosted assistant) sends the person here with an authorization request; they sign
in if they are not, see which app asks, pick one mind they may write and allow or deny.
django-oauth-toolkit's AuthorizationView validates the request and issues the code; this
view adds what Synapse requires: PKCE with S256 only, the one resource (this server's
/mcp), and the mind, recorded as a connection (connections/services.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import Application
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from connections.models import Connection
from connections.rules import mcp_resource
from connections.selectors import minds_to_connect
from connections.services import connect, disconnect
from core.errors import Forbidden, NotFound
from dashboard.views.common import mind_at
from minds.access import Level
from synapse_site.middleware import ContentSecurityPolicyMiddleware
from synapse_site.origin import origin

PKCE_METHOD = "S256"
PICK_A_MIND = "Pick the mind this app may use."


class ConsentForm(AllowForm):
    mind = forms.ChoiceField(
        label="Mind", required=False, error_messages={"invalid_choice": PICK_A_MIND}
    )

    def __init__(self, *args: Any, minds: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["mind"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = minds


def _refusal(error: str, description: str, *, state: str | None, redirect_uri: str) -> Any:
    return OAuthToolkitError(
        error=CustomOAuth2Error(error=error, description=description, state=state),
        redirect_uri=redirect_uri,
    )


class ConsentView(AuthorizationView):
    template_name = "dashboard/oauth_consent.html"

    def validate_authorization_request(self, request: HttpRequest) -> Any:
        """The library's checks (client, exact redirect URI, response type), then ours; ours
        are refused back to the app's redirect URI, which is known to be registered."""
        scopes, credentials = super().validate_authorization_request(request)
        state, redirect_uri = credentials.get("state"), credentials["redirect_uri"]
        if credentials.get("code_challenge_method") != PKCE_METHOD:
            raise _refusal(
                "invalid_request",
                "PKCE with code_challenge_method=S256 is required.",
                state=state,
                redirect_uri=redirect_uri,
            )
        expected = mcp_resource(origin(request))
        if any(value != expected for value in request.GET.getlist("resource")):
            raise _refusal(
                "invalid_target",
                f"Tokens here are issued for {expected} only.",
                state=state,
                redirect_uri=redirect_uri,
            )
        return scopes, credentials

    def get_form(self, form_class: Any = None) -> ConsentForm:
        minds = [(mind.pk, mind.name) for mind in minds_to_connect(person=self.request.user)]
        # No mind is picked for the person: they choose one on purpose.
        choices = [("", "Choose a mind…"), *minds] if minds else []
        return ConsentForm(**self.get_form_kwargs(), minds=choices)

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        data = form.cleaned_data
        expected = mcp_resource(origin(self.request))
        # Hidden fields come back from the browser: the checks of the GET, once more.
        if data.get("code_challenge_method") != PKCE_METHOD or data.get("resource", "") not in (
            "",
            expected,
        ):
            return self.form_invalid(form)
        data["resource"] = expected
        if not data.get("allow"):
            return self._answer(form)  # denied: the app is told access_denied
        if not data.get("mind"):
            form.add_error("mind", PICK_A_MIND)
            return self.form_invalid(form)
        application = get_object_or_404(Application, client_id=data["client_id"])
        # The connection first (moving it ends the app's old codes and tokens), then the
        # code; when the library refuses the request after all, the connection is undone.
        with transaction.atomic():
            try:
                connect(
                    application=application,
                    person=self.request.user,
                    mind_id=data["mind"],
                    resource=expected,
                )
            except (NotFound, Forbidden):
                form.add_error("mind", PICK_A_MIND)
                return self.form_invalid(form)
            response = self._answer(form)
            if self.success_url is None:
                transaction.set_rollback(True)
        return response

    def _answer(self, form: ConsentForm) -> HttpResponse:
        """The library's answer: the code (or access_denied) sent to the app's redirect URI;
        `success_url` is set only when it issued one."""
        self.success_url = None
        response: HttpResponse = super().form_valid(form)
        return response

    def form_invalid(self, form: ConsentForm) -> HttpResponse:
        """The page again with its errors; the app and its redirect URI named only as
        registered (the hidden fields come back from the browser)."""
        context = self.get_context_data(form=form)
        client_id, redirect_uri = form.data.get("client_id", ""), form.data.get("redirect_uri")
        application = Application.objects.filter(client_id=client_id).first()
        context.setdefault("application", application)
        if application is not None and redirect_uri in application.redirect_uris.split():
            context.setdefault("redirect_uri", redirect_uri)
        return self.render_to_response(context, status=400)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["has_minds"] = bool(context["form"].fields["mind"].choices)
        return context

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        # A registered redirect URI (validated on the GET, checked on a refused POST).
        parts = urlsplit(context.get("redirect_uri") or "")
        context["redirect_host"] = parts.netloc
        response = super().render_to_response(context, **kwargs)
        # The answer to the form is a redirect to the app: the browser must be let go there.
        if parts.scheme in ("http", "https") and parts.netloc:
            policy = ContentSecurityPolicyMiddleware.POLICY.replace(
                "form-action 'self'", f"form-action 'self' {parts.scheme}://{parts.netloc}"
            )
            response["Content-Security-Policy"] = policy
        response["Cache-Control"] = "no-store"
        return response


@login_required
@require_http_methods(["GET", "POST"])
def connection_revoke(request: HttpRequest, mind_id: str, connection_id: int) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    connection = get_object_or_404(
        Connection.objects.select_related("application", "person"), pk=connection_id, mind=mind
    )
    if request.method == "POST":
        name = connection.application.name or connection.application.client_id
        disconnect(connection=connection)
        messages.success(request, f"Disconnected {name}: its tokens stop working at once.")
        return redirect(reverse("dashboard:mind-settings", args=[mind.pk]) + "#connections")
    return render(
        request, "dashboard/connection_revoke.html", {"mind": mind, "connection": connection}
    )
