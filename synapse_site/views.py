"""Service pages: GET /health, /health/ready and /metrics, and GET / (the guide)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.log import log_response
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    permission_classes,
    throttle_classes,
)
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from memories.models import Memory
from minds.models import Mind
from synapse_site import metrics as site_metrics
from synapse_site import readiness
from synapse_site.credentials import bearer_token
from synapse_site.errors import ErrorBody, error_body
from synapse_site.origin import origin


@extend_schema(
    responses=inline_serializer(
        "Health",
        {
            "status": serializers.CharField(),
            "users": serializers.IntegerField(required=False, help_text="Staff only."),
            "minds": serializers.IntegerField(required=False, help_text="Staff only."),
            "memories": serializers.IntegerField(required=False, help_text="Staff only."),
        },
    )
)
@api_view(["GET"])
@authentication_classes([SessionAuthentication])
@permission_classes([AllowAny])
def health(request: Request) -> Response:
    """Liveness; touches the database, so a broken one shows here. The site-wide counts are
    for staff (signed in to the admin or the dashboard): they tell outsiders how big the
    service is."""
    body: dict[str, object] = {"status": "ok"}
    Mind.objects.exists()
    if request.user.is_staff:
        body["users"] = get_user_model().objects.count()
        body["minds"] = Mind.objects.count()
        body["memories"] = Memory.objects.count()
    return Response(body)


class NotReadyBody(ErrorBody):
    failed: list[str]  # the names of the checks that failed
    checks: dict[str, str]  # every check's name: what it found


# An operator's probe, not part of the agents' API: no schema entry, no credential, no throttle.
@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
@throttle_classes([])
def health_ready(request: Request) -> Response:
    """Readiness: 200 when the database answers, every migration is applied and (with search
    by meaning on) a background worker was heard from lately; else 503 naming what failed."""
    checks = readiness.checks()
    results = {check.name: check.detail for check in checks}
    failed = [check for check in checks if not check.ok]
    if not failed:
        return Response({"status": "ready", "checks": results})
    reasons = "; ".join(f"{check.name}: {check.detail}" for check in failed)
    body: NotReadyBody = {
        **error_body("unavailable", f"Not ready: {reasons}."),
        "failed": [check.name for check in failed],
        "checks": results,
    }
    response = Response(body, status=503)
    # A probe fails while a service starts or a worker restarts: a warning, once, naming
    # why (Django would log any 5xx as an error).
    log_response("Not ready: %s", reasons, response=response, request=request, level="warning")
    return response


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics; a 404 unless SYNAPSE_METRICS_TOKEN is set, then that Bearer token."""
    expected = settings.SYNAPSE_METRICS_TOKEN
    if not expected:
        raise Http404
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse(
            error_body("method_not_allowed", f"{request.method} is not allowed here; use GET."),
            status=405,
        )
        response["Allow"] = "GET, HEAD"
        return response
    sent = bearer_token(request)
    if sent is None:
        refused = error_body(
            "not_authenticated", "Send the metrics token as `Authorization: Bearer <token>`."
        )
    elif not hmac.compare_digest(sent.encode(), expected.encode()):
        refused = error_body("authentication_failed", "This is not the metrics token.")
    else:
        return HttpResponse(site_metrics.exposition(), content_type=site_metrics.CONTENT_TYPE)
    response = JsonResponse(refused, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


GUIDE = """\
Synapse: long-term memory for LLM agents
========================================

You are talking to a Synapse server at {base}.
Every memory call sends your Mind Key (it starts with mk_) as a Bearer token. Put the key
in the environment once; the commands below read it from there (in double quotes, so the
shell fills it in):
  export SYNAPSE_KEY='mk_...your key...'

No key yet? A person creates an account, logs in and creates a mind; the last command
puts the new mind's key into SYNAPSE_KEY (the key is shown only once: keep it secret):
  curl -s {base}/register -H 'Content-Type: application/json' \\
       -d '{{"email": "you@example.com", "password": "a long passphrase"}}'
  export SYNAPSE_ACCESS=$(curl -s {base}/login -H 'Content-Type: application/json' \\
       -d '{{"email": "you@example.com", "password": "a long passphrase"}}' \\
       | python3 -c 'import json, sys; print(json.load(sys.stdin)["access"])')
  export SYNAPSE_KEY=$(curl -s {base}/minds -H "Authorization: Bearer $SYNAPSE_ACCESS" \\
       -H 'Content-Type: application/json' -d '{{"name": "My assistant"}}' \\
       | python3 -c 'import json, sys; print(json.load(sys.stdin)["mind_key"])')

1. At the start of every session, recall (plain text, most important first):
  curl -s {base}/memory/recall -H "Authorization: Bearer $SYNAPSE_KEY"
  Add ?budget=2000 to fit about 2000 tokens. Starting a task? Add &about=the+task+in+a+few+words
  too: the critical memories, then the ones that matter for the task, best first.

2. When you learn something worth keeping, store it under a stable key
   (same category + key again updates it instead of duplicating):
  curl -s {base}/memory -H "Authorization: Bearer $SYNAPSE_KEY" \\
       -H 'Content-Type: application/json' \\
       -d '{{"category": "preference", "key": "preference_editor",
            "content": "Uses Neovim with the LazyVim setup", "tags": ["tools"],
            "priority": "normal"}}'
  Categories: identity preference fact project skill mistake context note.
  Priorities: low normal high critical.

3. To look something up, search in plain words:
  curl -s '{base}/memory/search?q=which+editor+does+the+user+use' \\
       -H "Authorization: Bearer $SYNAPSE_KEY"

4. The person may write to you in the dashboard's chat while you are away. At the start
   of a session and after each task, GET {base}/chat/poll (with your key: the messages you
   have not read yet), and answer one with POST {base}/chat/reply
   {{"content": "...", "reply_to_id": <its id>}}.

What you store is marked unverified until a person checks it in the dashboard.
API reference: {base}/api/docs   OpenAPI schema: {base}/api/schema
Service health: {base}/health
"""


@extend_schema(exclude=True)
def guide(request: HttpRequest) -> HttpResponse:
    base = origin(request)
    text = GUIDE.format(base=base)
    accept = request.headers.get("Accept", "")
    if "text/html" in accept:
        return render(request, "guide.html", {"guide": text, "base": base})
    return HttpResponse(text, content_type="text/plain; charset=utf-8")
