import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_unknown_path_is_json_404(anon):
    response = anon.get("/no/such/thing")
    assert response.status_code == 404
    body = response.json()
    assert body["error"] == "not_found"
    assert "/no/such/thing" in body["detail"]


def test_unknown_method_is_json_405(human):
    response = human.put("/minds", {}, format="json")
    assert response.status_code == 405
    assert set(response.json()) >= {"error", "detail"}


def test_body_over_the_limit_is_413(anon, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = anon.generic(
        "POST", "/register", '{"email": "' + "a" * 2000 + '"}', content_type="application/json"
    )
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"


def test_validation_errors_have_the_shape(anon):
    body = anon.post("/register", {}, format="json").json()
    assert body["error"] == "invalid"
    assert isinstance(body["detail"], str) and body["detail"]
    assert set(body["fields"]) == {"email", "password"}
    assert all(isinstance(msgs, list) for msgs in body["fields"].values())


def test_unexpected_server_error_is_json_500(anon, monkeypatch):
    from synapse_site import views

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(views.Mind.objects, "exists", boom)
    anon.raise_request_exception = False
    with override_settings(DEBUG=False):
        response = anon.get("/health")
    assert response.status_code == 500
    assert response.json()["error"] == "server_error"
    assert "kaboom" not in response.content.decode()
