"""A mind's Webhooks tab: its webhooks, adding one (its secret shown once), and per webhook
its settings, a new secret, a test event, and the delivery log with each attempt and a
redelivery. Every write is a webhooks service; every read a webhooks selector."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import Conflict, Invalid, NotFound
from dashboard.forms import WebhookForm
from dashboard.views.common import (
    SelectorPages,
    form_send,
    mind_at,
    next_url,
    paged,
    sent_before,
)
from memories.actors import Actor
from minds.access import Level
from minds.models import Mind
from webhooks.models import Webhook, WebhookAttempt, WebhookDelivery
from webhooks.selectors import (
    delivery_attempts,
    delivery_get,
    delivery_page,
    webhook_get,
    webhook_list,
)
from webhooks.services import (
    ROTATION_GRACE,
    delivery_redeliver,
    webhook_create,
    webhook_delete,
    webhook_rotate_secret,
    webhook_test,
    webhook_update,
)

STATUSES = tuple(WebhookDelivery.Status.values)


def own_webhook(request: HttpRequest, mind_id: str, webhook_id: str) -> tuple[Mind, Webhook]:
    """The person's mind and its webhook `webhook_id`; a 404 for anything else."""
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    try:
        return mind, webhook_get(mind=mind, webhook_id=webhook_id)
    except NotFound as exc:
        raise Http404(exc.detail) from None


def _list_url(mind_id: str) -> str:
    return reverse("dashboard:webhooks", args=[mind_id])


def _webhook_url(webhook: Webhook) -> str:
    return reverse("dashboard:webhook", args=[webhook.mind_id, webhook.pk])


def _delivery_url(delivery: WebhookDelivery) -> str:
    return reverse(
        "dashboard:webhook-delivery",
        args=[delivery.webhook.mind_id, delivery.webhook_id, delivery.pk],
    )


# --- A form sent twice (a reload of the page that shows a secret) ----------------------------


def _already_done(request: HttpRequest, mind: Mind, webhook_id: str, what: str) -> HttpResponse:
    try:
        url = _webhook_url(webhook_get(mind=mind, webhook_id=webhook_id))
    except NotFound:
        url = _list_url(mind.pk)
    return sent_before(
        request,
        url,
        what=what,
        hint="A secret is shown only once: make a new one with “New secret” if it was not copied.",
    )


def _secret_page(
    request: HttpRequest, mind: Mind, webhook: Webhook, secret: str, *, rotated: bool
) -> HttpResponse:
    """The secret, in the answer to the POST that made it and kept nowhere else (as the
    Mind Key page does): this page is its only copy."""
    response = render(
        request,
        "dashboard/webhook_secret.html",
        {
            "mind": mind,
            "webhook": webhook,
            "secret": secret,
            "rotated": rotated,
            "grace_hours": _grace_hours(),
        },
    )
    response["Cache-Control"] = "no-store"
    return response


def _grace_hours() -> int:
    return int(ROTATION_GRACE.total_seconds() // 3600)


def _core_errors_on(form: WebhookForm, invalid: Invalid) -> None:
    """The core's messages on the fields they name (the rest above the form)."""
    for name, field_messages in invalid.fields.items():
        for message in field_messages:
            form.add_error(name if name in form.fields else None, message)


# --- The list, and adding a webhook ----------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    form = WebhookForm(request.POST or None, creating=True, initial={"events": ["*"]})
    if request.method == "POST" and form.is_valid():
        try:
            with form_send(request) as send:
                if not send.first:
                    return _already_done(request, mind, send.target, "no webhook was added")
                registered = webhook_create(mind=mind, body=form.body())
                send.acted_on(registered.webhook.pk)
        except Invalid as exc:  # the core's, or the form's token (too old, not from this page)
            _core_errors_on(form, exc)
        except Conflict as exc:  # at most so many webhooks per mind
            form.add_error(None, exc.detail)
        else:
            webhook = registered.webhook
            if registered.secret is None:
                messages.success(request, "Webhook added: it signs with the secret you gave.")
                return redirect(_webhook_url(webhook))
            messages.success(request, "Webhook added.")
            return _secret_page(request, mind, webhook, registered.secret, rotated=False)
    return render(
        request,
        "dashboard/webhooks.html",
        {
            "mind": mind,
            "webhooks": webhook_list(mind=mind),
            "form": form,
        },
    )


# --- One webhook: its settings and its delivery log ------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def webhook_detail(request: HttpRequest, mind_id: str, webhook_id: str) -> HttpResponse:
    mind, webhook = own_webhook(request, mind_id, webhook_id)
    form = WebhookForm(
        request.POST or None, creating=False, initial=WebhookForm.initial_for(webhook)
    )
    if request.method == "POST" and form.is_valid():
        changes = form.changed_values(webhook)
        if not changes:
            messages.info(request, "Nothing changed, so nothing was saved.")
            return redirect(_webhook_url(webhook))
        try:
            webhook_update(webhook=webhook, body=changes)
        except Invalid as exc:
            _core_errors_on(form, exc)
            _, webhook = own_webhook(request, mind_id, webhook_id)
        else:
            messages.success(request, "Saved.")
            return redirect(_webhook_url(webhook))
    status = request.GET.get("status", "")
    status = status if status in STATUSES else ""
    page = paged(request, SelectorPages(delivery_page, webhook=webhook, status=status or None))
    return render(
        request,
        "dashboard/webhook_detail.html",
        {
            "mind": mind,
            "webhook": webhook,
            "form": form,
            "page": page,
            "status": status,
            "statuses": STATUSES,
            "tested": _tested(webhook, request.GET.get("tested", "")),
            "grace_hours": _grace_hours(),
            "now": timezone.now(),
        },
    )


def _tested(webhook: Webhook, delivery_id: str) -> dict[str, Any] | None:
    """The test event `?tested=` names, as its panel shows it: the delivery and its attempt."""
    if not delivery_id:
        return None
    try:
        delivery = delivery_get(webhook=webhook, delivery_id=delivery_id)
    except NotFound:
        return None
    tries = delivery_attempts(delivery=delivery)
    last: WebhookAttempt | None = tries[-1] if tries else None
    return {"delivery": delivery, "attempt": last}


@login_required
@require_POST
def webhook_enable(request: HttpRequest, mind_id: str, webhook_id: str) -> HttpResponse:
    _, webhook = own_webhook(request, mind_id, webhook_id)
    try:
        webhook_update(webhook=webhook, body={"enabled": True})
    except Invalid as exc:
        messages.error(request, exc.text())
    else:
        messages.success(
            request,
            "Enabled again: changes from now on are sent. Those made while it was disabled "
            "are not.",
        )
    return redirect(next_url(request, _webhook_url(webhook)))


@login_required
@require_POST
def webhook_send_test(request: HttpRequest, mind_id: str, webhook_id: str) -> HttpResponse:
    """Send a ping now and show how the receiver answered (the page reads it by its id, so
    a reload shows it again without sending another)."""
    _, webhook = own_webhook(request, mind_id, webhook_id)
    delivery = webhook_test(webhook=webhook, actor=Actor.for_user(request.user))
    if delivery.status == WebhookDelivery.Status.DELIVERED:
        messages.success(
            request,
            f"Test event delivered: HTTP {delivery.response_status} in {delivery.duration_ms} ms.",
        )
    else:
        outcome = (
            f"HTTP {delivery.response_status}"
            if delivery.response_status is not None
            else delivery.error
        )
        messages.error(request, f"Test event not delivered: {outcome}")
    return redirect(f"{_webhook_url(webhook)}?tested={delivery.pk}#test-result")


# --- A new secret, and deleting ---------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def webhook_rotate(request: HttpRequest, mind_id: str, webhook_id: str) -> HttpResponse:
    mind, webhook = own_webhook(request, mind_id, webhook_id)
    if request.method == "GET":
        return render(
            request,
            "dashboard/webhook_rotate.html",
            {
                "mind": mind,
                "webhook": webhook,
                "grace_hours": _grace_hours(),
            },
        )
    try:
        with form_send(request) as send:
            if not send.first:
                return _already_done(request, mind, webhook.pk, "the secret was not replaced")
            secret = webhook_rotate_secret(webhook=webhook)
            send.acted_on(webhook.pk)
    except Invalid as exc:  # the form's token: too old, or not from this page
        messages.error(request, exc.detail)
        return redirect(reverse("dashboard:webhook-rotate", args=[mind.pk, webhook.pk]))
    return _secret_page(request, mind, webhook, secret, rotated=True)


@login_required
@require_http_methods(["GET", "POST"])
def webhook_delete_confirm(request: HttpRequest, mind_id: str, webhook_id: str) -> HttpResponse:
    mind, webhook = own_webhook(request, mind_id, webhook_id)
    if request.method == "POST":
        url = webhook.url
        webhook_delete(webhook=webhook)
        messages.success(request, f"Deleted the webhook to {url} and its delivery log.")
        return redirect(_list_url(mind.pk))
    _, deliveries = delivery_page(webhook=webhook, limit=1)
    return render(
        request,
        "dashboard/webhook_delete.html",
        {"mind": mind, "webhook": webhook, "deliveries": deliveries},
    )


# --- One delivery: its attempts, and sending it again ----------------------------------------


def _own_delivery(
    request: HttpRequest, mind_id: str, webhook_id: str, delivery_id: str
) -> tuple[Mind, Webhook, WebhookDelivery]:
    mind, webhook = own_webhook(request, mind_id, webhook_id)
    try:
        return mind, webhook, delivery_get(webhook=webhook, delivery_id=delivery_id)
    except NotFound as exc:
        raise Http404(exc.detail) from None


@login_required
def delivery_detail(
    request: HttpRequest, mind_id: str, webhook_id: str, delivery_id: str
) -> HttpResponse:
    mind, webhook, delivery = _own_delivery(request, mind_id, webhook_id, delivery_id)
    return render(
        request,
        "dashboard/webhook_delivery.html",
        {
            "mind": mind,
            "webhook": webhook,
            "delivery": delivery,
            "attempts": delivery_attempts(delivery=delivery),
        },
    )


@login_required
@require_POST
def delivery_redeliver_view(
    request: HttpRequest, mind_id: str, webhook_id: str, delivery_id: str
) -> HttpResponse:
    _, _, delivery = _own_delivery(request, mind_id, webhook_id, delivery_id)
    try:
        delivery_redeliver(delivery=delivery)
    except Conflict as exc:  # the webhook is disabled
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            f"{delivery.event.type} #{delivery.seq} will be sent again shortly, "
            "in a new round of attempts.",
        )
    return redirect(next_url(request, _delivery_url(delivery)))
