"""The Python client (`connectapi_client.Client`) against the live service: every route,
the retries (429, 503, dropped connections) with one idempotency key per call, the cap on
waits, typed errors, the RateLimit state, batches, paging, and webhooks the service really
delivered."""

from __future__ import annotations

import base64
import datetime
import json
import logging
import math
import time
from typing import Any

import httpx
import pytest

from connectapi_client import (ApiConnectionError, ApiError, AuthenticationError, BatchTimeoutError, Client, ConflictError,
                               IdempotencyError, InvalidRequestError, NotEntitledError, NotFoundError,
                               NothingAcceptedError, PayloadTooLargeError,
                               PermissionDeniedError, PreconditionFailedError, RateLimitedError,
                               ServiceUnavailableError, WebhookRawBodyError, WebhookVerificationError, models,
                               verify_webhook, verify_webhook_parsed)

from .clocks import FakeClock
from .conftest import Keyed, Live
from .fault_proxy import Fault, FaultProxy

TODAY = datetime.date.today()


def night(days: int) -> datetime.date:
    return TODAY + datetime.timedelta(days=days)


def stay(keyed: Keyed, reference: str, arrive: int = 30, nights: int = 2) -> dict[str, Any]:
    return {"externalReference": reference, "checkIn": night(arrive), "checkOut": night(arrive + nights),
            "currency": "EUR", "guest": {"name": "Ana Silva", "phone": "+351 912 345 678", "email": "ana@example.com"},
            "rooms": [{"roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id, "adults": 2,
                       "nightlyRate": "120.50"}]}


def rate(keyed: Keyed, amount: str = "120", first: int = 10, last: int = 12) -> dict[str, Any]:
    return {"ratePlanId": keyed.rate_plan_id, "dateFrom": night(first), "dateTo": night(last), "rate": amount,
            "currency": "EUR"}


def client_for(url: str, keyed: Keyed | str, **options: Any) -> tuple[Client, FakeClock]:
    clock = options.pop("clock", None) or FakeClock()
    key = keyed if isinstance(keyed, str) else keyed.key
    return Client(base_url=url, api_key=key, clock=clock, **options), clock


def test_every_route_of_the_contract(live: Live) -> None:
    keyed = live.keyed()
    client, clock = client_for(live.url, keyed, clock=FakeClock(pause=0.05))
    prop = client.property()
    assert (prop.id, prop.mode, prop.currency) == (keyed.property["id"], "test", "EUR")
    assert client.rate_limit is not None and client.rate_limit.budgets["requests"].quota == 120
    catalog = client.catalog()
    assert [r.id for r in catalog.room_types] == [keyed.room_type_id]

    written = client.availability.set([{"roomTypeId": keyed.room_type_id, "dateFrom": night(10),
                                        "dateTo": night(12), "available": 5}])
    assert (written.accepted_cells, written.resource) == (3, "availability")
    first = client.last_response
    assert first is not None and first.status == 202 and first.idempotency_key and not first.idempotent_replay
    assert client.rates.set([rate(keyed)]).accepted_cells == 3
    restricted = client.restrictions.set([{"ratePlanId": keyed.rate_plan_id, "dateFrom": night(11),
                                           "dateTo": night(11), "minStayArrival": 2, "stopSell": False}])
    assert restricted.accepted_cells == 1

    nights = client.availability.get(night(10), night(12)).room_types[0].nights
    assert [(n.date, n.available) for n in nights] == [(night(d), 5) for d in (10, 11, 12)]
    assert {n.rate_minor for n in client.rates.get(night(10), night(12)).rate_plans[0].nights} == {12000}
    held = client.restrictions.get(night(11), night(11)).rate_plans[0].nights[0]
    assert (held.min_stay_arrival, held.stop_sell, held.max_stay) == (2, False, None)
    assert client.sync().inventory.state in ("IN_SYNC", "PENDING")

    batch = client.wait_for_batch(written.batch_id, timeout=300)
    assert batch.status == "completed" and batch.pending_cells == 0
    assert clock.waits == []  # the service held the request until the batch was done: no poll
    assert client.batch(written.batch_id).batch_id == written.batch_id

    made = client.bookings.create(stay(keyed, "PY-1"))
    assert (made.status, made.replay, made.check_in, made.rooms[0].nightly_rate) == (
        "UPCOMING", False, night(30), "120.50")
    again = client.bookings.create(stay(keyed, "PY-1"))
    assert again.replay and again.booking_id == made.booking_id
    assert client.bookings.get(made.booking_id) == made.model_copy(update={"replay": False})
    for n in (2, 3):
        client.bookings.create(stay(keyed, f"PY-{n}", arrive=40 + n))
    pages = list(client.bookings.pages(limit=1))
    assert [len(p.bookings) for p in pages] == [1, 1, 1]  # not the empty one after a full last page
    listed = [b.external_reference for b in client.bookings.list(limit=2)]
    assert listed == ["PY-3", "PY-2", "PY-1"]

    changed = client.bookings.modify(made.booking_id, {"notes": "late arrival"}, if_match=made.revision)
    assert changed.revision == (made.revision or 0) + 1
    with pytest.raises(PreconditionFailedError) as stale:
        client.bookings.modify(made.booking_id, {"notes": "again"}, if_match=made.revision)
    assert stale.value.code == "BOOKING_REVISION_STALE" and stale.value.details["revision"] == changed.revision
    cancelled = client.bookings.cancel(made.booking_id, "guest asked")
    assert cancelled.status == "CANCELLED" and cancelled.cancelled_at is not None
    assert client.bookings.cancel(made.booking_id, "guest asked").replay


def test_a_per_person_plan_is_priced_per_occupancy_and_read_back_typed(live: Live) -> None:
    keyed = live.keyed()
    plan = live.per_person(keyed)["id"]
    client, _ = client_for(live.url, keyed)
    [sold] = [p for p in client.catalog().rate_plans if p.id == plan]
    assert (sold.sell_mode, sold.occupancies) == ("perPerson", [1, 2])
    written = client.rates.set([{"ratePlanId": plan, "occupancy": n, "dateFrom": night(10), "dateTo": night(11),
                                 "rate": str(60 + 15 * n), "currency": "EUR"} for n in (1, 2)])
    assert (written.requested_cells, written.accepted_cells) == (4, 4)
    [read] = [p for p in client.rates.get(night(10), night(11)).rate_plans if p.rate_plan_id == plan]
    first = read.nights[0]
    assert isinstance(first, models.RatesReadRatePlanNight) and first.rate_minor == 9000
    assert [(o.occupancy, o.rate_minor) for o in first.by_occupancy or []] == [(1, 7500), (2, 9000)]
    with pytest.raises(InvalidRequestError) as refused:
        client.rates.set([{"ratePlanId": plan, "dateFrom": night(10), "dateTo": night(10), "rate": "80",
                           "currency": "EUR"}])
    assert refused.value.code == "VALIDATION" and refused.value.details[0]["path"] == "updates[0].occupancy"


def test_a_live_key_works_the_same(live: Live) -> None:
    keyed = live.keyed(mode="live")
    client, _ = client_for(live.url, keyed)
    assert client.property().mode == "live"
    assert client.rates.set([rate(keyed, "99")]).accepted_cells == 3


def test_a_429_is_waited_and_retried_with_the_same_key(live: Live, proxy: FaultProxy,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    keyed = live.keyed()
    client, clock = client_for(proxy.url, keyed)
    proxy.script.arm(Fault("429-before", "PUT /rates", retry_after=2))
    with caplog.at_level(logging.INFO, logger="connectapi_client"):
        result = client.rates.set([rate(keyed)])
    told = [r.getMessage() for r in caplog.records if r.name == "connectapi_client"]
    assert len(told) == 1 and told[0].startswith("PUT /rates: 429 RATE_LIMITED; try 2 in 2.")
    assert keyed.key not in caplog.text
    tries = proxy.script.tries("PUT", "/rates")
    assert [t.answered for t in tries] == [429, 202]
    assert tries[0].idempotency_key == tries[1].idempotency_key == client.last_response.idempotency_key  # type: ignore[union-attr]
    assert len(clock.waits) == 1 and 2 <= clock.waits[0] <= 3
    assert result.accepted_cells == 3 and client.last_response.attempts == 2  # type: ignore[union-attr]


def test_a_429_after_the_write_was_committed_gets_the_replay_not_a_second_write(live: Live,
                                                                                  proxy: FaultProxy) -> None:
    keyed = live.keyed()
    client, _ = client_for(proxy.url, keyed)
    proxy.script.arm(Fault("429-after", "PUT /rates", retry_after=1))
    result = client.rates.set([rate(keyed, "130")])
    tries = proxy.script.tries("PUT", "/rates")
    assert [(t.answered, t.replay) for t in tries] == [(429, False), (202, True)]
    assert tries[0].idempotency_key == tries[1].idempotency_key
    assert client.last_response is not None and client.last_response.idempotent_replay
    # One write: the replayed answer is the first try's, its cells accepted once.
    assert result.accepted_cells == 3
    assert client.rates.set([rate(keyed, "130")]).noop_cells == 3  # a new call, new key: all unchanged


def test_a_503_is_retried(live: Live, proxy: FaultProxy) -> None:
    keyed = live.keyed()
    client, clock = client_for(proxy.url, keyed)
    proxy.script.arm(Fault("503-before", "GET /property", retry_after=1, count=2))
    assert client.property().id == keyed.property["id"]
    assert [t.answered for t in proxy.script.tries("GET", "/property")] == [503, 503, 200]
    assert len(clock.waits) == 2
    proxy.script.arm(Fault("503-before", "GET /property", retry_after=1, count=5))
    with pytest.raises(ServiceUnavailableError) as failed:
        client.with_options(max_retries=1).property()
    assert failed.value.status == 503 and failed.value.retry_after == 1


def test_a_dropped_connection_is_retried_only_for_a_write_with_a_key(live: Live, proxy: FaultProxy) -> None:
    keyed = live.keyed()
    client, _ = client_for(proxy.url, keyed)
    proxy.script.arm(Fault("drop-after", "PUT /availability"))
    result = client.availability.set([{"roomTypeId": keyed.room_type_id, "dateFrom": night(5), "dateTo": night(5),
                                       "available": 2}])
    tries = proxy.script.tries("PUT", "/availability")
    assert [(t.answered, t.replay) for t in tries] == [("dropped", False), (202, True)]
    assert tries[0].idempotency_key == tries[1].idempotency_key and result.accepted_cells == 1

    # A simulated OTA booking has no key: sent twice, it would be two bookings.
    proxy.script.arm(Fault("drop-after", "POST /test-helpers/ota-bookings"))
    with pytest.raises(ApiConnectionError) as dropped:
        client.test_helpers.ota_booking({"roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id,
                                         "checkIn": night(20).isoformat(), "checkOut": night(21).isoformat(),
                                         "guest": {"name": "Rui"}})
    assert [t.answered for t in proxy.script.tries("POST", "/test-helpers/ota-bookings")] == ["dropped"]
    assert dropped.value.idempotency_key is None  # sent without one: nothing to send again with


def test_a_write_that_raised_is_sent_again_with_its_errors_key_and_written_once(live: Live,
                                                                                proxy: FaultProxy) -> None:
    """Every error of a write names the idempotency key its tries carried: an integration
    that queues a write which raised sends it again later with that key, and the write is
    made once, whether its first tries were committed (a dropped answer) or not (a 429)."""
    keyed = live.keyed()
    client, _ = client_for(proxy.url, keyed, max_retries=0)
    proxy.script.arm(Fault("drop-after", "PUT /rates"))  # committed, the answer lost
    with pytest.raises(ApiConnectionError) as dropped:
        client.rates.set([rate(keyed, "141")])
    proxy.script.arm(Fault("429-before", "PUT /rates", retry_after=5))  # refused before anything
    with pytest.raises(RateLimitedError) as limited:
        client.rates.set([rate(keyed, "142", first=20, last=21)])
    first_tries = proxy.script.tries("PUT", "/rates")
    assert [t.idempotency_key for t in first_tries] == [dropped.value.idempotency_key, limited.value.idempotency_key]
    assert dropped.value.idempotency_key != limited.value.idempotency_key

    again = client.rates.set([rate(keyed, "141")], idempotency_key=dropped.value.idempotency_key)
    assert client.last_response is not None and client.last_response.idempotent_replay  # the first try's answer
    assert again.accepted_cells == 3
    again = client.rates.set([rate(keyed, "142", first=20, last=21)], idempotency_key=limited.value.idempotency_key)
    assert client.last_response is not None and not client.last_response.idempotent_replay  # written now, once
    assert again.accepted_cells == 2
    assert [(t.answered, t.replay) for t in proxy.script.tries("PUT", "/rates")[2:]] == [(202, True), (202, False)]
    held = {n.date: n.rate_minor for plan in client.rates.get(night(10), night(21)).rate_plans
            if plan.rate_plan_id == keyed.rate_plan_id for n in plan.nights}
    assert [held[night(d)] for d in (10, 11, 12, 20, 21)] == [14100, 14100, 14100, 14200, 14200]


def test_a_success_answer_not_from_the_service_raises_with_the_writes_key() -> None:
    """A 2xx without the service's envelope (a captive portal, a misrouted proxy): the
    write may or may not have been made, so the error names the key to send it again with."""
    sent: list[httpx.Request] = []

    def middlebox(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, text="<html>welcome to the hotel wifi</html>", headers={"content-type": "text/html"})

    client = Client(base_url="http://connectapi.invalid", api_key="cak_test_x",
                    http_client=httpx.Client(transport=httpx.MockTransport(middlebox)))
    with pytest.raises(ApiError) as odd:
        client.rates.set([{"ratePlanId": 1, "dateFrom": "2026-12-01", "dateTo": "2026-12-01", "rate": "90",
                           "currency": "EUR"}])
    assert odd.value.code == "UNEXPECTED_ANSWER" and odd.value.status == 200
    assert odd.value.idempotency_key == sent[0].headers["x-idempotency-key"]


def test_a_redirect_is_never_followed_nor_taken_for_an_answer() -> None:
    """A 307 to another origin, even with the service's envelope in its body: an error with
    the write's key, and nothing sent to where it points (as the TypeScript client)."""
    sent: list[httpx.Request] = []

    def redirecting(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(307, headers={"location": "http://elsewhere.invalid/api/v1/connect-api/v1/rates"},
                              json={"statuscode": 202, "message": "ok", "data": {"batchId": "not-ours"}})

    client = Client(base_url="http://connectapi.invalid", api_key="cak_test_x", max_retries=0,
                    http_client=httpx.Client(transport=httpx.MockTransport(redirecting)))
    with pytest.raises(ApiError) as redirected:
        client.rates.set([{"ratePlanId": 1, "dateFrom": "2026-12-01", "dateTo": "2026-12-01", "rate": "90",
                           "currency": "EUR"}])
    assert (redirected.value.status, redirected.value.code) == (307, "UNEXPECTED_ANSWER")
    assert "not followed" in redirected.value.message
    assert redirected.value.idempotency_key == sent[0].headers["x-idempotency-key"]
    assert [r.url.host for r in sent] == ["connectapi.invalid"]


def test_a_wait_beyond_max_wait_raises_at_once_with_the_wait(live: Live, proxy: FaultProxy) -> None:
    keyed = live.keyed()
    client, clock = client_for(proxy.url, keyed)
    proxy.script.arm(Fault("429-before", "PUT /rates", retry_after=3600))
    with pytest.raises(RateLimitedError) as refused:
        client.rates.set([rate(keyed)])
    assert refused.value.retry_after == 3600 and "max_wait" in str(refused.value)
    assert clock.waits == [] and len(proxy.script.tries("PUT", "/rates")) == 1


def test_a_burst_meets_the_services_own_429(live: Live) -> None:
    keyed = live.keyed()
    client, clock = client_for(live.url, keyed, max_retries=0)
    accepted = 0
    with pytest.raises(RateLimitedError) as limited:
        for n in range(40):
            client.rates.set([rate(keyed, str(100 + n))])
            accepted += 1
    assert accepted == 30  # the key's writes budget
    error = limited.value
    assert (error.status, error.code, error.scope) == (429, "RATE_LIMITED", "writes")
    assert error.retry_after is not None and 0 < error.retry_after <= 60 and error.request_id
    assert error.rate_limit is not None and error.rate_limit.budgets["writes"].remaining == 0
    assert client.rate_limit is error.rate_limit and clock.waits == []
    # A client with_options made says what it saw, and so does the one it was made of.
    quiet = client.with_options(max_retries=0)
    with pytest.raises(RateLimitedError):
        quiet.rates.set([rate(keyed, "76")])
    assert client.last_response is quiet.last_response and client.last_response.status == 429  # type: ignore[union-attr]
    # With a retry allowed, the client waits what the service said, then gives up.
    patient, clock = client_for(live.url, keyed, max_retries=1)
    with pytest.raises(RateLimitedError):
        patient.rates.set([rate(keyed, "77")])
    assert len(clock.waits) == 1 and clock.waits[0] >= error.retry_after - 1


def test_errors_are_typed_by_their_code(live: Live) -> None:
    keyed = live.keyed()
    client, _ = client_for(live.url, keyed)
    with pytest.raises(AuthenticationError) as bad_key:
        client_for(live.url, "cak_test_" + "x" * 43)[0].property()
    assert bad_key.value.code == "API_KEY_INVALID" and "cak_test_" not in str(bad_key.value)
    reader = client_for(live.url, live.another_key(keyed, ["ari:read"]))[0]
    with pytest.raises(PermissionDeniedError) as scope:
        reader.rates.set([rate(keyed)])
    assert scope.value.code == "SCOPE_MISSING" and scope.value.details["needed"] == "ari:write"
    with pytest.raises(InvalidRequestError) as invalid:
        client.rates.set([{**rate(keyed), "rate": "cheap"}])
    assert invalid.value.code == "VALIDATION" and isinstance(invalid.value.details, list)
    with pytest.raises(InvalidRequestError) as unknown:
        client.rates.set([{**rate(keyed), "ratePlanId": 999999}])
    assert unknown.value.code == "UNKNOWN_RATE_PLAN" and unknown.value.details["ratePlanIds"] == [999999]
    with pytest.raises(NotFoundError) as missing:
        client.batch("00000000-0000-4000-8000-000000000000")
    assert missing.value.code == "BATCH_NOT_FOUND" and missing.value.request_id
    made = client.bookings.create(stay(keyed, "PY-ERR"))
    client.test_helpers.check_in(made.booking_id)
    with pytest.raises(ConflictError) as checked_in:
        client.bookings.cancel(made.booking_id)
    assert checked_in.value.code == "BOOKING_NOT_CANCELLABLE"
    client.rates.set([rate(keyed, "150")], idempotency_key="py-key-0001")
    with pytest.raises(IdempotencyError) as reused:
        client.rates.set([rate(keyed, "151")], idempotency_key="py-key-0001")
    assert (reused.value.status, reused.value.code) == (409, "IDEMPOTENCY_KEY_REUSED")
    with pytest.raises(PayloadTooLargeError) as large:
        client.rates.set([rate(keyed)] * 12000)
    assert large.value.status == 413
    with pytest.raises(NothingAcceptedError) as refused:
        client.rates.set([rate(keyed, "5")])  # under the plan's minimum of 40
    assert refused.value.status == 422 and refused.value.details["rejected"][0]["cells"] == 3
    with pytest.raises(ValueError):
        client.rates.set([rate(keyed)], idempotency_key="short")
    assert client.rate_limit is not None and client.rate_limit.remaining is not None  # read on errors too


def test_a_property_without_the_pms_is_not_entitled(live: Live) -> None:
    keyed = live.keyed()
    assert live.admin.patch(f"/properties/{keyed.property['id']}", json={"pmsEntitled": False}).status_code == 200
    with pytest.raises(NotEntitledError) as refused:
        client_for(live.url, keyed)[0].bookings.create(stay(keyed, "PY-402"))
    assert (refused.value.status, refused.value.code, refused.value.details) == (
        402, "MODULE_NOT_ENTITLED", {"module": "PMS"})


def test_wait_for_batch_gives_up_after_its_timeout(live: Live, proxy: FaultProxy) -> None:
    keyed = live.keyed()
    client, clock = client_for(live.url, keyed)
    client.test_helpers.channel_faults("500", count=100)
    written = client.rates.set([rate(keyed, "140")])
    started = time.monotonic()
    with pytest.raises(BatchTimeoutError) as waited:
        client.wait_for_batch(written.batch_id, timeout=8, interval=1)
    took = time.monotonic() - started
    # The service held the request for the whole seconds left (7 of the 8): no poll, no sleep
    # of the client's; the last second is too short to ask the service to wait for.
    assert waited.value.batch.status == "pending" and clock.waits == [] and 6 < took < 14


def test_wait_for_batch_answers_within_a_second_of_the_batch(live: Live) -> None:
    keyed = live.keyed()
    client, clock = client_for(live.url, keyed)
    written = client.rates.set([rate(keyed, "145", first=40, last=41)])
    started = time.monotonic()
    batch = client.wait_for_batch(written.batch_id, timeout=60)
    took = time.monotonic() - started
    assert batch.status == "completed" and clock.waits == []
    # Pushed within a few seconds (the service gathers a property's changes for 1 s first),
    # where polling every 15 s took 15 s at the least.
    assert took < 10, took


def test_against_a_service_that_answers_at_once_wait_for_batch_keeps_the_contracts_pace() -> None:
    """A service of a version without `wait` answers a pending batch at once: the client
    then polls every 15 s, as before."""
    asked: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params.get("wait"))
        return httpx.Response(200, json={"statuscode": 200, "message": "OK", "data": {
            "batchId": "b1", "resource": "rates", "status": "pending", "pendingCells": 1}})

    clock = FakeClock()
    client = Client(base_url="http://service.test", api_key="cak_test_x", clock=clock,
                    http_client=httpx.Client(transport=httpx.MockTransport(answer), timeout=30))
    with pytest.raises(BatchTimeoutError):
        client.wait_for_batch("b1", timeout=40)
    # Each asks the service to wait, at most 20 s and what is left (real time passes too).
    assert clock.waits == [15.0, 15.0] and asked[:2] == ["20", "20"] and asked[2] in ("9", "10")


# ---- webhooks --------------------------------------------------------------------------

VECTORS = [  # Standard Webhooks' own test vectors (REFERENCE.md)
    ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", '{"test": 2432232314}',
     "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
    ("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", "1649367553",
     '{"email":"test@example.com","username":"test_user"}', "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="),
]


@pytest.mark.parametrize(("secret", "event_id", "stamp", "body", "signature"), VECTORS)
def test_the_standard_webhooks_vectors(secret: str, event_id: str, stamp: str, body: str, signature: str) -> None:
    from connectapi_client.webhooks import _signed
    headers = {"webhook-id": event_id, "webhook-timestamp": stamp, "webhook-signature": f"v1,bogus {signature}"}
    _signed(body.encode(), headers, [secret], 300, float(stamp))
    with pytest.raises(WebhookVerificationError):
        _signed(body.encode() + b" ", headers, [secret], 300, float(stamp))
    with pytest.raises(WebhookVerificationError, match="beyond 300"):
        _signed(body.encode(), headers, [secret], 300, float(stamp) + 301)
    with pytest.raises(WebhookVerificationError, match="not an event of the service"):
        verify_webhook(body, headers, secret, now=float(stamp))  # signed, but no event


@pytest.mark.parametrize(("tolerance", "now"), [(math.nan, None), (math.inf, None), (300, math.nan),
                                               (math.inf, math.inf), (-math.inf, None)])
def test_a_number_that_is_not_finite_fails_closed(tolerance: float, now: float | None) -> None:
    """A delivery 10^8 s old, signed right: refused whatever non-finite number is given (a
    NaN compared false with its age and let it through)."""
    secret, event_id, stamp, body, signature = VECTORS[1]
    headers = {"webhook-id": event_id, "webhook-timestamp": stamp, "webhook-signature": signature}
    at = float(stamp) + 1e8 if now is None else now
    with pytest.raises(WebhookVerificationError, match="must be finite numbers"):
        verify_webhook(body, headers, secret, tolerance=tolerance, now=at)


@pytest.mark.parametrize("stamp", ["9" * 400, "1e9", "0x10", "1_000", ""])
def test_a_timestamp_that_is_no_number_of_seconds_is_refused(stamp: str) -> None:
    secret, event_id, _, body, signature = VECTORS[1]
    headers = {"webhook-id": event_id, "webhook-timestamp": stamp, "webhook-signature": signature}
    with pytest.raises(WebhookVerificationError, match="not a number of seconds"):
        verify_webhook(body, headers, secret)


def test_real_deliveries_verify_and_forgeries_do_not(live: Live) -> None:
    keyed = live.keyed()
    endpoint = live.webhook_endpoint(keyed, "/py-hook")
    ping = live.receiver.wait_for("/py-hook", 1)[0]
    event = verify_webhook(ping.raw, ping.headers, endpoint["secret"])
    assert (event.type, event.mode, event.property.id, event.data.reason) == (
        "connectapi.ping", "test", keyed.property["id"], "registered")
    assert verify_webhook(ping.raw.decode(), {k.upper(): v for k, v in ping.headers.items()}, endpoint["secret"]).id
    assert verify_webhook_parsed(json.loads(ping.raw), ping.headers, endpoint["secret"]).id == event.id

    with pytest.raises(WebhookVerificationError):
        verify_webhook(ping.raw.replace(b"registered", b"registerez"), ping.headers, endpoint["secret"])
    with pytest.raises(WebhookVerificationError, match="beyond 300"):
        verify_webhook(ping.raw, ping.headers, endpoint["secret"], now=time.time() + 301)
    with pytest.raises(WebhookVerificationError, match="webhook-signature"):
        verify_webhook(ping.raw, {k: v for k, v in ping.headers.items() if k.lower() != "webhook-signature"},
                       endpoint["secret"])
    other = "whsec_" + base64.b64encode(b"another secret of 24 byte").decode()
    with pytest.raises(WebhookVerificationError, match="no signature"):
        verify_webhook(ping.raw, ping.headers, other)
    with pytest.raises(WebhookRawBodyError, match="raw body"):
        verify_webhook(json.loads(ping.raw), ping.headers, endpoint["secret"])
    with pytest.raises(WebhookRawBodyError, match="raw body"):
        verify_webhook_parsed({**json.loads(ping.raw), "extra": 1}, ping.headers, endpoint["secret"])

    # A rotated secret: the old one signs beside the new for a day; either verifies alone.
    rotated = live.admin.post(f"/webhooks/{endpoint['id']}/rotate-secret").json()["data"]["secret"]
    assert live.admin.post(f"/webhooks/{endpoint['id']}/test").status_code == 202
    signed_twice = live.receiver.wait_for("/py-hook", 2)[1]
    assert len(signed_twice.headers["webhook-signature"].split()) == 2
    for secret in (rotated, endpoint["secret"], [other, rotated]):
        assert verify_webhook(signed_twice.raw, signed_twice.headers, secret).data.reason == "test"


def test_an_ota_booking_arrives_as_a_typed_verified_event(live: Live) -> None:
    keyed = live.keyed()
    endpoint = live.webhook_endpoint(keyed, "/py-ota")
    client, _ = client_for(live.url, keyed)
    sent = client.test_helpers.ota_booking({"roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id,
                                            "checkIn": night(50).isoformat(), "checkOut": night(52).isoformat(),
                                            "guest": {"name": "Marta"}})
    delivered = live.receiver.wait_for("/py-ota", 2)[1]  # the ping first
    event = verify_webhook(delivered.raw, delivered.headers, endpoint["secret"])
    assert event.type == "channel.booking.created"
    booking = event.data.booking
    assert isinstance(booking, models.WebhookBooking)
    assert (booking.reference, booking.channel.reservation_code, booking.stay.check_in, booking.stay.nights) == (
        sent.reference, sent.reservation_code, night(50), 2)
