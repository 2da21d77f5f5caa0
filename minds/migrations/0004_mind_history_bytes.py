# Each mind's history counter, filled in from the sizes of the audit rows it already holds.

from django.db import migrations, models


def count_history(apps, schema_editor):
    """Set each mind's history_bytes from its events, in one statement on the database."""
    quote = schema_editor.connection.ops.quote_name
    minds = quote(apps.get_model("minds", "Mind")._meta.db_table)
    events = quote(apps.get_model("memories", "MemoryEvent")._meta.db_table)
    schema_editor.execute(
        f"UPDATE {minds} SET history_bytes = (SELECT COALESCE(SUM(e.size), 0) FROM {events} e "
        f"WHERE e.mind_id = {minds}.id)"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("minds", "0003_forget_keys_in_sessions"),
        ("memories", "0011_memory_event_size"),
    ]

    operations = [
        migrations.AddField(
            model_name="mind",
            name="history_bytes",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        # Backwards the column is dropped by the AddField: nothing to undo here.
        migrations.RunPython(count_history, migrations.RunPython.noop),
    ]
