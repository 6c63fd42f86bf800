"""Two `connectapi serve` processes on one record: the property's row lock keeps them from overbooking."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, timedelta
from pathlib import Path

import httpx
import trio

from .test_serve_process import Served, free_port

TOKEN = "two-processes-operator-token-of-32-plus"
API = "/api/v1/connect-api/v1"


@asynccontextmanager
async def two_served(fresh_dsn: str, tmp_path: Path, budgets: str) -> AsyncIterator[list[Served]]:
    env = {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1",
           "CONNECTAPI_BUDGETS": budgets}
    served = [Served(tmp_path / name, free_port(), env) for name in ("a", "b")]
    try:
        for one in served:
            await trio.to_thread.run_sync(one.wait_for, "listening on")
        yield served
    finally:
        for one in served:
            one.proc.terminate()
            one.proc.wait(30)


async def booking_property(http: httpx.AsyncClient, served: list[Served], rooms: int,
                           scopes: list[str]) -> tuple[int, int, dict[str, str]]:
    """A property made through one process and its key through the other: the first room
    type (with `rooms` rooms), its rate plan, and the key's header."""
    admin = {"Authorization": f"Bearer {TOKEN}"}
    example = json.loads((Path(__file__).parents[2] / "docs/examples/property.json").read_text())
    example["roomTypes"][0]["rooms"] = rooms
    prop = (await http.post(f"{served[0].url}/api/v1/admin/properties", json=example, headers=admin)).json()["data"]
    created = await http.post(f"{served[1].url}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                              json={"label": "web", "scopes": scopes})
    return prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"], {
        "Authorization": f"Bearer {created.json()['data']['key']}"}


async def test_two_processes_on_one_record_never_overbook(fresh_dsn: str, tmp_path: Path) -> None:
    budgets = "bookings=1000,property-bookings=1000,requests=10000,property=10000"
    async with two_served(fresh_dsn, tmp_path, budgets) as served:
        async with httpx.AsyncClient(timeout=60) as http:
            room, plan, key = await booking_property(http, served, 3, ["bookings:write", "ari:read"])
            check_in = date.today() + timedelta(days=10)
            statuses: list[tuple[int, str]] = []

            async def book(i: int) -> None:
                answer = await http.post(f"{served[i % 2].url}{API}/bookings", headers=key, json={
                    "externalReference": f"RACE-{i}", "checkIn": check_in.isoformat(),
                    "checkOut": (check_in + timedelta(days=2)).isoformat(), "currency": "EUR",
                    "guest": {"name": f"Guest {i}", "phone": f"+35191234{i:04d}"},
                    "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "80.00"}]})
                statuses.append((answer.status_code, answer.json()["data"].get("code", "")))

            async with trio.open_nursery() as nursery:
                for i in range(40):
                    nursery.start_soon(book, i)
            assert sorted(statuses) == [(201, "")] * 3 + [(409, "NO_AVAILABILITY")] * 37
            last = check_in + timedelta(days=2)
            for one in served:  # both processes read the same record: sold out, never below zero
                read = (await http.get(f"{one.url}{API}/availability?from={check_in}&to={last}", headers=key)).json()
                assert [n["available"] for n in read["data"]["roomTypes"][0]["nights"]] == [0, 0, 3]


async def test_a_key_changed_in_one_process_is_changed_in_the_other_within_a_second(
        fresh_dsn: str, tmp_path: Path) -> None:
    """Each process caches keys; a change made through one reaches the other's cache by the
    record's notification, within a second: re-scoped, rotated, revoked."""
    env = {"DATABASE_URL": fresh_dsn, "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_PUSH_PAUSED": "1"}
    served = [Served(tmp_path / name, free_port(), env) for name in ("a", "b")]
    try:
        for one in served:
            await trio.to_thread.run_sync(one.wait_for, "listening on")
        admin = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(timeout=30) as http:
            example = json.loads((Path(__file__).parents[2] / "docs/examples/property.json").read_text())
            prop = (await http.post(f"{served[0].url}/api/v1/admin/properties", json=example,
                                    headers=admin)).json()["data"]
            made = (await http.post(f"{served[0].url}/api/v1/admin/properties/{prop['id']}/keys", headers=admin,
                                    json={"label": "pms", "scopes": ["ari:read", "bookings:read"]})).json()["data"]

            async def on_b(key: str) -> int:
                answer = await http.get(f"{served[1].url}{API}/availability", headers={"Authorization": f"Bearer {key}"})
                return answer.status_code

            assert await on_b(made["key"]) == 200  # now in b's cache

            async def within_a_second(key: str, status: int) -> None:
                give_up = trio.current_time() + 1.0
                while (found := await on_b(key)) != status:
                    assert trio.current_time() < give_up, (found, status)
                    await trio.sleep(0.05)

            # re-scoped through a: b refuses the scope it no longer has
            changed = await http.patch(f"{served[0].url}/api/v1/admin/keys/{made['id']}", headers=admin,
                                       json={"scopes": ["bookings:read"]})
            assert changed.status_code == 200, changed.text
            await within_a_second(made["key"], 403)
            # rotated through a: b refuses the old secret and takes the new one
            rotated = (await http.post(f"{served[0].url}/api/v1/admin/keys/{made['id']}/rotate",
                                       headers=admin)).json()["data"]
            await within_a_second(made["key"], 401)
            new_key = rotated["key"]
            changed = await http.patch(f"{served[0].url}/api/v1/admin/keys/{rotated['id']}", headers=admin,
                                       json={"scopes": ["ari:read"]})
            assert changed.status_code == 200, changed.text
            await within_a_second(new_key, 200)
            # revoked through a: b refuses it
            assert (await http.post(f"{served[0].url}/api/v1/admin/keys/{rotated['id']}/revoke",
                                    headers=admin)).status_code == 200
            await within_a_second(new_key, 401)
    finally:
        for one in served:
            one.proc.terminate()
            one.proc.wait(30)


async def test_changes_and_new_bookings_through_two_processes_never_take_more_than_the_last_two_rooms(
        fresh_dsn: str, tmp_path: Path) -> None:
    """Fifteen new bookings and fifteen changes moving a booking into a night with two rooms
    left, sent at once through both processes: two win, every other is 409 NO_AVAILABILITY,
    and the record's count for every night is its rooms less those its bookings hold."""
    budgets = "bookings=1000,property-bookings=1000,requests=10000,property=10000,writes=1000,property-writes=1000"
    async with two_served(fresh_dsn, tmp_path, budgets) as served:
        async with httpx.AsyncClient(timeout=60) as http:
            room, plan, key = await booking_property(http, served, 20, ["bookings:write", "ari:read", "ari:write"])
            target = date.today() + timedelta(days=10)
            elsewhere = target + timedelta(days=20)

            def stay(reference: str, check_in: date) -> dict[str, object]:
                return {"externalReference": reference, "checkIn": check_in.isoformat(),
                        "checkOut": (check_in + timedelta(days=1)).isoformat(), "currency": "EUR",
                        "guest": {"name": f"Guest {reference}", "phone": "+351912340000"},
                        "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "80.00"}]}

            moving = []
            for i in range(15):
                made = await http.post(f"{served[i % 2].url}{API}/bookings", headers=key,
                                       json=stay(f"HELD-{i}", elsewhere))
                assert made.status_code == 201, made.text
                moving.append(made.json()["data"]["bookingId"])
            put = await http.put(f"{served[0].url}{API}/availability", headers=key, json={"updates": [
                {"roomTypeId": room, "dateFrom": target.isoformat(), "dateTo": target.isoformat(), "available": 2}]})
            assert put.status_code == 202, put.text
            answers: list[tuple[str, int, dict[str, object]]] = []

            async def new(i: int) -> None:
                answer = await http.post(f"{served[i % 2].url}{API}/bookings", headers=key, json=stay(f"NEW-{i}", target))
                answers.append(("new", answer.status_code, answer.json()["data"]))

            async def move(i: int) -> None:
                answer = await http.patch(f"{served[(i + 1) % 2].url}{API}/bookings/{moving[i]}", headers=key, json={
                    "checkIn": target.isoformat(), "checkOut": (target + timedelta(days=1)).isoformat()})
                answers.append(("move", answer.status_code, answer.json()["data"]))

            async with trio.open_nursery() as nursery:
                for i in range(15):
                    nursery.start_soon(new, i)
                    nursery.start_soon(move, i)
            won = [kind for kind, status, _ in answers if status < 400]
            refused = [(status, data.get("code")) for _, status, data in answers if status >= 400]
            assert len(won) == 2 and refused == [(409, "NO_AVAILABILITY")] * 28, (won, refused)
            last = elsewhere + timedelta(days=1)
            for one in served:
                read = (await http.get(f"{one.url}{API}/availability?from={target}&to={target}",
                                       headers=key)).json()
                assert read["data"]["roomTypes"][0]["nights"][0]["available"] == 0
                read = (await http.get(f"{one.url}{API}/availability?from={elsewhere}&to={last}",
                                       headers=key)).json()
                moved = won.count("move")
                assert [n["available"] for n in read["data"]["roomTypes"][0]["nights"]] == [5 + moved, 20]
