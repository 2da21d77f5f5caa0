# Each mind's usage counters, filled in for the memories it already holds.

from django.db import migrations, models


def count_usage(apps, schema_editor):
    """Set each mind's counters from its memories, in one statement on the database."""
    connection = schema_editor.connection
    quote = connection.ops.quote_name
    minds = quote(apps.get_model("minds", "Mind")._meta.db_table)
    memories = quote(apps.get_model("memories", "Memory")._meta.db_table)
    # The content's UTF-8 bytes, as the write path counts them (rules.content_bytes).
    size = "octet_length(m.content)"
    if connection.vendor == "sqlite":
        size = "length(CAST(m.content AS BLOB))"
    schema_editor.execute(
        f"UPDATE {minds} SET "
        f"stored_memories = (SELECT COUNT(*) FROM {memories} m WHERE m.mind_id = {minds}.id), "
        f"stored_bytes = (SELECT COALESCE(SUM({size}), 0) FROM {memories} m "
        f"WHERE m.mind_id = {minds}.id)"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("minds", "0001_initial"),
        ("memories", "0005_recall_index_with_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="mind",
            name="stored_memories",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="mind",
            name="stored_bytes",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        # Backwards the columns are dropped by the AddFields: nothing to undo here.
        migrations.RunPython(count_usage, migrations.RunPython.noop),
    ]
