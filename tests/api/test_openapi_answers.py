"""The answers the service really gives match the success schemas its OpenAPI document
states, route by route: the client libraries' models are generated from that document."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from connectapi.http.api.gates import CONNECT_PREFIX
from connectapi.http.public.openapi import OPENAPI_PATH

from .harness import Answer, Harness
from .test_bookings import setup, stay

API = CONNECT_PREFIX


def conforms(doc: dict[str, Any], path: str, method: str, answer: Answer) -> None:
    """`answer`'s body passes the schema the document gives for its path, method and status."""
    registry: Registry[Any] = Registry().with_resource("urn:doc", Resource.opaque(doc))
    pointer = "/".join(part.replace("~", "~0").replace("/", "~1") for part in (
        "paths", CONNECT_PREFIX + path, method, "responses", str(answer.status), "content", "application/json",
        "schema"))
    validator = Draft202012Validator({"$ref": f"urn:doc#/{pointer}"}, registry=registry)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(answer.body)]
    assert not errors, (method, path, answer.status, errors)


async def test_every_success_answer_matches_its_documented_schema(api: Harness) -> None:
    doc = dict((await api.call("GET", OPENAPI_PATH)).body)
    prop, key = await setup(api, ["ari:read", "ari:write", "bookings:read", "bookings:write",
                                  "bookings:payments"])
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    seen: set[tuple[str, str]] = set()

    async def check(method: str, path: str, documented: str | None = None, body: Any = None,
                    status: int = 200) -> Answer:
        answer = await api.call(method, API + path, key=key, body=body)
        assert answer.status == status, (method, path, answer.body)
        conforms(doc, documented or path, method.lower(), answer)
        seen.add((method, documented or path))
        return answer

    await check("GET", "/property")
    await check("GET", "/catalog")
    write = await check("PUT", "/availability", body={"updates": [
        {"roomTypeId": room, "dateFrom": "2026-12-01", "dateTo": "2026-12-03", "available": 4}]}, status=202)
    await check("PUT", "/rates", body={"updates": [
        {"ratePlanId": plan, "dateFrom": "2026-12-01", "dateTo": "2026-12-03", "rate": "120", "currency": "EUR"}]},
        status=202)
    await check("PUT", "/restrictions", body={"updates": [
        {"ratePlanId": plan, "dateFrom": "2026-12-02", "dateTo": "2026-12-02", "minStayArrival": 2,
         "closedToArrival": True}]}, status=202)
    for resource in ("availability", "rates", "restrictions"):
        await check("GET", f"/{resource}?from=2026-12-01&to=2026-12-04", f"/{resource}")
    await check("GET", "/sync")
    await check("GET", f"/batches/{write.data['batchId']}", "/batches/{batchId}")
    made = await check("POST", "/bookings", body=stay(prop, payment={"amount": "10.00", "method": "ONLINE",
                                                                      "reference": "P-1"}), status=201)
    await check("POST", "/bookings", body=stay(prop, payment={"amount": "10.00", "method": "ONLINE",
                                                               "reference": "P-1"}))
    booking = f"/bookings/{made.data['bookingId']}"
    await check("GET", booking, "/bookings/{bookingId}")
    await check("GET", "/bookings?limit=1", "/bookings")
    await check("PATCH", booking, "/bookings/{bookingId}", body={"notes": "late arrival"})
    await check("POST", booking + "/cancel", "/bookings/{bookingId}/cancel", body={"reason": "guest asked"})
    contract = {(method.upper(), path.removeprefix(CONNECT_PREFIX)) for path, item in doc["paths"].items()
                for method in item if "/test-helpers/" not in path}
    assert seen == contract
