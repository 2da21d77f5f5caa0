"""Where webhooks may send: every refusal is checked without sending anything."""

from __future__ import annotations

import socket

import pytest

from core.errors import Invalid
from webhooks import destinations
from webhooks.destinations import Refused, parse, post, resolve, url_check

NOT_PUBLIC = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.9",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.100.100.200",  # shared address space (another cloud's metadata)
    "0.0.0.0",
    "[::1]",
    "[fd00:ec2::254]",
    "[::ffff:127.0.0.1]",
    "[fe80::1]",
]


@pytest.fixture
def no_connection(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a refused destination was connected to")

    monkeypatch.setattr(socket, "create_connection", refuse)


def resolving_to(monkeypatch, *addresses: str) -> None:
    def fake(host, port, *args, **kwargs):
        family = socket.AF_INET6 if ":" in addresses[0] else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", fake)


@pytest.mark.parametrize("host", NOT_PUBLIC)
def test_addresses_that_are_not_public_are_refused(host, settings, no_connection):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(Invalid) as refused:
        url_check(f"https://{host}/hook")
    assert "url" in refused.value.fields
    answer = post(f"https://{host}/hook", b"{}", {})
    assert answer.status is None and answer.error.startswith("Not sent:")


def test_a_name_that_resolves_to_a_private_address_is_refused(settings, monkeypatch, no_connection):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    resolving_to(monkeypatch, "10.0.0.7")
    with pytest.raises(Invalid, match=r"resolves to 10\.0\.0\.7, a private address"):
        url_check("https://hooks.example.com/in")


def test_one_private_answer_among_public_ones_is_enough_to_refuse(
    settings, monkeypatch, no_connection
):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    resolving_to(monkeypatch, "8.8.8.8", "127.0.0.1")
    with pytest.raises(Refused, match="loopback"):
        resolve(parse("https://hooks.example.com/in"))


def test_dns_that_changes_after_registration_is_refused_at_delivery(
    settings, monkeypatch, no_connection
):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    resolving_to(monkeypatch, "8.8.8.8")
    assert url_check("https://hooks.example.com/in") == "https://hooks.example.com/in"
    resolving_to(monkeypatch, "169.254.169.254")
    answer = post("https://hooks.example.com/in", b"{}", {})
    assert answer.status is None and "link-local" in answer.error


def test_the_connection_goes_to_the_address_that_was_checked(settings, monkeypatch):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    resolving_to(monkeypatch, "8.8.8.8")
    connected = []

    def record(address, timeout=None, *args, **kwargs):
        connected.append(address)
        raise ConnectionRefusedError("not really")

    monkeypatch.setattr(socket, "create_connection", record)
    answer = post("https://hooks.example.com/in", b"{}", {})
    assert connected == [("8.8.8.8", 443)]
    assert answer.status is None and "ConnectionRefusedError" in answer.error


def test_plain_http_is_refused_for_a_public_receiver(settings, monkeypatch, no_connection):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    resolving_to(monkeypatch, "8.8.8.8")
    with pytest.raises(Invalid, match="Use https"):
        url_check("http://hooks.example.com/in")


def test_allow_private_lets_a_local_receiver_in(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    assert url_check(" http://127.0.0.1:9/hook ") == "http://127.0.0.1:9/hook"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/x", "https://"),
        ("https:///nohost", "no host"),
        ("https://user:pw@127.0.0.1/x", "credentials"),
        ("https://127.0.0.1:99999/x", "valid URL"),
        ("https://127.0.0.1/a b", "spaces"),
        ("", "Give the URL"),
        (42, "Give the URL"),
        ("https://x/" + "a" * 2000, "at most"),
    ],
)
def test_malformed_urls_name_the_field(url, message, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    with pytest.raises(Invalid, match=message) as refused:
        url_check(url)
    assert list(refused.value.fields) == ["url"]


def test_a_redirect_is_not_followed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    from tests.webhook_receiver import receiving

    with receiving(answers=[302]) as receiver:
        answer = post(receiver.url, b"{}", {})
    assert answer.status == 302 and not answer.delivered and "redirect" in answer.error
    assert len(receiver.received) == 1


def test_a_receiver_that_never_answers_times_out(settings, monkeypatch):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    monkeypatch.setattr(destinations, "SEND_TIMEOUT", 0.5)
    from tests.webhook_receiver import receiving

    with receiving(default="hang") as receiver:
        answer = post(receiver.url, b"{}", {})
    assert answer.status is None and "No answer within 0.5 s" in answer.error


def test_only_the_first_bytes_of_an_answer_are_kept(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    from tests.webhook_receiver import receiving

    with receiving(answer_body=b"x" * 100_000) as receiver:
        answer = post(receiver.url, b"{}", {})
    assert answer.delivered and len(answer.body) == destinations.RESPONSE_HEAD_BYTES
