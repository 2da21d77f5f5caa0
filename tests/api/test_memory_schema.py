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


def _components(anon) -> dict:
    response = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    return response.json()["components"]["schemas"]


def _resolved(schema: dict, components: dict) -> dict:
    """The schema with an extracted enum (allOf: [$ref]) put back in place."""
    resolved = dict(schema)
    for part in resolved.pop("allOf", []):
        resolved.update(components[part["$ref"].rsplit("/", 1)[1]])
    return resolved


def test_the_write_body_is_documented_as_the_rules_take_it(anon, db):
    """The serializers only document the body: they must say what the validator does,
    field by field, as declared in memories/fields.py."""
    from memories.fields import FIELDS_BY_NAME, IGNORED_FIELDS, WRITABLE_FIELDS
    from memories.rules import SUPERSEDES

    components = _components(anon)
    body = components["MemoryWriteRequest"]
    assert body["required"] == ["category", "content"]
    assert body["additionalProperties"] is False
    written = [name for name, s in body["properties"].items() if not s.get("readOnly")]
    assert written == [*WRITABLE_FIELDS, SUPERSEDES]
    assert {n for n, s in body["properties"].items() if s.get("readOnly")} == set(IGNORED_FIELDS)
    for name in WRITABLE_FIELDS:  # `supersedes` names a memory, not one of its fields
        documented = _resolved(body["properties"][name], components)
        declared = FIELDS_BY_NAME[name].accepts or {}
        assert {k: documented.get(k) for k in declared} == declared, name
    update = components["MemoryUpdateRequest"]
    assert "required" not in update
    assert set(update["properties"]) == set(body["properties"])


def test_the_answer_is_documented_as_the_core_answers(anon, db):
    from memories.fields import PUBLIC_FIELDS

    memory = _components(anon)["Memory"]
    assert list(memory["properties"]) == list(PUBLIC_FIELDS)
    assert set(memory["required"]) == set(PUBLIC_FIELDS)


def test_versions_are_documented(anon, db):
    """GET and the writes to one memory answer its ETag; the writes take If-Match and can
    answer 412 (../shared/API.md section 9.7)."""
    response = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    paths = response.json()["paths"]
    one, verify, unverify = (
        paths[p] for p in ("/memory/{id}", "/memory/{id}/verify", "/memory/{id}/unverify")
    )
    writes = [one["put"], one["patch"], one["delete"], verify["post"], unverify["post"]]
    for operation in writes:
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert "If-Match" in headers, operation["operationId"]
        assert "412" in operation["responses"], operation["operationId"]
    for operation in (one["get"], one["put"], one["patch"], verify["post"], unverify["post"]):
        assert "ETag" in operation["responses"]["200"]["headers"], operation["operationId"]
