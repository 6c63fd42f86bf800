"""The browser tests' pieces: Debian's chromium as Playwright launches it, a real
`connectapi serve`, and the screens saved into docs/console/.

Browser tests are plain `def test_...` functions: Playwright's sync API runs its own
asyncio loop in a greenlet, and pytest-trio (trio_mode) would run an `async def` test
inside trio. The fixtures are in conftest.py; docs/decisions/0085-browser-test-fixtures.md.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest
from playwright.sync_api import Page, ViewportSize

from tests.e2e.test_serve_process import Served, free_port, postmaster_pid

REPO = Path(__file__).parents[2]
# The screens go to docs/console/ (committed, shown in docs/console.md) only when asked
# (`make docs-screenshots` sets DOCS_SCREENSHOTS=1): a test run leaves the tree clean.
SCREENS = (REPO / "docs" / "console" if os.environ.get("DOCS_SCREENSHOTS") == "1"
           else Path(tempfile.gettempdir()) / "connectapi-console-screens")

# Root needs --no-sandbox; the rest keep a closed network quiet (no update, sync or
# component downloads, no QUIC) and a machine without a GPU working. Playwright passes
# most of them too; they are said here so that they do not depend on its defaults.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DESKTOP: ViewportSize = {"width": 1280, "height": 800}
# A 375 px wide window (an iPhone SE's CSS width). Not a phone emulation: there a page
# without <meta name="viewport" content="width=device-width"> is laid out 980 px wide.
MOBILE: ViewportSize = {"width": 375, "height": 740}


def _set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def why_not_skip() -> str | None:
    """Why a missing chromium is a failure here, or None where skipping is honest: only
    on a machine where `make test` cannot install it (not root, or no apt-get) and not CI."""
    if _set("CI"):
        return "CI is set, and CI never skips the browser tests"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        return "`make test` installs it on this machine (root with apt-get)"
    return None


def chromium_executable() -> str:
    """Debian's chromium (/usr/bin/chromium), found as `make test` looks for it; or the
    test skips, or fails where it should have been there (why_not_skip)."""
    found = shutil.which("chromium")
    if found:
        return found
    missing = "chromium is not installed (Debian: apt-get install --no-install-recommends chromium)"
    reason = why_not_skip()
    if reason:
        pytest.fail(f"{missing}; not skipped because {reason}: run `make test`", pytrace=False)
    pytest.skip(f"{missing}; `make test` installs it only as root with apt-get")


@contextmanager
def plain_asyncio() -> Iterator[None]:
    """asyncio as Playwright's sync API needs it. trio_asyncio (tests/conftest.py imports
    it) makes asyncio.new_event_loop() answer its own loop even outside trio, which
    Playwright's greenlets cannot drive ("You can't nest calls to run_until_complete()");
    a policy set outside trio is trio_asyncio's sanctioned way back, for this thread."""
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(None)


def save_screen(page: Page, name: str, directory: Path = SCREENS) -> Path:
    """The whole page as <name>.png in SCREENS (docs/console/ when asked: shown in docs/console.md)."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise ValueError(f"screen name {name!r}: lowercase letters, digits and dashes")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def sideways_overflow(page: Page) -> int:
    """How many CSS pixels the page is wider than its window (0: no sideways scrolling)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


@dataclass
class ConsoleService:
    url: str
    token: str
    data_dir: Path
    served: Served

    @property
    def auth(self) -> dict[str, str]:
        """The operator's header for the admin API."""
        return {"Authorization": f"Bearer {self.token}"}

    def log(self) -> list[str]:
        """The service's log lines (JSON) written since the last call."""
        lines = []
        try:
            while True:
                lines.append(self.served.lines.get_nowait())
        except queue.Empty:
            return lines


@contextmanager
def console_service_at(data_dir: Path, extra_env: Mapping[str, str] | None = None,
                       ready_within: float = 90) -> Iterator[ConsoleService]:
    """`python -m connectapi serve` on a free port, its record embedded in `data_dir`, the
    sandbox channel manager in the process, webhooks to loopback allowed; yielded once
    /readyz answers 200, stopped with SIGTERM (it must exit 0) afterwards."""
    env = {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", **(extra_env or {})}
    served = Served(data_dir, free_port(), env)
    service = ConsoleService(served.url, "", data_dir, served)
    ready = False
    try:
        _wait_ready(service, ready_within)
        ready = True
        service.token = (data_dir / "admin-token").read_text().strip()
        yield service
    finally:
        _stop(service, check=ready)  # a start that failed is already being reported


def _wait_ready(service: ConsoleService, within: float) -> None:
    deadline = time.monotonic() + within
    while True:
        if service.served.proc.poll() is not None:
            time.sleep(0.2)  # the last lines through the pipe's reader
            tail = "".join(service.log()[-30:])
            pytest.fail(f"connectapi serve exited with {service.served.proc.returncode} before ready:\n{tail}")
        try:
            if httpx.get(f"{service.url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            tail = "".join(service.log()[-30:])
            pytest.fail(f"connectapi serve not ready within {within:.0f} s:\n{tail}")
        time.sleep(0.1)


def _stop(service: ConsoleService, check: bool) -> None:
    proc = service.served.proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        pg = postmaster_pid(service.data_dir)
        if pg is not None and psutil.pid_exists(pg):
            psutil.Process(pg).kill()  # a killed service leaves its embedded server running
        if check:
            raise AssertionError("connectapi serve did not stop within 30 s of SIGTERM") from None
        return
    assert code == 0 or not check, f"connectapi serve exited with {code}:\n{''.join(service.log()[-30:])}"
