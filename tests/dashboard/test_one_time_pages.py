"""The pages that show a secret once (a new mind's key, a rotated key) answer a POST:
reloading them sends the form again, which must neither make a second mind nor replace the
key just shown, and must keep the key out of every session and cookie."""

from __future__ import annotations

import pytest
from django.test import override_settings

from accounts.models import SentForm
from minds.models import Mind
from tests.conftest import bearer_client
from tests.dashboard.conftest import shown

pytestmark = pytest.mark.django_db

NEW = "/dashboard/minds/new/"


def rotate_url(mind: Mind) -> str:
    return f"/dashboard/minds/{mind.pk}/rotate-key/"


def test_reloading_the_new_mind_page_makes_no_second_mind(web, owner):
    form = {"name": "Work bot", "description": "", "form_token": shown(web, NEW)["form_token"]}
    first = web.post(NEW, form)
    key = first.context["raw_key"]
    mind = Mind.objects.get(owner=owner, name="Work bot")

    again = web.post(NEW, form, follow=True)  # what a reload of the key page sends
    assert Mind.objects.filter(owner=owner, name="Work bot").count() == 1
    assert again.redirect_chain == [(f"/dashboard/minds/{mind.pk}/settings/", 302)]
    html = again.content.decode()
    assert "“Work bot” was already created and no second mind was made" in html
    assert "rotate it to get a new one" in html and "Rotate key…" in html
    assert key not in html and key[11:] not in html
    assert Mind.objects.for_key(key) == mind  # the key shown first still works
    # Nothing of the key in the record, the session or a cookie.
    assert [r.target for r in SentForm.objects.all()] == [mind.pk]
    assert key not in str(dict(web.session)) and all(
        key not in morsel.value for morsel in web.cookies.values()
    )


def test_each_new_form_makes_its_own_mind(web, owner):
    for name in ("One", "Two"):
        web.post(NEW, {"name": name, "form_token": shown(web, NEW)["form_token"]})
    assert set(Mind.objects.filter(owner=owner).values_list("name", flat=True)) >= {"One", "Two"}


def test_a_form_sent_again_after_its_mind_was_deleted_goes_to_the_list(web, owner):
    form = {"name": "Short-lived", "form_token": shown(web, NEW)["form_token"]}
    web.post(NEW, form)
    Mind.objects.filter(name="Short-lived").delete()
    again = web.post(NEW, form, follow=True)
    assert again.redirect_chain == [("/dashboard/", 302)]
    assert "no second mind was made" in again.content.decode()
    assert not Mind.objects.filter(name="Short-lived").exists()


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=1)
def test_a_refused_creation_can_be_sent_again_with_the_same_form(web, owner, mind):
    form = {"name": "Second", "form_token": shown(web, NEW)["form_token"]}
    refused = web.post(NEW, form)
    assert "SYNAPSE_MAX_MINDS_PER_USER" in refused.content.decode()
    mind.delete()  # room made: the same form now goes through
    assert web.post(NEW, form).context["raw_key"].startswith("mk_")
    assert Mind.objects.filter(owner=owner, name="Second").count() == 1


@pytest.mark.parametrize("token", [None, "", "forged"])
def test_a_creation_without_its_pages_token_is_refused_clearly(web, owner, token):
    form = {"name": "No token"} | ({} if token is None else {"form_token": token})
    response = web.post(NEW, form)
    assert response.status_code == 400
    assert "was not opened from this page by you" in response.content.decode()
    assert 'name="form_token"' in response.content.decode()  # a fresh one to send again
    assert not Mind.objects.filter(name="No token").exists()


def test_another_persons_form_token_makes_nothing_for_them(web, other_web, owner):
    theirs = shown(other_web, NEW)["form_token"]
    response = web.post(NEW, {"name": "Borrowed", "form_token": theirs})
    assert response.status_code == 400
    assert not Mind.objects.filter(name="Borrowed").exists()


def test_reloading_the_rotated_key_page_rotates_once(web, owner_mind):
    mind = owner_mind.mind
    form = {"form_token": shown(web, rotate_url(mind))["form_token"]}
    first = web.post(rotate_url(mind), form)
    new_key = first.context["raw_key"]

    again = web.post(rotate_url(mind), form, follow=True)
    assert again.redirect_chain == [(f"/dashboard/minds/{mind.pk}/settings/", 302)]
    html = again.content.decode()
    assert "the Mind Key was not replaced again" in html and new_key not in html
    assert Mind.objects.for_key(new_key) == mind  # the key just shown is the one in force
    assert bearer_client(new_key).get("/memory").status_code == 200
    assert bearer_client(owner_mind.key).get("/memory").status_code == 401


def test_a_rotation_without_its_pages_token_changes_nothing(web, owner_mind):
    mind = owner_mind.mind
    response = web.post(rotate_url(mind))
    assert response.status_code == 400
    html = response.content.decode()
    assert "was not sent" in html and "Yes, make a new key" in html
    assert Mind.objects.for_key(owner_mind.key) == mind


def test_a_rotation_token_does_not_reach_another_persons_mind(other_web, web, owner_mind):
    mind = owner_mind.mind
    token = shown(web, rotate_url(mind))["form_token"]
    assert other_web.post(rotate_url(mind), {"form_token": token}).status_code == 404
    assert Mind.objects.for_key(owner_mind.key) == mind


def test_a_revoked_minds_new_key_form_acts_once(web, owner_mind):
    mind = owner_mind.mind
    web.post(f"/dashboard/minds/{mind.pk}/revoke-key/")
    form = {"form_token": shown(web, f"/dashboard/minds/{mind.pk}/settings/")["form_token"]}
    key = web.post(rotate_url(mind), form).context["raw_key"]
    web.post(rotate_url(mind), form)
    assert Mind.objects.for_key(key) == mind
