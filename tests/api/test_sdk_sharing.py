"""The public client's `sharing` calls against a real server, unchanged."""

from __future__ import annotations

import pytest
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from tests.conftest import jwt_for
from tests.factories import user_make

pytestmark = pytest.mark.django_db(transaction=True)


def test_sdk_share_list_update_revoke_and_shared_with_me(live_server, owner, owner_mind):
    mind_id = owner_mind.mind.pk
    sdk = Synapse(
        base_url=live_server.url, mind_key=owner_mind.key, jwt=jwt_for(owner), max_retries=0
    )
    friend = user_make("friend@example.com")
    friend_sdk = Synapse(
        base_url=live_server.url, mind_key=owner_mind.key, jwt=jwt_for(friend), max_retries=0
    )

    created = sdk.sharing.share(mind_id, "friend@example.com", acl="read")
    assert created["status"] == "pending" and created["acl"] == "read"
    assert sdk.sharing.list_shares(mind_id)["total"] == 1

    # Listing what is shared with them claims the invitation to their address.
    assert friend_sdk.sharing.shared_with_me()["total"] == 1
    assert sdk.sharing.list_shares(mind_id)["shares"][0]["status"] == "active"

    updated = sdk.sharing.update_share(mind_id, created["id"], "write")
    assert updated["acl"] == "write"
    shared = friend_sdk.sharing.shared_with_me()["minds"][0]
    assert (shared["id"], shared["acl"], shared["owner_email"]) == (
        mind_id,
        "write",
        "owner@example.com",
    )

    assert sdk.sharing.revoke_share(mind_id, created["id"]) == {
        "deleted": True,
        "id": created["id"],
    }
    assert friend_sdk.sharing.shared_with_me()["total"] == 0
    with pytest.raises(SynapseError):
        friend_sdk.sharing.list_shares(mind_id)  # not theirs to see: 404
