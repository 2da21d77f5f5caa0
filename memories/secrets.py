"""Credentials kept out of memories: finding them in a text, and redacting them.

The vendor patterns are detect-secrets' plugins (cloud keys, tokens of well-known services,
private keys, JWTs, passwords in URLs, `password = …` assignments); a few patterns of our
own add what it lacks (bearer headers, Google API keys, newer `sk-…` keys, this server's own
Mind Keys) and a high-entropy token written right after a word such as password, token or
secret. What a write does with a finding is SYNAPSE_SECRETS' (memories/rules.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

MODES = ("redact", "refuse", "allow")

# detect-secrets' pattern plugins; left out: Artifactory's (matches capitalised words), the
# IBM, Cloudant and Softlayer ones (keyword heuristics the keyword check already covers) and
# public IP addresses (no credential).
_PLUGINS: tuple[RegexBasedDetector, ...] = (
    AWSKeyDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
_KEYWORD = KeywordDetector()
# The keyword plugin's most permissive form (unquoted `password: value`) is YAML's.
_KEYWORD_FILENAME = "memory.yaml"

# (kind, pattern): the secret is the last non-empty group, or the whole match.
_OURS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "Private Key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    # A Mind Key pasted into a memory would let anyone who reads the memory act as the agent.
    ("Synapse Mind Key", re.compile(r"\bmk_[A-Za-z0-9_\-]{40,}")),
    ("Bearer Token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)")),
    ("Google API Key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("API Key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}")),
    ("Stripe Access Key", re.compile(r"\b[rs]k_test_[0-9a-zA-Z]{24,}")),
    (
        "Password in Connection String",
        re.compile(r"(?i)(?:^|[;\s])(?:password|pwd)\s*=\s*([^;\s'\"]{4,})"),
    ),
)

# A token right after one of these words, when it looks random, is taken for its value.
_NEAR_KEYWORD = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|pwd|(?:db|database|key)_?pass|secret|token"
    r"|api[ _-]?key|access[ _-]?key|credentials?|auth)s?\b[^\n]{0,30}?(?<![A-Za-z0-9+/_\-.=])"
    r"([A-Za-z0-9+/_\-.=!@#$%^&*]{10,})"
)
ENTROPY_THRESHOLD = 3.0

# Text with none of these, and no word of MIN_TOKEN characters, cannot hold anything the
# checks find: most writes stop there. Plain substring tests: a regular expression with
# these alternatives reads long texts several times slower.
_HINTS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "api key",
    "access_key",
    "accesskey",
    "access-key",
    "access key",
    "credential",
    "bearer",
    "auth",
    "private key",
)
MIN_TOKEN = 16
# Keyword values that name no credential.
_PLACEHOLDERS = frozenset(
    {"null", "none", "nil", "true", "false", "empty", "changeme", "redacted", "required"}
)


@dataclass(frozen=True)
class Finding:
    """One credential in a text: where it is and what kind it is."""

    start: int
    end: int
    kind: str


MARKER_START = "[redacted: "


def marker(kind: str) -> str:
    """What a redacted credential is replaced by."""
    return f"{MARKER_START}{kind}]"


def find_secrets(text: str) -> list[Finding]:
    """The credentials in `text`, in order, none overlapping (the first kind found wins)."""
    if not _maybe_holds_one(text):
        return []
    found: list[Finding] = []
    for kind, pattern in _OURS:
        for match in pattern.finditer(text):
            group = next((g for g in range(pattern.groups, 0, -1) if match.group(g)), 0)
            found.append(Finding(match.start(group), match.end(group), kind))
    if _holds_a_long_token(text):  # what the plugins' patterns find is never shorter
        for plugin in _PLUGINS:
            for pattern in plugin.denylist:
                for match in pattern.finditer(text):
                    found.extend(_plugin_finding(plugin, match))
    for line in text.splitlines():
        # The keyword plugin finds `word: value` and `word = value` forms only.
        if not (_maybe_holds_one(line) and ("=" in line or ":" in line)):
            continue
        for finding in _KEYWORD.analyze_line(filename=_KEYWORD_FILENAME, line=line):
            value = next(iter((finding.secret_value or "").split()), "")
            if _is_credential_value(value):
                found.extend(_occurrences(text, value, "Secret Keyword"))
    for match in _NEAR_KEYWORD.finditer(text):
        value = match.group(1).rstrip(".,;:!")
        if _looks_random(value):
            found.append(Finding(match.start(1), match.start(1) + len(value), "High-entropy Token"))
    return _without_overlaps(found)


def _maybe_holds_one(text: str) -> bool:
    lowered = text.lower()
    if any(hint in lowered for hint in _HINTS) or ("://" in text and "@" in text):
        return True
    return any(len(word) >= MIN_TOKEN for word in text.split())


def _holds_a_long_token(text: str) -> bool:
    """Whether `text` has a word of MIN_TOKEN characters, a URL with credentials, or a
    private key's header: the plugins' patterns find nothing in any other."""
    if ("://" in text and "@" in text) or "PRIVATE KEY" in text.upper():
        return True
    return any(len(word) >= MIN_TOKEN for word in text.split())


def redact(text: str, findings: list[Finding]) -> str:
    """`text` with each finding replaced by its marker."""
    parts, at = [], 0
    for finding in findings:
        parts += [text[at : finding.start], marker(finding.kind)]
        at = finding.end
    return "".join(parts) + text[at:]


def kinds(findings: list[Finding]) -> list[str]:
    """The kinds found, each once, in order."""
    return list(dict.fromkeys(finding.kind for finding in findings))


def _plugin_finding(plugin: RegexBasedDetector, match: re.Match[str]) -> Iterator[Finding]:
    # A group that holds the secret itself (a password in a URL, an AWS secret key after its
    # name) is what goes; a short one only names the token's type (`ghp`), so the whole does.
    group = next((g for g in range(match.re.groups, 0, -1) if match.group(g)), 0)
    if group and len(match.group(group)) < 8:
        group = 0
    value = match.group(group)
    if isinstance(plugin, JwtTokenDetector) and not plugin.is_formally_valid(value):
        return
    yield Finding(match.start(group), match.end(group), plugin.secret_type)


def _occurrences(text: str, value: str, kind: str) -> Iterator[Finding]:
    if not value:
        return
    start = text.find(value)
    while start != -1:
        yield Finding(start, start + len(value), kind)
        start = text.find(value, start + len(value))


def _without_overlaps(found: list[Finding]) -> list[Finding]:
    # The longest first at each start, so a whole token wins over a piece of it.
    kept: list[Finding] = []
    for finding in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if kept and finding.start < kept[-1].end:
            if finding.end > kept[-1].end:
                kept[-1] = Finding(kept[-1].start, finding.end, kept[-1].kind)
            continue
        kept.append(finding)
    return kept


def _is_credential_value(value: str) -> bool:
    """Whether a `password: value` value is one, not a placeholder or an ordinary word."""
    bare = value.strip("'\"")
    if len(bare) < 6 or bare.lower() in _PLACEHOLDERS:
        return False
    if bare.startswith(("$", "{", "<", "%")) or bare.endswith(("}", ">")):
        return False  # a template or a reference to a value kept elsewhere
    return not bare.isalpha() or not bare.islower()


def _looks_random(value: str) -> bool:
    has_letter = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    return has_letter and has_digit and shannon_entropy(value) >= ENTROPY_THRESHOLD


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s own character frequencies."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())
