"""Where a webhook may send, and the one function that sends.

A destination is refused when its host resolves to an address that is not public
(loopback, private, link-local and cloud metadata, shared, reserved, multicast), checked at
registration and again at each delivery, since DNS can change: the connection goes to the
address that was checked, never to a second lookup. SYNAPSE_WEBHOOKS_ALLOW_PRIVATE lifts the
check for receivers on this host or network; plain http is accepted only for those.
Redirects are not followed, an attempt gives up after SEND_TIMEOUT seconds, and only the
first bytes of an answer are read. The scheduler's calls to outside URLs go out the same way.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from core.errors import Invalid
from webhooks.models import MAX_URL_LENGTH, RESPONSE_HEAD_BYTES

SEND_TIMEOUT = 10.0
USER_AGENT = "Synapse-Webhooks/1"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """A destination this server does not send to; the message says why."""


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line


def parse(url: object) -> Destination:
    """The parts of a webhook URL, or Invalid naming `url`."""
    if not isinstance(url, str) or not url.strip():
        raise Invalid.one("url", "Give the URL the events are sent to.")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise Invalid.one("url", f"Use at most {MAX_URL_LENGTH} characters.")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise Invalid.one("url", "A URL holds no spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise Invalid.one("url", f"Not a valid URL ({error}).") from None
    if parts.scheme not in {"https", "http"}:
        raise Invalid.one("url", "Use an https:// URL.")
    if not parts.hostname:
        raise Invalid.one("url", "The URL names no host.")
    if parts.username is not None or parts.password is not None:
        raise Invalid.one(
            "url", "Leave credentials out of the URL; the signature proves the sender."
        )
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    default = 443 if parts.scheme == "https" else 80
    return Destination(parts.scheme, parts.hostname, port or default, target)


def refusal(address: Address) -> str | None:
    """Why this server does not send to `address` (None: it may)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified or address.is_multicast:
        return "an address no receiver has"
    if settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE or address.is_global:
        return None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_private:
        return "a private address"
    return "an address that is not public"


def resolve(destination: Destination) -> Address:
    """The address to connect to: every address the host resolves to must be allowed (an
    attacker's DNS may answer a public one and a private one). Refused otherwise."""
    try:
        address = ipaddress.ip_address(destination.host.strip("[]"))
        found: list[Address] = [address]
    except ValueError:
        try:
            infos = socket.getaddrinfo(destination.host, destination.port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise Refused(f"{destination.host} does not resolve ({error}).") from None
        found = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
    if not found:
        raise Refused(f"{destination.host} does not resolve.")
    for address in found:
        why = refusal(address)
        if why is not None:
            raise Refused(
                f"{destination.host} resolves to {address}, {why}; receivers must be public "
                "(or set SYNAPSE_WEBHOOKS_ALLOW_PRIVATE=true)."
            )
    if destination.scheme == "http" and all(a.is_global for a in found):
        raise Refused("Use https:// for a public receiver: events hold memories' content.")
    return found[0]


def url_check(url: object) -> str:
    """A webhook URL a body gives, checked as a delivery will check it; Invalid naming `url`
    otherwise. Returns it trimmed."""
    destination = parse(url)
    try:
        resolve(destination)
    except Refused as refused:
        raise Invalid.one("url", str(refused)) from None
    assert isinstance(url, str)
    return url.strip()


# --- Sending --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One attempt: the receiver's status and the first bytes of its answer, or the error
    that stopped it (status None)."""

    status: int | None
    body: str
    duration_ms: int
    error: str = ""

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the checked address; the Host header keeps the URL's host."""

    def __init__(self, destination: Destination, address: Address, timeout: float) -> None:
        super().__init__(destination.host, destination.port, timeout=timeout)
        self._address = str(address)

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """Connects to the checked address; TLS still checks the certificate for the URL's host."""

    def __init__(
        self, destination: Destination, address: Address, timeout: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(destination.host, destination.port, timeout=timeout, context=context)
        self._address = str(address)
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def tls_context() -> ssl.SSLContext:
    """The TLS settings of a delivery: the system's trusted authorities."""
    return ssl.create_default_context()


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST `body` to `url`, to the address checked now; never raises for the receiver's
    sake: a refusal, a timeout or a broken connection is an Answer with its error."""
    return send("POST", url, body, {**headers, "Content-Type": "application/json"})


def send(
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    *,
    user_agent: str = USER_AGENT,
) -> Answer:
    """Send one request as `post` does (the address checked now, no redirects, the time
    limited, the first bytes read), with any method and the caller's headers."""
    started = time.monotonic()

    def answer(status: int | None, text: str = "", error: str = "") -> Answer:
        return Answer(status, text, int((time.monotonic() - started) * 1000), error[:300])

    try:
        destination = parse(url)
        address = resolve(destination)
    except Invalid as invalid:
        return answer(None, error=invalid.text())
    except Refused as refused:
        return answer(None, error=f"Not sent: {refused}")
    connection: http.client.HTTPConnection = (
        _PinnedHTTPS(destination, address, SEND_TIMEOUT, tls_context())
        if destination.scheme == "https"
        else _PinnedHTTP(destination, address, SEND_TIMEOUT)
    )
    deadline = started + SEND_TIMEOUT
    try:
        connection.request(
            method,
            destination.target,
            body=body,
            headers={**headers, "User-Agent": user_agent, "Connection": "close"},
        )
        _cut_to(connection, deadline)
        response = connection.getresponse()
        _cut_to(connection, deadline)
        head = response.read(RESPONSE_HEAD_BYTES)
        text = head.decode("utf-8", "replace")
        if 300 <= response.status < 400:
            return answer(response.status, text, "A redirect; redirects are not followed.")
        return answer(response.status, text)
    except TimeoutError:
        return answer(None, error=f"No answer within {SEND_TIMEOUT:g} s.")
    except (OSError, http.client.HTTPException) as error:
        return answer(
            None, error=f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        )
    finally:
        connection.close()


def _cut_to(connection: http.client.HTTPConnection, deadline: float) -> None:
    """What is left of the attempt's time becomes the socket's timeout: a receiver that
    answers a byte at a time still ends the attempt at its deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if connection.sock is not None:
        connection.sock.settimeout(left)
