"""The public client's compact.compact() against a live server: a dry run, then a real one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from memories.models import Memory
from tests.factories import remember

pytestmark = pytest.mark.django_db(transaction=True)


def test_sdk_compact_dry_run_then_apply(live_server, owner_mind, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    mind = owner_mind.mind
    old = timezone.now() - timedelta(days=40)
    originals = [
        remember(mind, f"fact_coffee_{i}", text, tags=["coffee"], now=old + timedelta(seconds=i))
        for i, text in enumerate(
            ["Drinks coffee black.", "Has two cups of coffee a day.", "Drinks coffee black."]
        )
    ]
    sdk = Synapse(base_url=live_server.url, mind_key=owner_mind.key, max_retries=0)

    plan = sdk.compact.compact(dry_run=True)

    assert plan["clusters_processed"] == 1 and plan["memories_compacted"] == 3
    (cluster,) = plan["results"]
    assert cluster["summary"]["id"] is None
    assert cluster["originals"] == [m.pk for m in originals]
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()

    done = sdk.compact.compact(category="fact", max_clusters=1, min_cluster_size=2)

    summary = done["results"][0]["summary"]
    assert summary["content"].splitlines()[1:] == [
        "- Drinks coffee black.",
        "- Has two cups of coffee a day.",
    ]
    assert [m["id"] for m in sdk.memory.list()["memories"]] == [summary["id"]]
    with pytest.raises(SynapseError) as refused:
        sdk.compact.compact(max_clusters=99)
    assert refused.value.status == 400 and "max_clusters" in refused.value.body
