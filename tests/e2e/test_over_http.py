"""The service over a real socket: what a test client cannot show."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from connectapi.__main__ import main

from .conftest import ADMIN_TOKEN

API = "/api/v1/connect-api/v1"
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "property.json"


async def make_key(client: httpx.AsyncClient) -> str:
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    prop = (await client.post("/api/v1/admin/properties", json=json.loads(EXAMPLE.read_text()), headers=auth)).json()
    made = await client.post(f"/api/v1/admin/properties/{prop['data']['id']}/keys",
                             json={"label": "e2e", "scopes": ["ari:read", "ari:write"]}, headers=auth)
    return str(made.json()["data"]["key"])


async def raw_exchange(base_url: str, head: bytes, chunks: int, chunk_size: int = 65536) -> bytes:
    """Send a chunked request while reading the answer, as a well-behaved client does."""
    host, port = base_url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    answer = b""
    async with stream, trio.open_nursery() as nursery:
        async def send_body() -> None:
            try:
                await stream.send_all(head)
                for _ in range(chunks):
                    await stream.send_all(b"%x\r\n" % chunk_size + b" " * chunk_size + b"\r\n")
                await stream.send_all(b"0\r\n\r\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the server stopped listening: that is the point

        nursery.start_soon(send_body)
        with trio.fail_after(10):
            while b"\r\n\r\n" not in answer:
                data = await stream.receive_some()
                if not data:
                    break
                answer += data
        nursery.cancel_scope.cancel()
    return answer


async def test_chunked_body_over_the_limit_is_413(base_url: str, client: httpx.AsyncClient) -> None:
    key = await make_key(client)
    head = (f"PUT {API}/probe/ari HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    answer = await raw_exchange(base_url, head, chunks=40)  # 2.5 MiB, no Content-Length
    assert answer.startswith(b"HTTP/1.1 413")
    small = await raw_exchange(base_url, head, chunks=2)  # 128 KiB of spaces: read, then found not JSON
    assert small.startswith(b"HTTP/1.1 400")


async def test_declared_length_over_the_limit_is_413_without_reading(client: httpx.AsyncClient) -> None:
    key = await make_key(client)
    response = await client.put(f"{API}/property", content=b"x" * (1_048_576 + 10),
                                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["data"]["code"] == "PAYLOAD_TOO_LARGE"


async def cli_property_and_key(base_url: str, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], label: str, scope: str) -> tuple[dict[str, Any], str]:
    """Through `connectapi admin`, as an operator would: a property, then a key with one scope."""
    monkeypatch.setenv("CONNECTAPI_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("CONNECTAPI_URL", base_url)
    assert await trio.to_thread.run_sync(main, ["admin", "property", "create", "--file", str(EXAMPLE)]) == 0
    prop = json.loads(capsys.readouterr().out)
    argv = ["admin", "key", "create", str(prop["id"]), "--label", label, "--scope", scope]
    assert await trio.to_thread.run_sync(main, argv) == 0
    return prop, json.loads(capsys.readouterr().out)["key"]


async def test_cli_admin_then_property_with_the_key(base_url: str, client: httpx.AsyncClient,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    prop, key = await cli_property_and_key(base_url, monkeypatch, capsys, "site", "ari:read")
    response = await client.get(f"{API}/property", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    assert response.json()["data"]["name"] == "Casa Azul"
    assert response.headers["RateLimit-Policy"] == '"requests";q=120;w=60'
    # a wrong operator token is refused, and the CLI says so with a non-zero exit
    monkeypatch.setenv("CONNECTAPI_ADMIN_TOKEN", "wrong")
    assert await trio.to_thread.run_sync(main, ["admin", "key", "list", str(prop["id"])]) == 1
    assert "ADMIN_TOKEN_INVALID" in capsys.readouterr().err


async def test_seed_makes_a_sample_property_and_a_key_with_every_scope(
        base_url: str, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CONNECTAPI_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("CONNECTAPI_URL", base_url)
    assert await trio.to_thread.run_sync(main, ["seed"]) == 0
    seeded = json.loads(capsys.readouterr().out)
    assert (len(seeded["roomTypes"]), len(seeded["ratePlans"])) == (2, 3)
    answer = await client.get(f"{API}/property", headers={"Authorization": f"Bearer {seeded['key']}"})
    assert answer.status_code == 200
    assert answer.json()["data"]["scopes"] == ["ari:read", "ari:write", "bookings:read", "bookings:write",
                                               "bookings:payments"]
    assert await trio.to_thread.run_sync(main, ["admin", "key", "list", str(seeded["propertyId"])]) == 0
    listed = capsys.readouterr().out
    assert listed.splitlines()[0].startswith("id") and seeded["key"] not in listed  # a key is shown once


def test_every_admin_route_has_a_command() -> None:
    from connectapi.cli_admin import COMMANDS
    from connectapi.domain.paths import ADMIN_PREFIX
    from connectapi.http.app import create_app

    app = create_app(None)  # type: ignore[arg-type]  # only the routes are read
    routes = {(method, re.sub(r"<[^>]+>", "{}", rule.rule.removeprefix(ADMIN_PREFIX)))
              for rule in app.url_map.iter_rules() if rule.rule.startswith(ADMIN_PREFIX + "/")
              for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}
    commands = {(c.method, re.sub(r"\{[^}]+\}", "{}", c.path)) for c in COMMANDS}
    assert routes == commands


async def test_cli_booking_check_in_and_notifications(base_url: str, client: httpx.AsyncClient,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    prop, key = await cli_property_and_key(base_url, monkeypatch, capsys, "engine", "bookings:write")
    check_in = (date.today() + timedelta(days=3)).isoformat()
    made = await client.post(f"{API}/bookings", headers={"Authorization": f"Bearer {key}"}, json={
        "externalReference": "WEB-1", "checkIn": check_in, "checkOut": (date.today() + timedelta(days=4)).isoformat(),
        "currency": "EUR", "guest": {"name": "Ana", "phone": "+351912345678"},
        "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"], "adults": 1,
                   "nightlyRate": "90.00"}]})
    assert made.status_code == 201
    booking_id = made.json()["data"]["bookingId"]
    assert await trio.to_thread.run_sync(main, ["admin", "booking", "check-in", str(booking_id)]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "CHECKED_IN"
    cancel = await client.post(f"{API}/bookings/{booking_id}/cancel", headers={"Authorization": f"Bearer {key}"})
    assert cancel.json()["data"]["code"] == "BOOKING_NOT_CANCELLABLE"
    assert await trio.to_thread.run_sync(main, ["admin", "--json", "notifications", "list", str(prop["id"])]) == 0
    assert [n["kind"] for n in json.loads(capsys.readouterr().out)] == ["booking.created"]
    # without --json a list is a table: a header line, then one line per e-mail
    assert await trio.to_thread.run_sync(main, ["admin", "notifications", "list", str(prop["id"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["id", "kind", "to"] and len(lines) == 2 and "booking.created" in lines[1]
    # an OTA revision id travels as one path segment: its "?" does not start a query
    assert await trio.to_thread.run_sync(main, ["admin", "ota", "apply", str(prop["id"]), "--revision", "x?y"]) == 1
    assert "REVISION_NOT_FOUND" in capsys.readouterr().err
