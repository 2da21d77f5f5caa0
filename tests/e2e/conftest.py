"""A real browser (Debian's Chromium driven by Playwright) against pytest-django's live server.

Playwright's own browser download does not work here, so the tests drive the system Chromium:
`SYNAPSE_CHROMIUM` names it, else /usr/bin/chromium or `chromium` on the PATH. Without one
(or without the playwright package) every test here is skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    candidates = [
        os.environ.get("SYNAPSE_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    return next((c for c in candidates if c and Path(c).is_file()), None)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install puts it in the venv)")
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "No Chromium found for the browser tests: apt-get install chromium "
            "(or set SYNAPSE_CHROMIUM to a Chromium binary)"
        )
    # Playwright's sync API keeps an event loop in this thread; the tests' own ORM calls are
    # still plain synchronous code, so Django's async-safety guard must stand aside.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            yield instance
            instance.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where screenshots go: SYNAPSE_SCREENSHOTS (e.g. docs/screenshots) or a temp dir."""
    target = Path(os.environ.get("SYNAPSE_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture(scope="module")
def axe():
    module = pytest.importorskip(
        "axe_playwright_python.sync_playwright",
        reason="axe-playwright-python (axe-core for Playwright) is not installed",
    )
    return module.Axe()
