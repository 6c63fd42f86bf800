"""The chain the console's tests stand on: a real `connectapi serve`, Debian's chromium
driven by Playwright, a page read back, a screen saved."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from playwright.sync_api import Page

from connectapi import __version__
from tests.browser.harness import ConsoleService, save_screen, sideways_overflow


def _body_json(page: Page) -> dict[str, object]:
    """The JSON chromium shows for an application/json answer, as the page's text."""
    text = page.locator("body").inner_text()
    body = json.loads(text)
    assert isinstance(body, dict), text
    return body


def test_chromium_reads_healthz_of_a_served_process(console_service: ConsoleService, page: Page,
                                                    tmp_path: Path) -> None:
    answer = page.goto(f"{console_service.url}/healthz")
    assert answer is not None and answer.status == 200
    assert answer.headers["content-type"].startswith("application/json")
    body = _body_json(page)
    assert body["data"] == {"status": "up", "version": __version__}, body
    assert page.evaluate("navigator.userAgent").startswith("Mozilla/5.0")
    assert page.evaluate("window.innerWidth") == 1280

    shot = save_screen(page, "healthz", tmp_path)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1280, 800)


def test_a_375_px_window(console_service: ConsoleService, mobile_page: Page) -> None:
    mobile_page.goto(f"{console_service.url}/healthz")
    assert mobile_page.evaluate("window.innerWidth") == 375
    assert _body_json(mobile_page)["statuscode"] == 200
    assert sideways_overflow(mobile_page) == 0, "chromium wraps its JSON view at 375 px"
