"""Each audit row records its size (the bytes of its `changes` as JSON), for the mind's
history budget; rows written before are measured here, a batch at a time."""

from django.db import migrations, models

BATCH = 1000


def measure_events(apps, schema_editor):
    from memories.audit import changes_size

    Event = apps.get_model("memories", "MemoryEvent")
    events = Event.objects.using(schema_editor.connection.alias)
    last = 0
    while True:
        batch = list(
            events.filter(pk__gt=last).order_by("pk").values_list("pk", "changes")[:BATCH]
        )
        if not batch:
            return
        events.bulk_update(
            [Event(pk=pk, size=changes_size(changes)) for pk, changes in batch], ["size"]
        )
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [("memories", "0010_idempotency_record_moves_to_api")]

    operations = [
        migrations.AddField(
            model_name="memoryevent",
            name="size",
            field=models.BigIntegerField(default=0),
        ),
        # Backwards the column is dropped by the AddField: nothing to undo here.
        migrations.RunPython(measure_events, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(size__gt=0),
                fields=["mind", "at", "id"],
                name="memory_event_unfolded_idx",
            ),
        ),
    ]
