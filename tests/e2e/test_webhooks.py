"""In a real browser: a person adds a webhook pointing at a receiver on this machine, copies
its secret from the one page that shows it, sends a test event, and finds it in the log."""

from __future__ import annotations

import re

import pytest

from minds.services import mind_create
from tests.e2e.browsing import sign_in
from tests.factories import user_make
from tests.webhook_receiver import receiving
from webhooks.models import Webhook

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make install puts it in the venv)"
).expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_add_a_webhook_send_a_test_and_see_it_in_the_log(page, live_server, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    person = user_make("ada@example.com")
    mind, _ = mind_create(owner=person, name="Assistant")
    sign_in(page.context, live_server, person)
    page.goto(f"{live_server.url}/dashboard/minds/{mind.pk}/")
    page.get_by_role("navigation", name="Assistant").get_by_role("link", name="Webhooks").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Webhooks")

    with receiving(answer_body=b'{"received": true}') as receiver:
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_label("Every event (*)").uncheck()
        page.get_by_label("Every memory event (memory.*)").check()
        page.get_by_role("button", name="Add webhook").click()

        expect(page.get_by_role("main")).to_contain_text("shown only this once")
        secret = page.get_by_label("Webhook secret").input_value()
        assert secret.startswith("whsec_")
        webhook = Webhook.objects.get(mind=mind)
        assert (webhook.url, webhook.events) == (receiver.url, ["memory.*"])

        page.get_by_role("link", name="I have saved the secret: go to the webhook").click()
        expect(page.get_by_role("main")).not_to_contain_text(secret)
        page.get_by_role("button", name="Send test event").click()

        result = page.locator("#test-result")
        expect(result).to_contain_text("delivered")
        expect(result).to_contain_text("HTTP 200")
        expect(result).to_contain_text('{"received": true}')
        expect(page.get_by_role("status").first).to_contain_text(
            re.compile(r"Test event delivered: HTTP 200 in \d+ ms")
        )
        (ping,) = receiver.verified(secret)
    assert ping["type"] == "ping" and ping["data"]["mind_id"] == mind.pk

    row = page.locator("table.deliveries tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("ping")
    expect(row).to_contain_text("delivered")
    expect(row.locator("td[data-label=Response]")).to_have_text("200")
    row.get_by_role("link", name=re.compile("^ping")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(r"^ping #\d+$"))
    attempt = page.locator("table.attempts tbody tr")
    expect(attempt).to_have_count(1)
    expect(attempt).to_contain_text('{"received": true}')
