"""The public client's `scheduler` (synapse-memory-sdk) against a real server, unchanged."""

from __future__ import annotations

import pytest
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live_server, owner_mind) -> Synapse:
    return Synapse(base_url=live_server.url, mind_key=owner_mind.key, max_retries=0)


def test_sdk_cron_jobs(sdk):
    job = sdk.scheduler.create_cron(
        name="tidy",
        schedule="0 3 * * *",
        endpoint="/memory/compact",
        method="POST",
        body='{"older_than": 0, "dry_run": true}',
    )
    assert job["id"].startswith("cron_") and job["enabled"] is True
    assert sdk.scheduler.list_crons()["total"] == 1
    assert sdk.scheduler.toggle_cron(job["id"])["enabled"] is False
    assert sdk.scheduler.delete_cron(job["id"]) == {"deleted": True, "id": job["id"]}
    assert sdk.scheduler.list_crons() == {"crons": [], "total": 0}

    with pytest.raises(SynapseError) as refused:
        sdk.scheduler.create_cron(name="bad", schedule="* * *", endpoint="/memory/compact")
    assert refused.value.status == 400
    assert "schedule" in str(refused.value.body)


def test_sdk_variables(sdk):
    assert sdk.scheduler.set_var("greeting", "hello")["value"] == "hello"
    assert sdk.scheduler.set_var("greeting", "hi")["value"] == "hi"
    assert sdk.scheduler.get_var("greeting")["value"] == "hi"
    assert sdk.scheduler.list_vars()["total"] == 1
    assert sdk.scheduler.delete_var("greeting") == {"deleted": True, "key": "greeting"}
    with pytest.raises(SynapseError) as missing:
        sdk.scheduler.get_var("greeting")
    assert missing.value.status == 404
    with pytest.raises(SynapseError) as refused:
        sdk.scheduler.set_var("greeting")  # the client's default value: none
    assert refused.value.status == 400
