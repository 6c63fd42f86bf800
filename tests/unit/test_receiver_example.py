"""The receiver of docs/receiving-webhooks.md accepts our signed events once and refuses forgeries."""

from __future__ import annotations

import importlib.util
import threading
from datetime import UTC, datetime
from http.server import HTTPServer
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from connectapi.domain.webhook_events import PropertyFacts, ping
from connectapi.domain.webhook_signing import new_secret, signed_headers

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "receiver.py"


def load_receiver(monkeypatch: pytest.MonkeyPatch, secret: str) -> ModuleType:
    monkeypatch.setenv("CONNECTAPI_WEBHOOK_SECRET", secret)
    spec = importlib.util.spec_from_file_location("docs_receiver", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = new_secret()
    receiver = load_receiver(monkeypatch, secret)
    server = HTTPServer(("127.0.0.1", 0), receiver.Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        event = ping(PropertyFacts(1, "Casa Azul", "EUR", "Europe/Lisbon"), datetime.now(UTC), "test")
        headers = signed_headers(event.id, event.body, [secret], datetime.now(UTC))
        for _ in range(2):  # a redelivery: answered, not worked twice
            answer = httpx.post(url, content=event.body, headers={**headers, "Content-Type": "application/json"})
            assert answer.status_code == 204
        assert receiver.work.qsize() == 1 and receiver.work.get()["id"] == event.id
        forged = signed_headers(event.id, event.body, [new_secret()], datetime.now(UTC))
        assert httpx.post(url, content=event.body, headers=forged).status_code == 400
    finally:
        server.shutdown()
