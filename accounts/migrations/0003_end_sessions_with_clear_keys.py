"""Sessions stored before accounts/sessions.py kept their key in the clear, so every backup
taken until now holds keys that open them. They are ended, not converted: people sign in
again once, and no key in an older backup opens anything. Going back, the hashed sessions
are ended in turn (the older store would take a row's hash for a key)."""

from django.db import migrations

# accounts/sessions.py keys each row by 40 hex characters; Django's own keys are 32 of [a-z0-9].
KEY_HASH_LENGTH = 40
HEX = frozenset("0123456789abcdef")


def _is_hash(session_key):
    return len(session_key) == KEY_HASH_LENGTH and set(session_key) <= HEX


def _end(apps, *, hashed):
    Session = apps.get_model("sessions", "Session")
    stored = Session.objects.values_list("session_key", flat=True)
    keys = [k for k in stored if _is_hash(k) == hashed]
    for start in range(0, len(keys), 500):
        Session.objects.filter(session_key__in=keys[start : start + 500]).delete()


def end_sessions_with_clear_keys(apps, schema_editor):
    _end(apps, hashed=False)


def end_hashed_sessions(apps, schema_editor):
    _end(apps, hashed=True)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_revokedtoken"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(end_sessions_with_clear_keys, end_hashed_sessions)]
