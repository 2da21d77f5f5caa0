import pytest

from minds.models import Mind, Share
from tests.factories import remember, share_make

pytestmark = pytest.mark.django_db


def test_mind_changelist_lists_and_searches(admin_client, mind, stranger_mind):
    response = admin_client.get("/admin/minds/mind/", {"q": "Olive"})
    assert response.status_code == 200
    assert mind.id in response.content.decode()
    assert stranger_mind.mind.id not in response.content.decode()


def test_rotate_key_action_shows_new_key_once_and_invalidates_old(admin_client, owner_mind):
    response = admin_client.post(
        "/admin/minds/mind/",
        {"action": "rotate_keys", "_selected_action": [owner_mind.mind.pk]},
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    mind = Mind.objects.get(pk=owner_mind.mind.pk)
    assert mind.key_prefix in html
    assert Mind.objects.for_key(owner_mind.key) is None
    new_key = html.split("<code>")[1].split("</code>")[0]
    assert Mind.objects.for_key(new_key) == mind


def test_user_admin_lists_users(admin_client, owner):
    response = admin_client.get("/admin/accounts/user/", {"q": "owner"})
    assert response.status_code == 200
    assert "owner@example.com" in response.content.decode()


def test_admin_can_create_a_mind_with_a_key(admin_client, owner):
    response = admin_client.post(
        "/admin/minds/mind/add/",
        {"owner": owner.pk, "name": "From admin", "description": ""},
        follow=True,
    )
    assert response.status_code == 200
    mind = Mind.objects.get(name="From admin")
    assert mind.has_active_key
    assert "shown only now" in response.content.decode()


def test_staff_may_create_a_mind_past_the_per_account_cap(admin_client, owner, mind, settings):
    settings.SYNAPSE_MAX_MINDS_PER_USER = 1  # the owner already has `mind`
    admin_client.raise_request_exception = False
    response = admin_client.post(
        "/admin/minds/mind/add/", {"owner": owner.pk, "name": "Second", "description": ""}
    )
    assert response.status_code == 200
    assert Mind.objects.filter(owner=owner).count() == 2


def test_the_change_page_shows_the_counters_and_saving_it_keeps_them(admin_client, mind):
    remember(mind, "a", "hello")
    mind.refresh_from_db()
    held = (mind.stored_memories, mind.stored_bytes, mind.history_bytes)
    assert held[0] == 1 and held[2] > 0
    url = f"/admin/minds/mind/{mind.pk}/change/"
    html = admin_client.get(url).content.decode()
    assert "History bytes" in html and str(mind.history_bytes) in html
    form = {"owner": mind.owner_id, "name": "Renamed", "description": "", "history_bytes": 0}
    form |= {"shares-TOTAL_FORMS": "0", "shares-INITIAL_FORMS": "0"}  # the shares inline
    assert admin_client.post(url, form).status_code == 302
    mind.refresh_from_db()
    assert mind.name == "Renamed"
    assert (mind.stored_memories, mind.stored_bytes, mind.history_bytes) == held


def test_shares_are_shown_and_edited_on_the_minds_page(admin_client, mind, other_user):
    share = share_make(mind, other_user, acl="read")
    page = admin_client.get(f"/admin/minds/mind/{mind.pk}/change/")
    assert page.status_code == 200
    assert "other@example.com" in page.content.decode()
    response = admin_client.post(
        f"/admin/minds/mind/{mind.pk}/change/",
        {
            "owner": mind.owner_id,
            "name": mind.name,
            "description": "",
            "shares-TOTAL_FORMS": "2",
            "shares-INITIAL_FORMS": "1",
            "shares-MIN_NUM_FORMS": "0",
            "shares-MAX_NUM_FORMS": "1000",
            "shares-0-id": share.pk,
            "shares-0-mind": mind.pk,
            "shares-0-email": "other@example.com",
            "shares-0-acl": "admin",
            "shares-1-mind": mind.pk,
            "shares-1-email": " New@Example.com",
            "shares-1-acl": "write",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Share.objects.get(pk=share.pk).acl == "admin"
    assert Share.objects.get(mind=mind, email="new@example.com").status == "pending"
