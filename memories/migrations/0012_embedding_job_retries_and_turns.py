"""Embedding jobs get a retry state (`due_at`, `attempts`, `last_error`; a parked job has no
`due_at`) and an index by mind and due time, which the worker walks to serve minds in turn.
Jobs queued before are due at their `queued_at`, so their order stays."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memories", "0011_memory_event_size")]

    operations = [
        migrations.RemoveIndex(model_name="embeddingjob", name="embedding_job_queue_idx"),
        migrations.AddField(
            model_name="embeddingjob",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="embeddingjob",
            name="due_at",
            field=models.DateTimeField(default=django.utils.timezone.now, null=True),
        ),
        migrations.AddField(
            model_name="embeddingjob",
            name="last_error",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.RunSQL(
            "UPDATE memories_embeddingjob SET due_at = queued_at",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddIndex(
            model_name="embeddingjob",
            index=models.Index(
                fields=["mind_id", "due_at", "memory_id"], name="embedding_job_turn_idx"
            ),
        ),
    ]
