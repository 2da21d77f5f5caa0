"""Spans (memories/spans.py): what orders, narrows and counts each memory in a recall over
each span of time its values held. The spans of the memories already stored are built from
each mind's audit trail, a mind at a time (memories/as_of.py, spans_from_trail)."""

import django.db.models.deletion
from django.db import migrations, models


def spans_from_trails(apps, schema_editor):
    from memories import rows
    from memories.as_of import spans_from_trail
    from memories.models import MemorySpan
    from minds.models import Mind

    for mind in Mind.objects.using(schema_editor.connection.alias).iterator():
        rows.insert(MemorySpan, spans_from_trail(mind))


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0016_memory_event_undelete'),
        ('minds', '0005_share'),
    ]

    operations = [
        migrations.CreateModel(
            name='MemorySpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('memory_id', models.CharField(db_index=True, max_length=32)),
                ('start', models.DateTimeField()),
                ('end', models.DateTimeField(blank=True, null=True)),
                ('category', models.CharField(max_length=16)),
                ('key', models.CharField(max_length=200)),
                ('priority', models.PositiveSmallIntegerField()),
                ('verified', models.BooleanField()),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('superseded_by', models.CharField(blank=True, default='', max_length=32)),
                ('tags', models.TextField(default='[]')),
                ('updated_at', models.DateTimeField()),
                ('mind', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='minds.mind')),
            ],
            options={
                'indexes': [models.Index(fields=['mind', 'end', 'start', 'verified', 'priority', 'expires_at', 'superseded_by', 'updated_at', 'memory_id', 'key'], name='memory_span_end_idx')],
            },
        ),
        # Backwards the table is dropped by the CreateModel: nothing to undo here.
        migrations.RunPython(spans_from_trails, migrations.RunPython.noop),
    ]
