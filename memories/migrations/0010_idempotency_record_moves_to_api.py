"""IdempotencyRecord now belongs to the api app: the model leaves this app's state only; its
table and rows stay where they are (api/migrations/0001 takes them over)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0009_vectors_version")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="IdempotencyRecord")],
            database_operations=[],
        )
    ]
