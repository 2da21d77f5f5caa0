"""Forms that act once: a token made for one person, recorded on its first send."""

from __future__ import annotations

import time

import pytest
from django.core import signing

from accounts.models import SentForm
from accounts.once import EXPIRED, FOREIGN, form_send, form_token_new
from core.errors import Invalid

pytestmark = pytest.mark.django_db


def test_the_first_send_acts_and_a_later_one_names_what_it_did(owner):
    token = form_token_new(user=owner)
    with form_send(user=owner, token=token) as send:
        assert send.first
        send.acted_on("m_made")
    with form_send(user=owner, token=token) as again:
        assert not again.first and again.target == "m_made"
    assert SentForm.objects.count() == 1


def test_a_send_that_fails_leaves_no_record_so_the_form_can_be_sent_again(owner):
    token = form_token_new(user=owner)
    with pytest.raises(RuntimeError), form_send(user=owner, token=token) as send:
        assert send.first
        raise RuntimeError("the write was refused")
    assert not SentForm.objects.exists()
    with form_send(user=owner, token=token) as retry:
        assert retry.first


@pytest.mark.parametrize("token", ["", "garbage", "1:abc:xyz"])
def test_a_missing_or_forged_token_is_refused(owner, token):
    with pytest.raises(Invalid) as refused, form_send(user=owner, token=token):
        pytest.fail("a refused token must not reach the block")
    assert refused.value.detail == FOREIGN
    assert not SentForm.objects.exists()


def test_another_persons_token_is_refused(owner, other_user):
    token = form_token_new(user=other_user)
    with pytest.raises(Invalid) as refused, form_send(user=owner, token=token):
        pytest.fail("a refused token must not reach the block")
    assert refused.value.detail == FOREIGN


def test_a_token_older_than_a_day_is_refused_and_old_records_go(owner, monkeypatch):
    two_days_ago = signing.b62_encode(int(time.time()) - 2 * 86_400)
    with monkeypatch.context() as patched:
        patched.setattr(signing.TimestampSigner, "timestamp", lambda self: two_days_ago)
        old = form_token_new(user=owner)
    with pytest.raises(Invalid) as refused, form_send(user=owner, token=old):
        pytest.fail("a refused token must not reach the block")
    assert refused.value.detail == EXPIRED

    stale = SentForm.objects.create(user=owner, token="stale")
    SentForm.objects.filter(pk=stale.pk).update(sent_at=stale.sent_at.replace(year=2000))
    with form_send(user=owner, token=form_token_new(user=owner)):
        pass
    assert not SentForm.objects.filter(token="stale").exists()
