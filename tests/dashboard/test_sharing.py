"""Sharing in the dashboard: pages and buttons follow the person's level, the minds shared
with me, the Sharing panel (invite, change a level, revoke), and who did what in the history."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_verify
from minds.models import Share
from tests.dashboard.conftest import agent_store, shown
from tests.factories import share_make, user_make

pytestmark = pytest.mark.django_db

LEVELS = ["owner", "admin", "write", "read"]


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def as_level(web, mind):
    """A signed-in browser at each level on `mind`: its owner, or a person it is shared with."""
    clients = {"owner": web}
    for acl in ("admin", "write", "read"):
        person = user_make(f"{acl}er@example.com")
        share_make(mind, person, acl)
        clients[acl] = browser(person)
    return clients


@pytest.fixture
def memory(mind) -> Memory:
    return agent_store(mind, key="fact_sky")


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def at_least(level: str, need: str) -> bool:
    return LEVELS.index(level) <= LEVELS.index(need)


# --- Buttons follow the level ---------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_overview_tabs_and_badge_follow_the_level(as_level, mind, level):
    html = page(as_level[level], f"/dashboard/minds/{mind.pk}/")
    assert ("Settings &amp; key</a>" in html) is at_least(level, "admin")
    assert (f"/dashboard/minds/{mind.pk}/webhooks/" in html) is at_least(level, "admin")
    badge = f"Shared with you · {level}"
    assert (badge in html) is (level != "owner")
    if level != "owner":
        assert "by owner@example.com" in html


@pytest.mark.parametrize("level", LEVELS)
def test_memory_table_buttons_follow_the_level(as_level, mind, memory, level):
    html = page(as_level[level], f"/dashboard/minds/{mind.pk}/memories/")
    assert "fact_sky" in html
    writes = at_least(level, "write")
    assert ('id="bulk-form"' in html) is writes
    assert ('type="checkbox" name="memory"' in html) is writes
    assert ("Verify all" in html) is writes
    assert ("Delete selected" in html) is writes


@pytest.mark.parametrize("level", LEVELS)
def test_memory_detail_buttons_follow_the_level(as_level, mind, memory, level):
    base = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    Memory.objects.filter(pk=memory.pk).update(superseded_by=memory)  # offers "current again"
    html = page(as_level[level], base)
    assert "The sky is blue" in html
    writes = at_least(level, "write")
    for action in ("verify/", "edit/", "delete/", "supersede/"):
        assert (f'{base}{action}"' in html or f"{base}{action}?" in html) is writes, action
    assert ("Make it current again" in html) is writes


def test_restore_is_offered_to_writers_only(as_level, mind, memory):
    base = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    agent_store(mind, key="fact_sky", content="The sky is green")
    assert "Restore version" in page(as_level["write"], base)
    assert "Restore version" not in page(as_level["read"], base)


@pytest.mark.parametrize("level", LEVELS)
def test_review_buttons_follow_the_level(as_level, mind, memory, level):
    html = page(as_level[level], f"/dashboard/minds/{mind.pk}/review/")
    assert "fact_sky" in html
    writes = at_least(level, "write")
    assert ('id="review-form"' in html) is writes
    assert ('data-key="v"' in html) is writes
    assert ("Verify selected" in html) is writes
    assert ("you can read the queue" in html) is not writes


@pytest.mark.parametrize("level", LEVELS)
def test_hygiene_actions_follow_the_level(as_level, mind, memory, level):
    html = page(as_level[level], f"/dashboard/minds/{mind.pk}/hygiene/")
    writes = at_least(level, "write")
    assert ("Show what would be compacted" in html) is writes
    assert ("Compacting needs write access." in html) is not writes


@pytest.mark.parametrize("level", LEVELS)
def test_settings_sharing_and_delete_follow_the_level(as_level, mind, level):
    response = as_level[level].get(f"/dashboard/minds/{mind.pk}/settings/")
    if not at_least(level, "admin"):
        assert response.status_code == 403
        return
    html = response.content.decode()
    assert 'id="sharing"' in html
    assert "Rotate key…" in html
    assert ("Delete mind…" in html) is (level == "owner")


# --- Refusals -------------------------------------------------------------------------------


def test_a_reader_posting_verify_gets_the_403_page_and_nothing_changes(as_level, mind, memory):
    reader = as_level["read"]
    base = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    version = shown(as_level["owner"], base)["version"]
    response = reader.post(base + "verify/", {"version": version})
    assert response.status_code == 403
    html = response.content.decode()
    assert response["Content-Type"].startswith("text/html")
    assert "You can't do that here" in html
    assert "Your access to this mind is read; this needs write or more." in html
    memory.refresh_from_db()
    assert not memory.verified
    for url in (
        base + "edit/",
        base + "delete/",
        f"/dashboard/minds/{mind.pk}/memories/verify-all/",
    ):
        assert reader.get(url).status_code == 403, url


def test_a_writer_sees_no_sharing_and_its_routes_are_403(as_level, mind):
    writer, owner = as_level["write"], as_level["owner"]
    share = Share.objects.get(mind=mind, email="reader@example.com")
    base = f"/dashboard/minds/{mind.pk}/shares/"
    assert writer.post(base, {"user_email": "new@example.com", "acl": "admin"}).status_code == 403
    assert writer.post(f"{base}{share.pk}/", {"acl": "admin"}).status_code == 403
    assert writer.get(f"{base}{share.pk}/revoke/").status_code == 403
    assert writer.post(f"{base}{share.pk}/revoke/").status_code == 403
    assert not Share.objects.filter(email="new@example.com").exists()
    assert Share.objects.get(pk=share.pk).acl == "read"
    overview = page(writer, f"/dashboard/minds/{mind.pk}/")
    assert f"/dashboard/minds/{mind.pk}/settings/" not in overview
    assert f"/dashboard/minds/{mind.pk}/shares/" not in overview
    assert 'id="sharing"' in page(owner, f"/dashboard/minds/{mind.pk}/settings/")


# --- The mind list --------------------------------------------------------------------------


def test_mind_list_shows_shared_with_me_with_level_owner_and_counts(mind, other_user):
    agent_store(mind, key="fact_one")
    agent_store(mind, key="fact_two")
    share_make(mind, other_user, "write")
    html = page(browser(other_user), "/dashboard/")
    shared = html.split('id="shared-heading"')[1]
    assert "Olive&#x27;s Mind" in shared
    assert "owner@example.com" in shared
    assert '<span class="badge badge-shared">write</span>' in shared
    assert "2 to review" in shared
    assert "Welcome" not in html
    assert "no mind of your own yet" in html


def test_the_owner_lists_the_mind_as_theirs_not_as_shared(web, mind, other_user):
    share_make(mind, other_user, "read")
    html = page(web, "/dashboard/")
    own, shared = html.split('id="shared-heading"')
    assert "Olive&#x27;s Mind" in own
    assert "Olive&#x27;s Mind" not in shared
    assert "No one shares a mind with you yet" in shared


def test_welcome_only_for_a_person_with_no_mind_at_all(other_user):
    html = page(browser(other_user), "/dashboard/")
    assert "Welcome" in html
    assert 'id="shared-heading"' not in html


def test_an_invitation_reaches_a_person_already_signed_in_at_their_list(web, mind, other_user):
    friend = browser(other_user)
    assert "Olive&#x27;s Mind" not in page(friend, "/dashboard/")
    web.post(f"/dashboard/minds/{mind.pk}/shares/", {"user_email": other_user.email, "acl": "read"})
    assert "Olive&#x27;s Mind" in page(friend, "/dashboard/")
    assert page(friend, f"/dashboard/minds/{mind.pk}/")


# --- The Sharing panel ----------------------------------------------------------------------


def invite(client, mind, email: str, acl: str = "read"):
    return client.post(
        f"/dashboard/minds/{mind.pk}/shares/", {"user_email": email, "acl": acl}, follow=True
    )


def test_invite_makes_a_pending_share_and_says_when_it_starts(web, mind):
    response = invite(web, mind, " Friend@Example.com ", "write")
    assert response.redirect_chain[-1][0] == f"/dashboard/minds/{mind.pk}/settings/#sharing"
    html = response.content.decode()
    assert (
        "Invited friend@example.com at write. "
        "They&#x27;ll get access when they sign in with that address." in html
    )
    share = Share.objects.get(mind=mind)
    assert (share.email, share.acl, share.status) == ("friend@example.com", "write", "pending")
    row = html.split(f'id="share-{share.pk}"')[1].split("</tr>")[0]
    assert "pending" in row
    assert '<option value="write" selected>' in row


@pytest.mark.parametrize(
    ("email", "acl", "message"),
    [
        ("not an address", "read", "Not an email address."),
        ("", "read", "Required: the email address of the person to invite."),
        ("friend@example.com", "owner", "One of: read, write, admin."),
        ("owner@example.com", "read", "That is you or the mind&#x27;s owner"),
    ],
)
def test_a_bad_invitation_is_400_with_the_form_as_sent(web, mind, email, acl, message):
    response = web.post(f"/dashboard/minds/{mind.pk}/shares/", {"user_email": email, "acl": acl})
    assert response.status_code == 400
    html = response.content.decode()
    assert "The invitation was not sent" in html
    assert message in html
    assert f'value="{email}"' in html or not email  # nothing typed is lost
    assert not Share.objects.exists()


def test_inviting_the_same_address_twice_is_400_and_keeps_the_first(web, mind):
    invite(web, mind, "friend@example.com", "read")
    response = web.post(
        f"/dashboard/minds/{mind.pk}/shares/", {"user_email": "FRIEND@example.com", "acl": "admin"}
    )
    assert response.status_code == 400
    assert "already shared with that address" in response.content.decode()
    assert Share.objects.get(mind=mind).acl == "read"


def _invitation_as_shown(html: str, share: Share) -> str:
    """The message and the share's row, with what names this share (address, id, instant)
    taken out: what must not differ between an address with an account and one without."""
    said = re.findall(r'<p class="message[^"]*">(.*?)</p>', html)
    row = html.split(f'id="share-{share.pk}"')[1].split("</tr>")[0]
    text = " ".join(said) + row
    text = re.sub(r"<time[^>]*>.*?</time>", "<time>", text)
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "CSRF", text)
    return text.replace(share.email, "EMAIL").replace(share.pk, "ID")


def test_invitation_reads_the_same_with_or_without_an_account(web, mind):
    user_make("known@example.com")
    answers = []
    for email in ("known@example.com", "unknown@example.com"):
        response = invite(web, mind, email, "write")
        share = Share.objects.get(mind=mind, email=email)
        answers.append(_invitation_as_shown(response.content.decode(), share))
        share.delete()
    assert answers[0] == answers[1]
    assert "EMAIL" in answers[0]


def test_change_level_takes_effect_on_the_next_request(web, mind, other_user, memory):
    share = share_make(mind, other_user, "read")
    friend = browser(other_user)
    base = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    assert friend.post(base + "verify/", shown(web, base)).status_code == 403
    response = web.post(f"/dashboard/minds/{mind.pk}/shares/{share.pk}/", {"acl": "write"})
    assert response.status_code == 302
    assert Share.objects.get(pk=share.pk).acl == "write"
    assert friend.post(base + "verify/", shown(friend, base)).status_code == 302
    memory.refresh_from_db()
    assert memory.verified


def test_a_bad_level_is_400_beside_the_share_and_changes_nothing(web, mind, other_user):
    share = share_make(mind, other_user, "write")
    response = web.post(f"/dashboard/minds/{mind.pk}/shares/{share.pk}/", {"acl": "owner"})
    assert response.status_code == 400
    row = response.content.decode().split(f'id="share-{share.pk}"')[1].split("</tr>")[0]
    assert "acl: One of: read, write, admin." in row
    assert '<option value="write" selected>' in row
    assert Share.objects.get(pk=share.pk).acl == "write"


def test_revoke_asks_first_then_ends_access_on_the_next_request(web, mind, other_user):
    share = share_make(mind, other_user, "write")
    friend = browser(other_user)
    assert friend.get(f"/dashboard/minds/{mind.pk}/").status_code == 200
    url = f"/dashboard/minds/{mind.pk}/shares/{share.pk}/revoke/"
    html = page(web, url)
    assert "Revoke the share with other@example.com?" in html
    assert Share.objects.filter(pk=share.pk).exists()  # the GET only asks
    response = web.post(url, follow=True)
    assert "Revoked the share with other@example.com" in response.content.decode()
    assert not Share.objects.filter(pk=share.pk).exists()
    assert friend.get(f"/dashboard/minds/{mind.pk}/").status_code == 404
    assert "Olive&#x27;s Mind" not in page(friend, "/dashboard/")


def test_an_admin_manages_shares_but_cannot_delete_the_mind(as_level, mind):
    admin = as_level["admin"]
    response = invite(admin, mind, "new@example.com", "read")
    assert "Invited new@example.com" in response.content.decode()
    assert admin.get(f"/dashboard/minds/{mind.pk}/delete/").status_code == 403


def test_an_admin_revoking_their_own_share_lands_on_their_list(as_level, mind):
    share = Share.objects.get(mind=mind, email="adminer@example.com")
    response = as_level["admin"].post(f"/dashboard/minds/{mind.pk}/shares/{share.pk}/revoke/")
    assert response["Location"] == "/dashboard/"


def test_a_share_of_another_mind_is_404(web, mind, stranger_mind, other_user):
    theirs = share_make(stranger_mind.mind, other_user, "read")
    url = f"/dashboard/minds/{mind.pk}/shares/{theirs.pk}/"
    assert web.post(url, {"acl": "admin"}).status_code == 404
    assert web.post(url + "revoke/").status_code == 404
    assert Share.objects.get(pk=theirs.pk).acl == "read"


# --- Who did what ---------------------------------------------------------------------------


def test_history_names_the_other_person_and_calls_the_reader_you(web, mind, other_user, memory):
    share_make(mind, other_user, "write")
    memory_verify(memory=memory, actor=Actor.for_user(other_user))
    friend = browser(other_user)
    for url in (
        f"/dashboard/minds/{mind.pk}/activity/",
        f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/",
    ):
        by_owner = page(web, url)
        assert "other@example.com" in by_owner
        by_friend = page(friend, url)
        assert "you <span" in by_friend or "<strong>you</strong>" in by_friend
    detail = page(web, f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/")
    assert 'by <strong>other@example.com</strong> <span class="muted">(user)</span>' in detail
    assert "verified</span>\n by other@example.com," in detail
    assert "verified</span>\n by you," in page(
        friend, f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    )
