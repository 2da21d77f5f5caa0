"""The core speaks no HTTP, and one face never imports another (../shared/ARCHITECTURE.md).

Read from the source (ast), so a test fails on the import itself, wherever it sits.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.layout import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = PACKAGES
CORE_APPS = (
    "core",
    "memories",
    "minds",
    "accounts",
    "webhooks",
    "chat",
    "scheduler",
    "connections",
)

# The core: every module of the core apps but their migrations, management commands and admin
# (the admin is a face that lives beside the models it shows).
CORE = sorted(
    str(path.relative_to(ROOT).with_suffix("")).replace("/", ".").removesuffix(".__init__")
    for app in CORE_APPS
    for path in (ROOT / app).rglob("*.py")
    if not {"migrations", "management"} & set(path.relative_to(ROOT).parts)
    and path.name != "admin.py"
)
BELOW_THE_CORE = {"synapse_site.ids"}
HTTP = ("rest_framework", "drf_spectacular", "django.http", "django.shortcuts", "django.urls")
# The third-party packages the core stands on. Search by meaning (memories/embeddings/) adds
# numpy, onnx, onnxruntime and tokenizers, which run the bundled model; huey is the job engine
# whose tasks (memories/tasks.py) call the outbox.
CORE_THIRD_PARTY = {
    "django",
    "django_stubs_ext",
    "orjson",
    "numpy",
    "onnx",
    "onnxruntime",
    "tokenizers",
    "huey",
    "detect_secrets",  # the credential detector of memories/secrets.py
    "cryptography",  # secrets sealed at rest (core/sealed.py)
    "croniter",  # the scheduler's cron expressions (scheduler/rules.py)
    "oauth2_provider",  # OAuth tokens and apps behind connections (connections/)
}
# Calls out of the process: only the embeddings API's client and the webhooks' sender, with
# the standard library. They ask or tell a server; answering HTTP stays the faces' job.
OUTBOUND = ("urllib.request", "urllib.error", "http.client", "socket", "requests", "httpx")
# The embeddings API's client, the optional chat API that confirms contradictions, and the
# one function that sends webhook deliveries.
CALLS_OUT = {
    "memories.embeddings.remote",
    "memories.hygiene.contradictions",
    "webhooks.destinations",
}
FACES = {
    "api": "the API",
    "dashboard": "the dashboard",
    "mcp_server": "MCP",
    "memories.admin": "the admin",
    "minds.admin": "the admin",
    "accounts.admin": "the admin",
    "webhooks.admin": "the admin",
    "chat.admin": "the admin",
    "scheduler.admin": "the admin",
    "connections.admin": "the admin",
}


def imports(module: str) -> set[str]:
    """Every module `module` imports, as written (absolute names)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    return _imports_in(path)


def _imports_in(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_core_is_found():
    assert {"memories.services", "memories.rules", "memories.selectors", "memories.recall"} <= set(
        CORE
    )
    assert {"minds.services", "minds.access", "accounts.services", "core.errors"} <= set(CORE)
    assert "memories.search.sqlite" in CORE and "memories.tasks" in CORE
    assert not any(name.endswith(".admin") for name in CORE)


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_http(module):
    speaking = {name for name in imports(module) if any(_under(name, h) for h in HTTP)}
    assert not speaking, f"{module} imports {sorted(speaking)}"


@pytest.mark.parametrize("module", CORE)
def test_the_core_stands_only_on_the_core(module):
    """First-party imports of the core are the core itself (and the site's id helper)."""
    allowed = set(CORE) | BELOW_THE_CORE
    outside = {
        name
        for name in imports(module)
        if name.split(".")[0] in FIRST_PARTY
        and name not in allowed
        and not any(_under(name, ok) for ok in allowed - set(CORE_APPS))
    }
    assert not outside, f"{module} imports {sorted(outside)}"


@pytest.mark.parametrize("module", CORE)
def test_the_core_stands_on_few_third_party_packages(module):
    third_party = {
        name.split(".")[0]
        for name in imports(module)
        if name.split(".")[0] not in {*sys.stdlib_module_names, *FIRST_PARTY, "__future__"}
    }
    assert third_party <= CORE_THIRD_PARTY, f"{module} imports {sorted(third_party)}"


@pytest.mark.parametrize("module", sorted(set(CORE) - CALLS_OUT))
def test_only_the_embeddings_client_calls_out(module):
    calling = {name for name in imports(module) if any(_under(name, o) for o in OUTBOUND)}
    assert not calling, f"{module} imports {sorted(calling)}"


@pytest.mark.parametrize("module", CORE)
def test_the_core_parses_no_query_strings(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    source = (path if path.exists() else path.with_suffix("") / "__init__.py").read_text()
    tree = ast.parse(source)
    names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not {"query_params", "GET", "POST"} & names, module
    assert "QueryDict" not in source and "parse_qs" not in source, module


def _modules_of(package: str) -> list[str]:
    base = ROOT / package.replace(".", "/")
    files = [base.with_suffix(".py")] if base.with_suffix(".py").exists() else base.rglob("*.py")
    return [str(p.relative_to(ROOT).with_suffix("")).replace("/", ".") for p in files]


@pytest.mark.parametrize("face", FACES)
def test_no_face_imports_another(face):
    others = [other for other in FACES if other != face and not _under(face, other)]
    for module in _modules_of(face):
        crossing = {
            name
            for name in imports(module)
            for other in others
            if _under(name, other) and not _under(module, other)
        }
        assert not crossing, f"{module} ({FACES[face]}) imports {sorted(crossing)}"
