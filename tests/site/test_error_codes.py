"""The README lists every `error` code the server can answer with, and no other: the codes
are collected from the code (the exception handler's classes, the core's errors, every
literal error body, gunicorn's own errors) and compared with the README's table."""

from __future__ import annotations

import re

from core import errors as core
from synapse_site.errors import CODE_BY_CLASS
from synapse_site.server import PROTOCOL_ERRORS
from tests.layout import PACKAGES
from tests.reliability.harness import REPO

LITERAL_CODES = (
    re.compile(r'error_body\(\s*"(\w+)"'),
    re.compile(r'_http_error\(\s*\d+,\s*"(\w+)"'),
    re.compile(r'default_code = "(\w+)"'),
)


def _subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in {direct, *_subclasses(direct)}}


def emitted_codes() -> set[str]:
    codes = set(CODE_BY_CLASS.values())
    codes |= {code for code, _ in PROTOCOL_ERRORS.values()}
    codes |= {error.code for error in _subclasses(core.CoreError)}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            text = path.read_text()
            for pattern in LITERAL_CODES:
                codes |= set(pattern.findall(text))
    return codes


def documented_codes() -> set[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("`error` is a machine code", 1)[1].split("\n## ", 1)[0]
    codes = set(re.findall(r"^\| `(\w+)` \| \d{3} \|", section, re.M))
    mcp = section.split("The MCP endpoint", 1)[1]
    return codes | set(re.findall(r"`(\w+)` \(\d{3}", mcp))


def test_every_error_code_the_server_gives_is_in_the_readme_and_no_other():
    emitted, documented = emitted_codes(), documented_codes()
    assert {"invalid", "idempotency_key_reused", "bad_request", "uri_too_long"} <= emitted
    assert emitted - documented == set(), "codes the README does not list"
    assert documented - emitted == set(), "codes the README lists that nothing gives"
