"""Credentials kept out of memories (memories/secrets.py, SYNAPSE_SECRETS): the detector on
real-looking secrets and harmless look-alikes, and the three modes through every face."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from core.errors import Invalid
from memories.models import Memory
from memories.rules import memory_body_clean
from memories.secrets import find_secrets, kinds, redact
from tests.factories import AGENT, PERSON

# Each built from parts, so no scanner of this repository takes them for real ones.
SECRETS = [
    "aws key AKIAIOSFODNN7EXAMPLQ for the backup bucket",
    'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
    "GitHub: ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A",
    "gitlab glpat-" + "xY7bN2mK9pQ4rT6vW8zA",
    "slack bot xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "hook https://hooks.slack.com/services/T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoPqRsTuVwX",
    "stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "stripe test sk_test_" + "51H8xYzAbCdEfGhIjKlMnOpQr",
    "openai sk-proj-" + "Ab3De5Fg7Hi9Jk1Lm3No5Pq7Rs9Tu1Vw3Xy5Za7Bc9De",
    "old openai sk-" + "abcdefghij1234567890T3BlbkFJabcdefghij1234567890",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq98Zh3\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543aZ",
    "DATABASE_URL=postgres://app:S3cretPassw0rd@db.internal:5432/app",
    "mysql://root:hunter2pass@127.0.0.1/shop",
    "Server=db01;Database=crm;User Id=sa;Password=Tr0ub4dor&3;",
    "password=Xk9#mQ2!vL7p",
    "db_pass: 7hG4kL9pQ2xZ",
    "google maps key AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "twilio account AC" + "1234567890abcdef1234567890abcdef",
    "twilio SK" + "0123456789abcdef0123456789abcdef",
    "sendgrid SG." + "ngeVfQFYQlKU0ufo8x5d1A.TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
    "npm //registry.npmjs.org/:_authToken=npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "telegram 123456789:AAH" + "fDz9kLm3nP5qR7sT9uV1wX3yZ5aB7cD9eF1",
    "mailchimp 0123456789abcdef0123456789abcdef-us12",
    "my github token is 9f8e7d6c5b4a39281706f5e4d3c2b1a0x",
    "the API secret: Zq8vN3mX7kP1wR5t",
    "mind key mk_" + "Qx7vN2kP9mR4tW8zB3cF6hJ1lS5dG0aY2eU7iO4pE9w",
    "anthropic sk-ant-api03-" + "Ab3De5Fg7Hi9Jk1Lm3No5Pq7Rs9Tu1Vw3Xy5Za7Bc9De",
    "azure AccountKey="
    + "a" * 20
    + "B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R9s0T1u2V3w4X5y6Z7a8B9c0D1e2F3g4H5i6J7k8L==",
]
LOOK_ALIKES = [
    "fixed in commit 9c1185a5c5e9fc54612808977ee8f548b2258d31",
    "short sha 9c1185a",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "memory mem_k3j9x0a2b7c4d5e6f8g1 was verified",
    "mind m_ab12cd34ef56gh78ij90 belongs to Ana",
    "the base64 of hello world is aGVsbG8gd29ybGQ=",
    "base64 of a sentence: VGhlIHF1aWNrIGJyb3duIGZveA==",
    "brand colour is #1a2b3c and accent #ffcc00",
    "upgrade to version 1.12.3-rc.4+build.5678",
    "python 3.11.9 and django 5.2.1",
    "antidisestablishmentarianism is a long word",
    "internationalization and localization matter",
    "see https://docs.python.org/3/library/secrets.html",
    "clone https://github.com/synapse/synapse.git",
    "meeting on 2026-03-14T09:30:00Z",
    "born 1987-11-02, moved 2015-06-30",
    "the secret to good bread is time",
    "password must have at least 12 characters",
    "token count for this prompt was 4096",
    "rotate the API key every 90 days",
    "password: changeme is not allowed",
    "phone +49 30 1234567",
    "the user prefers dark mode in every editor",
    "email ana.lopez@example.com",
    "the Authorization header uses a Bearer scheme",
    "ssh-keygen -t ed25519 makes a key pair",
    "order number ORD-2026-000123-XY",
    "MD5 d41d8cd98f00b204e9800998ecf8427e of the empty file",
    "use snake_case_identifiers_like_this_one_here",
    "postgres://db.internal:5432/app without a password",
    "docker image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "auth happens through the login page",
]


def test_there_are_enough_samples():
    assert len(SECRETS) >= 30 and len(LOOK_ALIKES) >= 30


@pytest.mark.parametrize("text", SECRETS)
def test_every_secret_is_found_and_redacted(text):
    findings = find_secrets(text)
    assert findings, text
    cleaned = redact(text, findings)
    assert "[redacted: " in cleaned
    for finding in findings:
        assert text[finding.start : finding.end] not in cleaned


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_no_look_alike_is_taken_for_a_secret(text):
    assert find_secrets(text) == [], (text, kinds(find_secrets(text)))


def test_a_mind_key_is_a_credential(owner_mind):
    assert kinds(find_secrets(f"the agent's key is {owner_mind.key}")) == ["Synapse Mind Key"]
    # Its shown prefix alone is not.
    assert find_secrets(f"key {owner_mind.key[:11]} was revoked") == []


def test_what_is_around_a_secret_stays():
    text = "deploy with AKIA" + "IOSFODNN7EXAMPLQ then restart"
    assert redact(text, find_secrets(text)) == (
        "deploy with [redacted: AWS Access Key] then restart"
    )


def test_a_private_key_block_goes_whole():
    text = SECRETS[10] + "\nkept"
    assert redact(text, find_secrets(text)) == "[redacted: Private Key]\nkept"


# --- The rule, in the one validator ------------------------------------------------------


def test_redact_is_the_default_and_warns(settings):
    assert settings.SYNAPSE_SECRETS == "redact"
    body = {"category": "fact", "content": "token ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"}
    write = memory_body_clean(body, actor=AGENT)
    assert write.values["content"] == "token [redacted: GitHub Token]"
    assert any("content held a credential (GitHub Token)" in w for w in write.warnings)
    assert "ghp_" not in write.values["key"]  # a derived key is made from what is stored


def test_redacted_tags_are_read_as_sent(settings):
    # Lower-cased, an AWS key id would no longer look like one: the tag is read as sent.
    body = {"category": "fact", "content": "x", "tags": ["Ops", "AKIA" + "IOSFODNN7EXAMPLQ"]}
    write = memory_body_clean(body, actor=AGENT)
    assert write.values["tags"] == ["ops", "[redacted: aws access key]"]
    assert any(w.startswith("tags held a credential") for w in write.warnings)


def test_refuse_names_the_field_and_the_kind(settings):
    settings.SYNAPSE_SECRETS = "refuse"
    body = {
        "category": "fact",
        "content": SECRETS[14],
        "tags": ["sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"],
    }
    with pytest.raises(Invalid) as refused:
        memory_body_clean(body, actor=PERSON)
    assert "Basic Auth Credentials" in refused.value.fields["content"][0]
    assert "Stripe Access Key" in refused.value.fields["tags"][0]


def test_allow_stores_as_sent(settings):
    settings.SYNAPSE_SECRETS = "allow"
    write = memory_body_clean({"category": "fact", "content": SECRETS[0]}, actor=AGENT)
    assert write.values["content"] == SECRETS[0]
    assert write.warnings == ()


def test_a_partial_update_is_checked_too():
    write = memory_body_clean({"content": SECRETS[17]}, actor=AGENT, partial=True)
    assert "Xk9#" not in write.values["content"]


# --- Through the faces ---------------------------------------------------------------------


def test_api_store_redacts_and_warns(agent, mind):
    response = agent.post("/memory", {"category": "fact", "content": SECRETS[6]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["content"] == "stripe [redacted: Stripe Access Key]"
    assert any("credential" in w for w in body["warnings"])
    assert not Memory.objects.filter(content__contains="4eC39Hq").exists()


def test_api_store_refuses_with_a_400(agent, mind, settings):
    settings.SYNAPSE_SECRETS = "refuse"
    response = agent.post("/memory", {"category": "fact", "content": SECRETS[12]}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert "JSON Web Token" in body["fields"]["content"][0]
    assert not Memory.objects.filter(mind=mind).exists()


def test_api_update_refuses_and_writes_nothing(human, mind, settings):
    stored = human.post("/memory", {"category": "fact", "content": "plain"}, format="json").json()
    settings.SYNAPSE_SECRETS = "refuse"
    response = human.patch(f"/memory/{stored['id']}", {"content": SECRETS[28]}, format="json")
    assert response.status_code == 400
    assert "Synapse Mind Key" in response.json()["fields"]["content"][0]
    assert Memory.objects.get(pk=stored["id"]).content == "plain"


def test_api_allow_keeps_it(agent, mind, settings):
    settings.SYNAPSE_SECRETS = "allow"
    response = agent.post("/memory", {"category": "fact", "content": SECRETS[2]}, format="json")
    assert response.json()["content"] == SECRETS[2]


def test_sync_redacts_per_item_and_refuses_per_item(agent, mind, settings):
    items = [
        {"category": "fact", "key": "a", "content": SECRETS[4]},
        {"category": "fact", "key": "b", "content": "nothing to hide"},
    ]
    results = agent.post("/memory/sync", {"memories": items}, format="json").json()["results"]
    stored = Memory.objects.get(mind=mind, key="a")
    assert stored.content == "slack bot [redacted: Slack Token]"
    assert any("credential" in w for w in results[0]["warnings"])
    settings.SYNAPSE_SECRETS = "refuse"
    items[0]["key"] = "c"
    body = agent.post("/memory/sync", {"memories": items}, format="json").json()
    (error,) = body["errors"]
    assert error["index"] == 0 and "Slack Token" in error["fields"]["content"][0]
    assert not Memory.objects.filter(mind=mind, key="c").exists()


def _mcp_remember(key: str, arguments: dict) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": arguments},
    }
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.post("/mcp", data=json.dumps(body), content_type="application/json")
    return response.json()["result"]


def test_mcp_remember_redacts_and_refuses(owner_mind, mind, settings):
    result = _mcp_remember(owner_mind.key, {"category": "fact", "content": SECRETS[19]})
    assert result["isError"] is False
    assert result["structuredContent"]["content"] == "google maps key [redacted: Google API Key]"
    settings.SYNAPSE_SECRETS = "refuse"
    result = _mcp_remember(owner_mind.key, {"category": "fact", "content": SECRETS[15]})
    assert result["isError"] is True
    assert "content" in result["content"][0]["text"]
    assert "Basic Auth Credentials" in result["content"][0]["text"]


# --- manage.py scan_secrets ----------------------------------------------------------------


def test_scan_secrets_reports_without_printing_them_and_redacts_with_purge(mind, settings):
    from io import StringIO

    from django.core.management import call_command

    from memories import audit
    from memories.models import MemoryEvent
    from tests.factories import remember

    settings.SYNAPSE_SECRETS = "allow"
    held = remember(mind, "deploy", "deploy with " + SECRETS[0], tags=["ops"])
    clean = remember(mind, "plain", "nothing here")
    settings.SYNAPSE_SECRETS = "redact"
    out = StringIO()
    call_command("scan_secrets", stdout=out)
    report = out.getvalue()
    assert f"{mind.pk}\t{held.pk}\tdeploy\tcontent\tAWS Access Key" in report
    assert "AKIA" not in report and clean.pk not in report
    assert Memory.objects.get(pk=held.pk).content == SECRETS[0].join(["deploy with ", ""])

    call_command("scan_secrets", "--redact", stdout=StringIO())
    held.refresh_from_db()
    assert held.content == "deploy with aws key [redacted: AWS Access Key] for the backup bucket"
    events = MemoryEvent.objects.filter(memory_id=held.pk)
    assert "AKIA" not in str([e.changes for e in events])
    assert all(audit.is_purged(e.changes["content"]) for e in events if "content" in e.changes)
    out = StringIO()
    call_command("scan_secrets", stdout=out)
    assert out.getvalue().strip() == "0 field(s) holding a credential found."
