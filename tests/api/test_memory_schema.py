"""The OpenAPI schema describes the /memory endpoints."""

from __future__ import annotations


def test_schema_lists_memory_endpoints(anon, db):
    response = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json() if "json" in response["Content-Type"] else None
    text = response.content.decode()
    for fragment in ("/memory", "/memory/{id}", "/memory/{id}/verify", "/memory/{id}/unverify"):
        assert fragment in text
    if schema is not None:
        store = next(v for k, v in schema["paths"].items() if k.rstrip("/") == "/memory")
        assert {"get", "post"} <= set(store)
