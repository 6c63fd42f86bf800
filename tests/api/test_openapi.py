"""The OpenAPI document: public, and holding exactly the routes the app serves."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from connectapi.domain.errors import STATUS_OF_CODE
from connectapi.http.api.gates import CONNECT_PREFIX
from connectapi.http.public.openapi import OPENAPI_PATH
from connectapi.storage.database import Database

from .harness import Harness


def shape(path: str) -> str:
    """`/bookings/<booking_id>` and `/bookings/{bookingId}` alike: `/bookings/{}`."""
    return re.sub(r"<[^>]+>|\{[^}]+\}", "{}", path)


async def document(api: Harness) -> dict[str, Any]:
    got = await api.call("GET", OPENAPI_PATH)
    assert got.status == 200 and got.headers["RateLimit-Policy"].startswith('"ip"')
    return dict(got.body)


async def test_the_document_holds_every_route_and_no_other(api: Harness) -> None:
    doc = await document(api)
    assert doc["openapi"] == "3.1.0"
    served = {(method, shape(rule.rule)) for rule in api.client.app.url_map.iter_rules()
              if rule.rule.startswith(CONNECT_PREFIX + "/") and not rule.endpoint.startswith("probe.")
              for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}
    documented = {(method.upper(), shape(path)) for path, item in doc["paths"].items() for method in item}
    assert served == documented
    assert len(documented) == 22  # the contract's 15 and test mode's 7 helpers


async def test_every_route_names_its_errors_and_headers(api: Harness) -> None:
    doc = await document(api)
    for path, item in doc["paths"].items():
        for method, op in item.items():
            statuses = {int(s) for s in op["responses"]}
            assert {401, 403, 409, 429, 500, 503} <= statuses, (method, path)
            for status, response in op["responses"].items():
                assert "RateLimit" in response["headers"] and "RateLimit-Policy" in response["headers"]
                if int(status) >= 400:
                    codes = response["content"]["application/json"]["schema"]["allOf"][1]["properties"]["data"][
                        "properties"]["code"]["enum"]
                    assert all(STATUS_OF_CODE[c] == int(status) for c in codes), (method, path, status)
            assert op["security"] == [{"bearerAuth": []}]
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    puts = [op for item in doc["paths"].values() for m, op in item.items() if m == "put"]
    assert all(any(p["name"] == "x-idempotency-key" for p in op["parameters"]) for op in puts)


async def test_a_change_of_a_booking_is_conditional_and_tagged(api: Harness) -> None:
    doc = await document(api)
    booking = doc["paths"][CONNECT_PREFIX + "/bookings/{bookingId}"]
    change = booking["patch"]
    assert {p["name"] for p in change["parameters"]} == {"bookingId", "If-Match", "x-idempotency-key"}
    assert "ETag" in change["responses"]["200"]["headers"] and "ETag" in booking["get"]["responses"]["200"]["headers"]
    assert set(change["requestBody"]["content"]) == {"application/merge-patch+json", "application/json"}
    codes = {status: response["content"]["application/json"]["schema"]["allOf"][1]["properties"]["data"][
        "properties"]["code"]["enum"] for status, response in change["responses"].items() if int(status) >= 400}
    assert "BOOKING_REVISION_STALE" in codes["412"] and "BOOKING_NOT_MODIFIABLE" in codes["409"]
    assert {"revision", "modifiedAt"} <= set(doc["components"]["schemas"]["Booking"]["properties"])
    registry: Registry[Any] = Registry().with_resource("urn:doc", Resource.opaque(doc))
    validator = Draft202012Validator({"$ref": "urn:doc#/components/schemas/BookingPatchIn"}, registry=registry)
    assert not list(validator.iter_errors({"checkOut": "2026-12-05", "guest": {"email": None}, "notes": None}))
    assert list(validator.iter_errors({"checkIn": None}))  # null removes only what may be empty
    assert list(validator.iter_errors({"surprise": 1}))


async def test_the_body_schemas_are_the_validating_models(api: Harness) -> None:
    """A body the service takes passes the document's schema, and one it refuses does not."""
    doc = await document(api)
    registry: Registry[Any] = Registry().with_resource("urn:doc", Resource.opaque(doc))
    schema = {"$ref": "urn:doc#/components/schemas/BookingIn"}
    validator = Draft202012Validator(schema, registry=registry)
    good = {"externalReference": "R-1", "checkIn": "2026-12-01", "checkOut": "2026-12-02", "currency": "EUR",
            "guest": {"name": "Ana", "phone": "+351912345678"},
            "rooms": [{"roomTypeId": 1, "ratePlanId": 2, "adults": 2, "nightlyRate": "90.00"}]}
    assert not list(validator.iter_errors(good))
    assert list(validator.iter_errors({**good, "surprise": 1}))  # unknown fields are refused
    assert list(validator.iter_errors({**good, "rooms": []}))


async def test_the_postman_collection_has_every_route_and_needs_no_key(api: Harness) -> None:
    doc = await document(api)
    got = await api.call("GET", "/api/v1/connect-api/postman")
    assert got.status == 200 and got.body["info"]["schema"].endswith("/v2.1.0/collection.json")
    assert got.body["auth"]["bearer"][0]["value"] == "{{apiKey}}"
    items = {(i["request"]["method"], shape("/" + "/".join(i["request"]["url"]["path"]).replace("{{", "{")
                                           .replace("}}", "}"))) for i in got.body["item"]}
    documented = {(m.upper(), shape(path)) for path, item in doc["paths"].items() for m in item}
    assert items == documented
    assert all(i["event"][0]["script"]["exec"][0].startswith('pm.test("answers ') for i in got.body["item"])
    env = await api.call("GET", "/api/v1/connect-api/postman?environment=1")
    assert {v["key"]: v["value"] for v in env.body["values"]} == {"baseUrl": "http://localhost", "apiKey": ""}


async def test_the_postman_environment_names_the_configured_public_url_not_the_callers_host(db: Database) -> None:
    from .conftest import open_harness

    async with open_harness(db, {"CONNECTAPI_PUBLIC_URL": "https://api.hotel.example/"}) as api:
        env = await api.call("GET", "/api/v1/connect-api/postman?environment=1", headers={"Host": "evil.example"})
        assert {v["key"]: v["value"] for v in env.body["values"]}["baseUrl"] == "https://api.hotel.example"


@pytest.mark.parametrize("bad", ["ftp://api.hotel.example", "https://", "https://user:pw@api.hotel.example",
                                 "https://api.hotel.example/?q=1", "api.hotel.example"])
def test_a_public_url_that_is_not_one_stops_the_start(bad: str) -> None:
    from connectapi.config import ConfigError, Settings

    with pytest.raises(ConfigError, match="CONNECTAPI_PUBLIC_URL"):
        Settings.from_env({"CONNECTAPI_PUBLIC_URL": bad})
