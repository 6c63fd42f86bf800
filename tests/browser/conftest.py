"""Fixtures of the browser tests: `console_service`, `browser`, `page`, `mobile_page`.

Write browser tests as plain `def test_...` (see harness.py); helpers: harness.save_screen,
harness.sideways_overflow.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright
except ImportError as exc:  # the test extra was not installed: never a skip
    raise ImportError("tests/browser need playwright from the test extra: run `make test` "
                      "(or pip install -c constraints.txt -e '.[test]')") from exc

from tests.browser.harness import (
    CHROMIUM_ARGS, DESKTOP, MOBILE, ConsoleService, chromium_executable, console_service_at,
    plain_asyncio,
)


@pytest.fixture(autouse=True)
def _plain_def_only(request: pytest.FixtureRequest) -> None:
    if inspect.iscoroutinefunction(request.function):
        pytest.fail("a browser test is a plain `def`: Playwright's sync API must not run inside trio",
                    pytrace=False)


@pytest.fixture
def console_service(tmp_path: Path) -> Iterator[ConsoleService]:
    """A real `connectapi serve` of its own (data dir tmp_path/var), ready; SIGTERM at the end."""
    with console_service_at(tmp_path / "var") as service:
        yield service


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless chromium (Debian's, not Playwright's download) per test module."""
    executable = chromium_executable()
    with plain_asyncio(), sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def _page(browser: Browser, viewport: ViewportSize) -> Iterator[Page]:
    context = browser.new_context(viewport=viewport)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh context (cookies, storage) and page, 1280 x 800."""
    yield from _page(browser, DESKTOP)


@pytest.fixture
def mobile_page(browser: Browser) -> Iterator[Page]:
    """A fresh context and page 375 px wide."""
    yield from _page(browser, MOBILE)
