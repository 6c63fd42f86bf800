"""Channex's PMS certification tests 1-13 (REFERENCE.md), through the Connect API of a
`connectapi serve` process against the standalone sandbox channel manager: each change
costs the calls Channex expects, and afterwards the channel holds exactly the record's
values over the whole horizon.

One property takes the tests in order, as a certification does (its calls are paced at
ten a minute per kind, so tests 2-10 share that budget without a 429); test 12's burst
runs on a second property, whose budget is whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from connectapi.domain.ari_write import HORIZON_DAYS
from connectapi.domain.channel_values import NEUTRAL

from .live import LIFTED
from .test_push_processes import sandbox_cm
from .test_serve_process import Served, free_port

TOKEN = "certification-operator-token-of-32-plus"
API = "/api/v1/connect-api/v1"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
ZONE = "Europe/Lisbon"
CM_KEY = "push-processes-sandbox-key-0001"  # sandbox_cm's key
OURS_TO_CM = {"stopSell": "stop_sell", "closedToArrival": "closed_to_arrival",
              "closedToDeparture": "closed_to_departure", "minStayArrival": "min_stay_arrival",
              "minStayThrough": "min_stay_through", "maxStay": "max_stay"}


@dataclass
class Hotel:
    id: int
    rooms: list[int]
    plans: list[int]
    key: dict[str, str]
    cm_property: str
    cm_rooms: dict[int, str]
    cm_plans: dict[int, str]


@dataclass
class Certification:
    http: httpx.Client
    cm: httpx.Client
    today: date

    def put(self, hotel: Hotel, resource: str, updates: list[dict[str, Any]]) -> None:
        answer = self.http.put(f"{API}/{resource}", json={"updates": updates}, headers=hotel.key)
        assert answer.status_code == 202, answer.text

    def calls(self, hotel: Hotel) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.cm.get("/_sandbox/calls", params={"property_id": hotel.cm_property}
                                                  ).json()["calls"]
        return found

    def settled(self, hotel: Hotel, seconds: float = 150) -> dict[str, Any]:
        """Until nothing of the property is dirty (every change pushed), gathering included."""
        deadline = time.monotonic() + seconds
        while True:
            sync = self.http.get(f"{API}/sync", headers=hotel.key).json()["data"]
            if sync["inventory"]["dirtyCells"] + sync["rates"]["dirtyCells"] + sync["restrictions"]["dirtyCells"] == 0:
                return dict(sync)
            assert time.monotonic() < deadline, sync
            time.sleep(0.2)

    def costs(self, hotel: Hotel, change: Any) -> list[dict[str, Any]]:
        """The ARI calls a change cost the property, once it is pushed (and the channel holds
        exactly the record)."""
        before = len(self.calls(hotel))
        change()
        time.sleep(0.1)  # the pusher's wake
        self.settled(hotel)
        made = self.calls(hotel)[before:]
        assert all(call["warnings"] == 0 for call in made), made
        self.assert_channel_holds_the_record(hotel)
        return made

    def assert_channel_holds_the_record(self, hotel: Hotel) -> None:
        """Every night of the horizon the channel holds, it holds as the record does."""
        first, last = self.today, self.today + timedelta(days=HORIZON_DAYS)
        span = {"from": first.isoformat(), "to": last.isoformat()}
        availability = self.http.get(f"{API}/availability", params=span, headers=hotel.key).json()["data"]
        rates = self.http.get(f"{API}/rates", params=span, headers=hotel.key).json()["data"]
        restrictions = self.http.get(f"{API}/restrictions", params=span, headers=hotel.key).json()["data"]
        held = self.cm.get("/_sandbox/grid", params={
            "filter[property_id]": hotel.cm_property, "filter[date][gte]": first.isoformat(),
            "filter[date][lte]": last.isoformat()}).json()["data"]
        for room in availability["roomTypes"]:
            theirs = held["availability"].get(hotel.cm_rooms[room["roomTypeId"]], {})
            ours = {n["date"]: n["available"] for n in room["nights"]}
            assert {night: ours[night] for night in theirs} == theirs, ("availability", room["roomTypeId"])
        for plan in rates["ratePlans"]:
            theirs = {d: f["rate"] for d, f in held["restrictions"].get(hotel.cm_plans[plan["ratePlanId"]], {}).items()
                      if "rate" in f}
            ours = {n["date"]: None if n["rateMinor"] is None else f"{n['rateMinor'] / 100:.2f}"
                    for n in plan["nights"]}
            assert {night: ours[night] for night in theirs} == theirs, ("rates", plan["ratePlanId"])
        for plan in restrictions["ratePlans"]:
            theirs_by_night = held["restrictions"].get(hotel.cm_plans[plan["ratePlanId"]], {})
            for night in plan["nights"]:
                theirs = theirs_by_night.get(night["date"], {})
                for ours_name, cm_name in OURS_TO_CM.items():
                    our_value = NEUTRAL[cm_name] if night[ours_name] is None else night[ours_name]
                    assert theirs.get(cm_name, NEUTRAL[cm_name]) == our_value, (night["date"], cm_name)


def make_hotel(http: httpx.Client, cm: httpx.Client, name: str) -> Hotel:
    """Two room types and four rate plans (test 7 asks for four), in the service and, made
    by hand as with a real account, in the sandbox; mapped; a key for ARI."""
    example = json.loads((Path(__file__).parents[2] / "docs/examples/property.json").read_text())
    example.update(name=name, timezone=ZONE, roomTypes=[
        {"name": "Double", "maxAdults": 2, "maxOccupancy": 3, "rooms": 8},
        {"name": "Suite", "maxAdults": 4, "rooms": 2}], ratePlans=[
        {"roomType": r, "name": f"{kind} {r}", "mealPlan": "CP", "minRate": 40, "maxRate": 900}
        for r in (0, 1) for kind in ("Flexible", "Saver")])
    prop = http.post("/api/v1/admin/properties", json=example, headers=ADMIN).json()["data"]
    cm_prop = cm.post("/api/v1/properties", json={"property": {"title": name, "currency": "EUR", "timezone": ZONE}}
                      ).json()["data"]["id"]
    cm_rooms, cm_plans = {}, {}
    for room in prop["roomTypes"]:
        cm_rooms[room["id"]] = cm.post("/api/v1/room_types", json={"room_type": {
            "property_id": cm_prop, "title": room["name"], "count_of_rooms": 8}}).json()["data"]["id"]
    for plan in prop["ratePlans"]:
        cm_plans[plan["id"]] = cm.post("/api/v1/rate_plans", json={"rate_plan": {
            "property_id": cm_prop, "room_type_id": cm_rooms[plan["roomTypeId"]], "title": plan["name"]}}
        ).json()["data"]["id"]
    mapped = http.put(f"/api/v1/admin/properties/{prop['id']}/channel-mapping", headers=ADMIN, json={
        "cmPropertyId": cm_prop, "roomTypes": {str(k): v for k, v in cm_rooms.items()},
        "ratePlans": {str(k): v for k, v in cm_plans.items()}})
    assert mapped.status_code == 200, mapped.text
    key = http.post(f"/api/v1/admin/properties/{prop['id']}/keys", headers=ADMIN,
                    json={"label": "pms", "scopes": ["ari:read", "ari:write"]}).json()["data"]["key"]
    return Hotel(prop["id"], list(cm_rooms), list(cm_plans), {"Authorization": f"Bearer {key}"}, cm_prop, cm_rooms,
                 cm_plans)


@pytest.fixture(scope="module")
def certification(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Certification]:
    with sandbox_cm() as cm:
        served = Served(tmp_path_factory.mktemp("certification"), free_port(), {
            "CONNECTAPI_ADMIN_TOKEN": TOKEN, "CONNECTAPI_BUDGETS": LIFTED,
            "CONNECTAPI_CM_URL": str(cm.base_url).rstrip("/"), "CONNECTAPI_CM_KEY": CM_KEY})
        try:
            served.wait_for("listening on")
            with httpx.Client(base_url=served.url, timeout=30) as http:
                # Today as both sides count it: the property's and the sandbox's zone.
                yield Certification(http, cm, datetime.now(ZoneInfo(ZONE)).date())
        finally:
            served.proc.terminate()
            served.proc.wait(30)


@pytest.fixture(scope="module")
def hotel(certification: Certification) -> Hotel:
    made = make_hotel(certification.http, certification.cm, "Casa Certificada")
    certification.settled(made)  # the room counts the record starts with, pushed at mapping
    return made


def kinds(calls: list[dict[str, Any]]) -> list[str]:
    return sorted(call["kind"] for call in calls)


def test_01_full_sync_of_the_horizon_is_two_calls(certification: Certification, hotel: Hotel) -> None:
    c, first = certification, certification.today
    last = first + timedelta(days=HORIZON_DAYS)
    span = {"dateFrom": first.isoformat(), "dateTo": last.isoformat()}

    def full_sync() -> None:  # three PUTs back to back, as an integrator sends a full sync
        c.put(hotel, "availability", [{"roomTypeId": r, **span, "available": 3} for r in hotel.rooms])
        c.put(hotel, "rates", [{"ratePlanId": p, **span, "rate": 100 + 10 * i, "currency": "EUR"}
                               for i, p in enumerate(hotel.plans)])
        c.put(hotel, "restrictions", [{"ratePlanId": p, **span, "minStayArrival": 1, "stopSell": False}
                                      for p in hotel.plans])

    assert kinds(c.costs(hotel, full_sync)) == ["availability", "restrictions"]


def test_02_one_rate_on_one_night_is_one_call(certification: Certification, hotel: Hotel) -> None:
    night = (certification.today + timedelta(days=10)).isoformat()
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "rates", [
        {"ratePlanId": hotel.plans[0], "dateFrom": night, "dateTo": night, "rate": 333, "currency": "EUR"}]))) \
        == ["restrictions"]


def test_03_several_rates_on_different_nights_are_one_call(certification: Certification, hotel: Hotel) -> None:
    nights = [(certification.today + timedelta(days=d)).isoformat() for d in (11, 14, 20)]
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "rates", [
        {"ratePlanId": hotel.plans[i % 2], "dateFrom": n, "dateTo": n, "rate": 200 + i, "currency": "EUR"}
        for i, n in enumerate(nights)]))) == ["restrictions"]


def test_04_several_rates_over_ranges_are_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "rates", [
        {"ratePlanId": hotel.plans[0], "dateFrom": (t + timedelta(days=30)).isoformat(),
         "dateTo": (t + timedelta(days=40)).isoformat(), "rate": 150, "currency": "EUR"},
        {"ratePlanId": hotel.plans[1], "dateFrom": (t + timedelta(days=35)).isoformat(),
         "dateTo": (t + timedelta(days=60)).isoformat(), "rate": 175, "currency": "EUR", "days": ["fr", "sa"]}]))) \
        == ["restrictions"]


def test_05_min_stay_on_several_plans_is_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    span = {"dateFrom": (t + timedelta(days=50)).isoformat(), "dateTo": (t + timedelta(days=55)).isoformat()}
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "restrictions", [
        {"ratePlanId": p, **span, "minStayArrival": 3} for p in hotel.plans[:3]]))) == ["restrictions"]


def test_06_stop_sell_on_several_plans_is_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    span = {"dateFrom": (t + timedelta(days=70)).isoformat(), "dateTo": (t + timedelta(days=72)).isoformat()}
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "restrictions", [
        {"ratePlanId": p, **span, "stopSell": True} for p in hotel.plans[1:]]))) == ["restrictions"]


def test_07_several_restrictions_on_four_plans_are_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    span = {"dateFrom": (t + timedelta(days=80)).isoformat(), "dateTo": (t + timedelta(days=84)).isoformat()}
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "restrictions", [
        {"ratePlanId": hotel.plans[0], **span, "closedToArrival": True},
        {"ratePlanId": hotel.plans[1], **span, "closedToDeparture": True},
        {"ratePlanId": hotel.plans[2], **span, "maxStay": 7},
        {"ratePlanId": hotel.plans[3], **span, "minStayThrough": 2}]))) == ["restrictions"]


def test_08_half_a_year_of_rates_and_restrictions_on_two_plans_is_one_call(certification: Certification,
                                                                          hotel: Hotel) -> None:
    c, t = certification, certification.today
    span = {"dateFrom": (t + timedelta(days=100)).isoformat(), "dateTo": (t + timedelta(days=282)).isoformat()}

    def change() -> None:  # as the contract splits it: rates, then restrictions at once
        c.put(hotel, "rates", [{"ratePlanId": p, **span, "rate": 120 + i, "currency": "EUR"}
                               for i, p in enumerate(hotel.plans[:2])])
        c.put(hotel, "restrictions", [{"ratePlanId": p, **span, "minStayArrival": 2, "closedToArrival": True,
                                       "days": ["sa"]} for p in hotel.plans[:2]])

    assert kinds(c.costs(hotel, change)) == ["restrictions"]


def test_09_availability_on_two_nights_is_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "availability", [
        {"roomTypeId": hotel.rooms[0], "dateFrom": (t + timedelta(days=d)).isoformat(),
         "dateTo": (t + timedelta(days=d)).isoformat(), "available": 1} for d in (5, 9)]))) == ["availability"]


def test_10_availability_on_two_ranges_is_one_call(certification: Certification, hotel: Hotel) -> None:
    t = certification.today
    assert kinds(certification.costs(hotel, lambda: certification.put(hotel, "availability", [
        {"roomTypeId": hotel.rooms[0], "dateFrom": (t + timedelta(days=20)).isoformat(),
         "dateTo": (t + timedelta(days=25)).isoformat(), "available": 2},
        {"roomTypeId": hotel.rooms[1], "dateFrom": (t + timedelta(days=40)).isoformat(),
         "dateTo": (t + timedelta(days=49)).isoformat(), "available": 0}]))) == ["availability"]


def test_11_a_booking_com_booking_created_modified_cancelled_is_received_and_acknowledged(
        certification: Certification, hotel: Hotel) -> None:
    c, t = certification, certification.today
    sold = c.cm.post("/_sandbox/ota-bookings", json={
        "property_id": hotel.cm_property, "room_type_id": hotel.cm_rooms[hotel.rooms[0]],
        "rate_plan_id": hotel.cm_plans[hotel.plans[0]], "arrival_date": (t + timedelta(days=150)).isoformat(),
        "departure_date": (t + timedelta(days=152)).isoformat(), "amount": "240.00", "ota_name": "BookingCom",
        "customer": {"name": "Ana", "surname": "Lima"}})
    assert sold.status_code == 201, sold.text
    code = sold.json()["data"]["attributes"]["ota_reservation_code"]
    assert c.cm.post(f"/_sandbox/ota-bookings/{code}/modify", json={
        "departure_date": (t + timedelta(days=153)).isoformat()}).status_code == 201
    assert c.cm.post(f"/_sandbox/ota-bookings/{code}/cancel", json={}).status_code == 201
    deadline = time.monotonic() + 150  # the intake's timer (no webhook configured here): a minute
    while True:
        revisions = c.http.get(f"/api/v1/admin/properties/{hotel.id}/ota-revisions", headers=ADMIN).json()["data"]
        held = [r for r in revisions if r["reservationCode"] == code and r["acknowledged"]]
        feed = c.cm.get("/api/v1/booking_revisions/feed",
                        params={"filter[property_id]": hotel.cm_property}).json()
        if len(held) == 3 and feed["meta"]["total"] == 0:
            break
        assert time.monotonic() < deadline, (revisions, feed)
        time.sleep(1)
    assert sorted(r["status"] for r in held) == ["cancelled", "modified", "new"]
    assert [r["state"] for r in held] == ["applied"] * 3, held
    c.settled(hotel)
    c.assert_channel_holds_the_record(hotel)


def test_12_a_burst_of_25_writes_in_8_seconds_stays_within_the_rate_limits(certification: Certification) -> None:
    c = certification
    burst = make_hotel(c.http, c.cm, "Casa Rajada")
    c.settled(burst)
    before = len(c.calls(burst))
    throttled = c.cm.get("/_sandbox/stats").json()["stats"]["throttled"]
    started = time.monotonic()
    for i in range(25):
        night = (c.today + timedelta(days=1 + i)).isoformat()
        c.put(burst, "rates", [{"ratePlanId": burst.plans[0], "dateFrom": night, "dateTo": night, "rate": 100 + i,
                                "currency": "EUR"}])
        time.sleep(max(0.0, started + (i + 1) * 8 / 25 - time.monotonic()))
    c.settled(burst)
    made = c.calls(burst)[before:]
    assert c.cm.get("/_sandbox/stats").json()["stats"]["throttled"] == throttled  # no 429
    stamps = sorted(datetime.fromisoformat(call["at"]).timestamp() for call in made if call["kind"] == "restrictions")
    assert 1 <= len(stamps) <= 10
    for i in range(len(stamps)):  # never more than 10 in any minute
        assert sum(1 for s in stamps if 0 <= s - stamps[i] < 60) <= 10
    c.assert_channel_holds_the_record(burst)


def test_13_an_idle_service_sends_no_ari_call(certification: Certification, hotel: Hotel) -> None:
    c = certification
    c.settled(hotel)
    before = len(c.cm.get("/_sandbox/calls").json()["calls"])
    time.sleep(20)  # real processes: the sweeper, the reconciler and the intake run meanwhile
    assert len(c.cm.get("/_sandbox/calls").json()["calls"]) == before

