from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import User
from minds.models import Mind

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("createmind", *args, stdout=out)
    return out.getvalue()


def test_createmind_prints_a_working_key_once(owner):
    output = run("--email", "owner@example.com", "--name", "CLI mind")
    key = output.strip().splitlines()[-1]
    assert key.startswith("mk_")
    mind = Mind.objects.get(name="CLI mind")
    assert mind.owner == owner
    assert Mind.objects.for_key(key) == mind


def test_createmind_creates_a_missing_user_without_password(db):
    output = run("--email", "fresh@example.com", "--name", "First")
    user = User.objects.get(email="fresh@example.com")
    assert not user.has_usable_password()
    assert "changepassword fresh@example.com" in output


def test_createmind_refuses_an_empty_name(owner):
    with pytest.raises(CommandError):
        run("--email", "owner@example.com", "--name", "  ")


def test_welcome_explains_next_steps(db):
    out = StringIO()
    call_command("welcome", stdout=out)
    text = out.getvalue()
    assert "createmind" in text and "/register" in text and "http://localhost:8000" in text


def test_welcome_points_to_the_dashboard_sign_up(db):
    out = StringIO()
    call_command("welcome", stdout=out)
    assert "http://localhost:8000/accounts/signup/" in out.getvalue()
    assert "http://localhost:8000/dashboard/" in out.getvalue()


def test_welcome_does_not_offer_sign_up_when_registration_is_closed(db, settings):
    settings.SYNAPSE_ALLOW_REGISTRATION = False
    out = StringIO()
    call_command("welcome", stdout=out)
    text = out.getvalue()
    assert "/accounts/signup/" not in text and "/register" not in text
    assert "createmind" in text
