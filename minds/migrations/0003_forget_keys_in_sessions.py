"""Session rows written before keys were shown only on the page that made them could hold a
new Mind Key in the clear (under "dashboard_new_mind_key") until they expired: drop that entry."""

from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations

OLD_ENTRY = "dashboard_new_mind_key"


def forget_keys(apps, schema_editor):
    Session = apps.get_model("sessions", "Session")
    store = SessionStore()
    for row in Session.objects.filter(expire_date__isnull=False).iterator():
        data = store.decode(row.session_data)  # an unreadable row decodes as {}
        if OLD_ENTRY in data:
            del data[OLD_ENTRY]
            row.session_data = store.encode(data)
            row.save(update_fields=["session_data"])


class Migration(migrations.Migration):
    dependencies = [
        ("minds", "0002_mind_usage"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forget_keys, migrations.RunPython.noop)]
