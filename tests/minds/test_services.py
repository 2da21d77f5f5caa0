"""Minds' services: how many minds one account may own."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings

from core.errors import QuotaExceeded
from minds.models import Mind
from minds.services import mind_create

pytestmark = pytest.mark.django_db


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=2)
def test_an_account_owns_at_most_the_minds_it_may(owner, other_user, mind):
    mind_create(owner=owner, name="Second")
    with pytest.raises(QuotaExceeded) as refused:
        mind_create(owner=owner, name="Third")
    assert "owns 2 minds" in refused.value.detail
    assert "(2, SYNAPSE_MAX_MINDS_PER_USER)" in refused.value.detail
    assert Mind.objects.filter(owner=owner).count() == 2
    mind_create(owner=other_user, name="Theirs")  # another account is not affected
    Mind.objects.filter(owner=owner, name="Second").delete()
    mind_create(owner=owner, name="Third")  # room again


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=1)
def test_an_operator_may_go_past_the_cap(owner, mind, capsys):
    mind_create(owner=owner, name="By the admin", over_limit=True)
    call_command("createmind", email=owner.email, name="By the command")
    assert Mind.objects.filter(owner=owner).count() == 3


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=0)
def test_zero_means_no_cap(owner):
    for n in range(5):
        mind_create(owner=owner, name=f"Mind {n}")
    assert Mind.objects.filter(owner=owner).count() == 5
