import pytest

pytestmark = pytest.mark.django_db


def test_health_tells_anyone_it_is_alive_and_only_staff_the_counts(
    anon, client, mind, stranger_mind, other_user, owner
):
    response = anon.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    client.force_login(owner)
    assert client.get("/health").json() == {"status": "ok"}
    owner.is_staff = True
    owner.save()
    response = client.get("/health")
    assert response.json() == {"status": "ok", "users": 3, "minds": 2, "memories": 0}


def test_guide_is_plain_text_for_agents_with_this_hosts_url(client):
    response = client.get("/", HTTP_ACCEPT="*/*", HTTP_HOST="localhost:8000")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert "curl -s http://localhost:8000/memory/recall" in text
    assert "/memory/search?q=" in text


def test_guide_is_a_page_for_browsers(client):
    response = client.get("/", HTTP_ACCEPT="text/html,application/xhtml+xml")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<h1>Synapse</h1>" in html
    assert 'href="/admin/"' not in html  # the admin is for staff: only they see its link
    assert "/memory/recall" in html


def test_openapi_schema_describes_the_api(client):
    response = client.get("/api/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/minds" in schema["paths"] or "/minds/" in str(schema["paths"])


def test_interactive_docs_are_served_without_a_cdn(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
