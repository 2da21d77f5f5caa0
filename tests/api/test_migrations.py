"""The idempotency record moved from memories/ to api/ by state alone: an upgraded database
keeps its records, and a key stored before the upgrade still replays after it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.api.test_idempotency import post

BEFORE_THE_MOVE = [("memories", "0009_vectors_version"), ("api", None)]


@pytest.mark.django_db(transaction=True)
def test_an_upgrade_keeps_the_records_and_replays_their_keys(agent):
    first = post(agent)
    assert first.status_code == 201

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_THE_MOVE)
    old_apps = executor.loader.project_state(BEFORE_THE_MOVE[:1]).apps
    old_record = old_apps.get_model("memories", "IdempotencyRecord")
    assert old_record.objects.count() == 1  # the row, where the code before the move kept it

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    replay = post(agent)
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.content == first.content
