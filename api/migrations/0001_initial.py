"""IdempotencyRecord joins the api app: its table and rows stay as memories/ made them; this
migration only takes the model into this app's state."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("memories", "0010_idempotency_record_moves_to_api")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IdempotencyRecord",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("credential", models.CharField(max_length=64)),
                        ("endpoint", models.CharField(max_length=64)),
                        ("key", models.CharField(max_length=255)),
                        ("request_hash", models.CharField(max_length=64)),
                        ("status_code", models.PositiveSmallIntegerField()),
                        ("response_body", models.BinaryField()),
                        (
                            "created_at",
                            models.DateTimeField(
                                db_index=True, default=django.utils.timezone.now
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memories_idempotencyrecord",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("credential", "endpoint", "key"),
                                name="idempotency_unique_key",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        )
    ]
