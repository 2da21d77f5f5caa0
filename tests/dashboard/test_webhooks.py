"""The Webhooks tab: the list, adding one (its secret shown once), editing, enabling again,
a new secret, deleting, the test button, the delivery log and redelivering."""

from __future__ import annotations

import re
from datetime import UTC

import pytest
from django.test import Client
from django.utils import timezone

from tests import factories
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending
from webhooks import services
from webhooks.events import fan_out
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db

SECRET = whsec(b"0123456789abcdef0123")
# A loopback address nothing is ever sent to here: the tests that send start a receiver.
UNUSED = "http://127.0.0.1:9/hook"
TOKEN = re.compile(r'name="form_token" value="([^"]+)"')


@pytest.fixture(autouse=True)
def _private_allowed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True


def remember(mind, *args, **fields):
    """A memory stored, and its events made into deliveries as the worker makes them."""
    memory = factories.remember(mind, *args, **fields)
    for webhook in Webhook.objects.filter(mind=mind, enabled=True):
        fan_out(webhook, now=timezone.now())
    return memory


def hook(mind, url=UNUSED, **body) -> Webhook:
    return webhook_create(mind=mind, body={"url": url, "secret": SECRET, **body}).webhook


def base(mind) -> str:
    return f"/dashboard/minds/{mind.pk}/webhooks/"


def page_of(webhook) -> str:
    return f"/dashboard/minds/{webhook.mind_id}/webhooks/{webhook.pk}/"


def form_token(web, url: str) -> str:
    return TOKEN.search(web.get(url).content.decode())[1]


def add(web, mind, body: dict):
    """Send the add form as the page does: with the token it was shown with."""
    return web.post(base(mind), {**body, "form_token": form_token(web, base(mind))})


# --- The list and the tab ---------------------------------------------------------------------


def test_the_tab_sits_beside_the_others(web, mind):
    html = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert f'href="{base(mind)}">Webhooks</a>' in html
    page = web.get(base(mind))
    assert page.status_code == 200
    assert f'href="{base(mind)}" aria-current="page">Webhooks</a>' in page.content.decode()
    assert "No webhooks yet" in page.content.decode()


def test_the_list_shows_each_webhook_its_events_and_state(web, mind, stranger_mind):
    hook(mind, "http://127.0.0.1:9/one", events="memory.created,memory.deleted")
    hook(mind, "http://127.0.0.1:9/two", enabled=False)
    hook(stranger_mind.mind, "http://127.0.0.1:9/theirs")
    html = web.get(base(mind)).content.decode()
    assert "http://127.0.0.1:9/one" in html and "http://127.0.0.1:9/two" in html
    assert "memory.created, memory.deleted" in html
    assert html.count(">enabled</span>") == 1 and ">disabled</span>" in html
    assert "theirs" not in html


# --- Adding one -------------------------------------------------------------------------------


def test_adding_shows_the_generated_secret_once_and_keeps_it_nowhere(web, mind):
    token = form_token(web, base(mind))
    page = web.post(
        base(mind),
        {"url": UNUSED, "events": ["memory.created", "memory.verified"], "form_token": token},
    )
    assert page.status_code == 200  # the answer to the POST is the secret's only copy
    assert page["Cache-Control"] == "no-store"
    secret = page.context["secret"]
    assert secret.startswith("whsec_")
    html = page.content.decode()
    assert f'value="{secret}"' in html and 'data-copy-target="webhook-secret"' in html
    assert "shown only this once" in html
    webhook = Webhook.objects.get(mind=mind)
    assert (webhook.url, webhook.events) == (UNUSED, ["memory.created", "memory.verified"])
    # Nowhere else: not in the session, not in a cookie, not on any later page.
    assert secret not in str(dict(web.session.items()))
    assert all(secret not in morsel.value for morsel in web.cookies.values())
    for url in (base(mind), page_of(webhook)):
        assert secret not in web.get(url).content.decode()


def test_sending_the_add_form_again_adds_nothing_more(web, mind):
    form = {"url": UNUSED, "events": ["*"], "form_token": form_token(web, base(mind))}
    first = web.post(base(mind), form)
    assert first.status_code == 200
    again = web.post(base(mind), form, follow=True)
    webhook = Webhook.objects.get(mind=mind)  # still one
    assert again.redirect_chain == [(page_of(webhook), 302)]
    html = again.content.decode()
    assert "sent before" in html and first.context["secret"] not in html


def test_a_given_secret_is_kept_and_not_shown_back(web, mind):
    form = {
        "url": UNUSED,
        "events": ["*"],
        "secret": SECRET,
        "form_token": form_token(web, base(mind)),
    }
    response = web.post(base(mind), form, follow=True)
    webhook = Webhook.objects.get(mind=mind)
    assert response.redirect_chain == [(page_of(webhook), 302)]
    assert SECRET not in response.content.decode()
    assert "signs with the secret you gave" in response.content.decode()


def test_bad_input_names_the_field_and_keeps_what_was_typed(web, mind):
    body = {"url": "ftp://example.com/in", "events": ["memory.*"]}
    response = add(web, mind, body)
    assert response.status_code == 200
    form = response.context["form"]
    assert form.errors["url"] == ["Use an https:// URL."]
    html = response.content.decode()
    assert html.startswith("<!doctype html>") and "<title>Error: Webhooks" in html
    assert 'value="ftp://example.com/in"' in html
    assert re.search(r'value="memory\.\*"[^>]* checked', html)
    assert not Webhook.objects.exists()

    response = add(web, mind, {"url": UNUSED, "secret": "short"})
    errors = response.context["form"].errors
    assert "Name at least one event" in errors["events"][0]
    assert errors["secret"] == ["Use 8 to 200 characters."]
    assert 'value="short"' not in response.content.decode()  # a secret is typed again
    assert not Webhook.objects.exists()


def test_a_private_destination_is_refused_on_the_form(web, mind, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    response = add(web, mind, {"url": UNUSED, "events": ["*"]})
    assert response.status_code == 200
    assert "a loopback address" in response.context["form"].errors["url"][0]
    assert not Webhook.objects.exists()


def test_the_cap_on_webhooks_is_said_above_the_form(web, mind, monkeypatch):
    monkeypatch.setattr(services, "MAX_WEBHOOKS", 1)
    hook(mind)
    response = add(web, mind, {"url": UNUSED, "events": ["*"]})
    assert response.status_code == 200
    assert "at most 1 webhooks" in response.content.decode()
    assert Webhook.objects.filter(mind=mind).count() == 1


# --- One webhook: settings, enabling again, a new secret, deleting ----------------------------


def test_editing_saves_only_what_changed(web, mind):
    webhook = hook(mind, events="*")
    page = web.get(page_of(webhook))
    assert page.context["form"].initial == {"url": UNUSED, "events": ["*"], "enabled": True}
    response = web.post(page_of(webhook), {"url": UNUSED, "events": ["*"], "enabled": "on"})
    assert "Nothing changed" in web.get(response["Location"]).content.decode()

    form = {"url": "http://127.0.0.1:9/other", "events": ["memory.deleted"]}  # unticked
    response = web.post(page_of(webhook), form, follow=True)
    assert "Saved." in response.content.decode()
    webhook.refresh_from_db()
    assert webhook.url == "http://127.0.0.1:9/other"
    assert webhook.events == ["memory.deleted"]
    assert not webhook.enabled and webhook.disabled_reason == ""
    assert "turned off by a person" in response.content.decode()


def test_editing_with_bad_input_keeps_it_and_changes_nothing(web, mind):
    webhook = hook(mind)
    response = web.post(page_of(webhook), {"url": "not a url", "events": [], "enabled": "on"})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["url"] == ["A URL holds no spaces or control characters."]
    assert "Name at least one event" in errors["events"][0]
    assert 'value="not a url"' in response.content.decode()
    webhook.refresh_from_db()
    assert (webhook.url, webhook.events) == (UNUSED, ["*"])


def test_a_disabled_webhook_says_why_and_when_and_is_enabled_again(web, mind):
    webhook = hook(mind)
    when = timezone.now().replace(microsecond=0)
    reason = "8 attempts over 32 hours failed; the last: HTTP 503"
    Webhook.objects.filter(pk=webhook.pk).update(
        enabled=False, disabled_reason=reason, disabled_at=when
    )
    shown = f'<time datetime="{when.astimezone(UTC).isoformat()}"'
    for url in (base(mind), page_of(webhook)):
        html = web.get(url).content.decode()
        assert reason in html and shown in html
        assert "Enable again" in html

    response = web.post(f"{page_of(webhook)}enable/", {"next": base(mind)}, follow=True)
    assert response.redirect_chain == [(base(mind), 302)]
    assert "Enabled again" in response.content.decode()
    webhook.refresh_from_db()
    assert webhook.enabled and webhook.disabled_reason == "" and webhook.disabled_at is None
    assert "Enable again" not in response.content.decode()


def test_a_new_secret_is_asked_for_shown_once_and_the_old_one_still_signs(web, mind):
    webhook = hook(mind)
    confirm = web.get(f"{page_of(webhook)}new-secret/")
    assert "keeps signing them as well for 24 hours" in confirm.content.decode()
    webhook.refresh_from_db()
    assert webhook.previous_secret_until is None  # asking changed nothing

    form = {"form_token": TOKEN.search(confirm.content.decode())[1]}
    response = web.post(f"{page_of(webhook)}new-secret/", form)
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    new = response.context["secret"]
    assert new.startswith("whsec_") and new != SECRET
    assert "The previous secret keeps signing deliveries for 24 hours" in (
        response.content.decode()
    )
    # Sent again (a reload): the secret just shown stays the one in force.
    again = web.post(f"{page_of(webhook)}new-secret/", form, follow=True)
    assert "sent before" in again.content.decode() and new not in again.content.decode()
    with receiving() as receiver:
        Webhook.objects.filter(pk=webhook.pk).update(url=receiver.url)
        web.post(f"{page_of(webhook)}test/")
        assert receiver.verified(new) and receiver.verified(SECRET)


def test_delete_asks_first_then_deletes_with_the_log(web, mind):
    webhook = hook(mind)
    remember(mind, "a", "one")
    confirm = web.get(f"{page_of(webhook)}delete/")
    assert "1 delivery" in confirm.content.decode()
    assert Webhook.objects.filter(pk=webhook.pk).exists()
    response = web.post(f"{page_of(webhook)}delete/", follow=True)
    assert response.redirect_chain == [(base(mind), 302)]
    assert "Deleted the webhook" in response.content.decode()
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()


# --- The test button --------------------------------------------------------------------------


def test_the_test_button_sends_a_ping_and_shows_the_answer(web, mind, owner):
    with receiving(answer_body=b"pong from the receiver") as receiver:
        webhook = hook(mind, receiver.url)
        response = web.post(f"{page_of(webhook)}test/")
        (ping,) = receiver.verified(SECRET)
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    assert response["Location"] == f"{page_of(webhook)}?tested={delivery.pk}#test-result"
    assert ping["type"] == "ping"
    assert ping["data"]["actor"] == {"type": "user", "name": owner.email}
    html = web.get(response["Location"]).content.decode()
    assert re.search(r"Test event delivered: HTTP 200 in \d+ ms\.", html)
    result = html[html.index('id="test-result"') :]
    assert "HTTP 200" in result and "pong from the receiver" in result
    assert f"{delivery.duration_ms} ms" in result
    assert "ping" in html[html.index("<table") :]  # and in the log


def test_a_failed_test_shows_the_status_and_the_answer(web, mind):
    with receiving(answers=[500], answer_body=b"database is away") as receiver:
        webhook = hook(mind, receiver.url)
        response = web.post(f"{page_of(webhook)}test/", follow=True)
        assert len(receiver.received) == 1
    html = response.content.decode()
    assert "Test event not delivered: HTTP 500" in html
    assert "database is away" in html[html.index('id="test-result"') :]
    assert WebhookDelivery.objects.get().status == "failed"  # a ping is not retried


def test_a_refused_destination_shows_the_error_without_sending(web, mind, settings):
    with receiving() as receiver:
        webhook = hook(mind, receiver.url)
        settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
        response = web.post(f"{page_of(webhook)}test/", follow=True)
        assert receiver.received == []
    html = response.content.decode()
    assert "Test event not delivered: Not sent:" in html and "a loopback address" in html


def test_a_tested_id_of_nothing_shows_no_result(web, mind, stranger_mind):
    theirs = hook(stranger_mind.mind)
    remember(stranger_mind.mind, "a", "one")
    their_delivery = WebhookDelivery.objects.get(webhook=theirs)
    webhook = hook(mind)
    for tested in ("dlv_nothing", their_delivery.pk, "x\x00"):
        page = web.get(page_of(webhook), {"tested": tested})
        assert page.status_code == 200 and page.context["tested"] is None


# --- The delivery log, a delivery's attempts, redelivering ------------------------------------


def test_the_log_is_newest_first_fifty_a_page(web, mind):
    webhook = hook(mind)
    for n in range(53):
        remember(mind, f"k{n}", "text")
    page = web.get(page_of(webhook))
    rows = page.context["page"]
    assert page.context["page"].paginator.count == 53
    assert [d.seq for d in rows][:3] == [53, 52, 51] and len(rows) == 50
    html = page.content.decode()
    assert "Page 1 of 2" in html and "53 deliveries." in html
    second = web.get(page_of(webhook), {"page": 2}).context["page"]
    assert [d.seq for d in second] == [3, 2, 1]
    row = re.search(r"<tr>\s*<th scope=\"row\".*?</tr>", html, re.S)[0]
    for shown in ("memory.created", ">53<", "pending", ">0<", "Redeliver"):
        assert shown in row, shown


def test_the_log_filters_by_status(web, mind):
    with receiving(answers=[200, 500]) as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        remember(mind, "b", "two")
        sending.deliver_due()
    delivered = web.get(page_of(webhook), {"status": "delivered"}).context["page"]
    assert [d.seq for d in delivered] == [1]
    pending = web.get(page_of(webhook), {"status": "pending"}).context["page"]
    assert [d.seq for d in pending] == [2]
    anything = web.get(page_of(webhook), {"status": "nonsense"})
    assert anything.status_code == 200 and anything.context["page"].paginator.count == 2


def test_a_delivery_lists_each_attempt_and_is_redelivered(web, mind):
    with receiving(answers=[503], answer_body=b"try later") as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        sending.deliver_due()
        delivery = WebhookDelivery.objects.get()
        url = f"{page_of(webhook)}deliveries/{delivery.pk}/"
        page = web.get(url)
        html = page.content.decode()
        assert [a.response_status for a in page.context["attempts"]] == [503]
        assert "try later" in html and "memory.created #1" in html
        assert "pending" in html and delivery.event_id in html
        log = web.get(page_of(webhook)).content.decode()
        assert url in log  # each row links to its attempts

        response = web.post(f"{url}redeliver/", {"next": page_of(webhook)}, follow=True)
        assert response.redirect_chain == [(page_of(webhook), 302)]
        assert "memory.created #1 will be sent again" in response.content.decode()
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == ("pending", 0)
        assert sending.deliver_due() == 1
        assert len(receiver.received) == 2
    page = web.get(url)
    assert [a.response_status for a in page.context["attempts"]] == [503, 200]
    assert "delivered" in page.content.decode()


def test_redelivering_to_a_disabled_webhook_says_to_enable_it(web, mind):
    webhook = hook(mind)
    remember(mind, "a", "one")
    services.webhook_update(webhook=webhook, body={"enabled": False})
    delivery = WebhookDelivery.objects.get()
    url = f"{page_of(webhook)}deliveries/{delivery.pk}/redeliver/"
    response = web.post(url, follow=True)
    assert "enable it before redelivering" in response.content.decode()


# --- Who may: the owner only, and only with the form's token ---------------------------------


def test_another_persons_mind_is_404_on_every_page_and_post(other_web, mind):
    webhook = hook(mind)
    remember(mind, "a", "one")
    delivery = WebhookDelivery.objects.get()
    pages = [
        base(mind),
        page_of(webhook),
        f"{page_of(webhook)}new-secret/",
        f"{page_of(webhook)}delete/",
        f"{page_of(webhook)}deliveries/{delivery.pk}/",
    ]
    posts = [
        *pages,
        f"{page_of(webhook)}enable/",
        f"{page_of(webhook)}test/",
        f"{page_of(webhook)}deliveries/{delivery.pk}/redeliver/",
    ]
    for url in pages:
        assert other_web.get(url).status_code == 404, url
    for url in posts:
        assert other_web.post(url, {"url": "http://127.0.0.1:9/mine"}).status_code == 404, url
    assert Webhook.objects.get().url == UNUSED
    assert Webhook.objects.count() == 1
    assert WebhookDelivery.objects.get().event.type == "memory.created"  # no ping


def test_a_webhook_or_delivery_of_another_mind_is_404_under_mine(web, mind, stranger_mind):
    theirs = hook(stranger_mind.mind)
    remember(stranger_mind.mind, "a", "one")
    delivery = WebhookDelivery.objects.get()
    mine = hook(mind)
    under_mine = f"{base(mind)}{theirs.pk}/"
    for url in (under_mine, f"{under_mine}delete/", f"{under_mine}new-secret/"):
        assert web.get(url).status_code == 404, url
    assert web.post(f"{under_mine}test/").status_code == 404
    assert web.post(f"{under_mine}delete/").status_code == 404
    their_delivery = f"{page_of(mine)}deliveries/{delivery.pk}/"
    assert web.get(their_delivery).status_code == 404
    assert web.post(f"{their_delivery}redeliver/").status_code == 404
    assert web.get(f"{base(mind)}wh_missing/").status_code == 404
    assert web.get(f"{base(mind)}wh_%00/").status_code == 404
    assert Webhook.objects.filter(pk=theirs.pk).exists()


def test_pages_need_login(client, mind):
    webhook = hook(mind)
    for url in (base(mind), page_of(webhook)):
        response = client.get(url)
        assert response["Location"] == f"/accounts/login/?next={url}"


def test_every_post_needs_the_csrf_token(owner, mind):
    webhook = hook(mind)
    remember(mind, "a", "one")
    delivery = WebhookDelivery.objects.get()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    for url in [
        base(mind),
        page_of(webhook),
        f"{page_of(webhook)}enable/",
        f"{page_of(webhook)}test/",
        f"{page_of(webhook)}new-secret/",
        f"{page_of(webhook)}delete/",
        f"{page_of(webhook)}deliveries/{delivery.pk}/redeliver/",
    ]:
        response = strict.post(url, {"url": "http://127.0.0.1:9/other", "events": ["*"]})
        assert response.status_code == 403, url
    assert Webhook.objects.count() == 1
    webhook.refresh_from_db()
    assert webhook.url == UNUSED and webhook.previous_secret_until is None
    assert WebhookDelivery.objects.count() == 1  # no ping
    # With the page's token the same form goes through.
    page = strict.get(base(mind))
    token = page.cookies["csrftoken"].value
    once = TOKEN.search(page.content.decode())[1]
    form = {"csrfmiddlewaretoken": token, "form_token": once, "url": UNUSED, "events": ["*"]}
    response = strict.post(base(mind), form)
    assert response.status_code == 200 and response.context["secret"]  # the secret's page
