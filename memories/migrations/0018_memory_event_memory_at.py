"""An audit row is found by its memory and time: (memory_id, at) serves a memory's history
and a rebuild's rows since a moment, in place of the index on memory_id alone."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0017_memory_spans'),
        ('minds', '0005_share'),
    ]

    operations = [
        migrations.AlterField(
            model_name='memoryevent',
            name='memory_id',
            field=models.CharField(max_length=32),
        ),
        migrations.AddIndex(
            model_name='memoryevent',
            index=models.Index(fields=['memory_id', 'at'], name='memory_event_memory_at_idx'),
        ),
    ]
