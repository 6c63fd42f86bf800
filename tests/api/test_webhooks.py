"""Webhook endpoints and deliveries, to a real HTTP receiver on loopback, on the mock clock."""

from __future__ import annotations

import functools
import ipaddress
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from connectapi.actors.webhook_sender import open_webhook_client
from connectapi.domain.webhook_retry import SCHEDULE

from .harness import Harness, after_janitor_rounds, eventually
from .webhook_receiver import Receiver, signed_by


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}


async def until_deliveries(api: Harness, endpoint_id: int, expected: list[tuple[str, int]]) -> None:
    """Until the endpoint's deliveries (newest first) are (status, attempts) as expected: the
    receiver has the request a moment before the sender records the answer."""
    seen: list[tuple[str, int]] = []

    async def as_expected() -> bool:
        found = (await api.admin("GET", f"/webhooks/{endpoint_id}/deliveries")).data
        seen[:] = [(d["status"], d["attempt"]) for d in found]
        return seen == expected

    await eventually(as_expected, lambda: f"deliveries {expected} (seen {seen})")


async def next_attempt_at(api: Harness, endpoint_id: int) -> datetime:
    """When the endpoint's newest delivery is to be tried again, as the record has it."""
    found = (await api.admin("GET", f"/webhooks/{endpoint_id}/deliveries")).data
    return datetime.fromisoformat(found[0]["nextAttemptAt"])


async def until_received(receiver: Receiver, count: int) -> None:
    """Until the receiver has been sent `count` requests (it answers in real time)."""
    await eventually(lambda: len(receiver.received) == count, f"{count} request(s) at the receiver")


async def register(api: Harness, receiver: Receiver) -> tuple[dict[str, Any], dict[str, Any]]:
    prop = await api.create_property()
    made = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": receiver.url, "description": "PMS"})
    assert made.status == 201, made.body
    return prop, made.data


async def test_registration_sends_a_signed_ping(api: Harness, receiver: Receiver) -> None:
    prop, endpoint = await register(api, receiver)
    assert endpoint["secret"].startswith("whsec_") and endpoint["status"] == "active"

    await until_received(receiver, 1)
    headers, body = receiver.received[0]
    assert signed_by(endpoint["secret"], headers, body)
    event = json.loads(body)
    assert headers["webhook-id"] == event["id"] == endpoint["pingEventId"] and event["id"].startswith("evt_")
    assert (event["type"], event["apiVersion"], event["mode"]) == ("connectapi.ping", "2026-09-01", "live")
    assert event["property"] == {"id": prop["id"], "name": "Casa Azul", "currency": "EUR",
                                 "timezone": "Europe/Lisbon"}
    assert "secret" not in body and "whsec_" not in body
    listed = await api.admin("GET", f"/properties/{prop['id']}/webhooks")
    assert [e["id"] for e in listed.data] == [endpoint["id"]] and "secret" not in listed.data[0]

    async def recorded() -> bool:
        found = (await api.admin("GET", f"/webhooks/{endpoint['id']}/deliveries")).data
        return bool(found) and found[0]["status"] == "delivered"
    await eventually(recorded)


async def test_after_a_rotation_both_secrets_sign_for_a_day(api: Harness, receiver: Receiver) -> None:
    _, endpoint = await register(api, receiver)
    rotated = await api.admin("POST", f"/webhooks/{endpoint['id']}/rotate-secret")
    assert rotated.status == 201 and rotated.data["secret"] != endpoint["secret"]
    assert (await api.admin("POST", f"/webhooks/{endpoint['id']}/test")).status == 202

    await until_received(receiver, 2)
    headers, body = receiver.received[1]
    assert signed_by(rotated.data["secret"], headers, body) and signed_by(endpoint["secret"], headers, body)
    api.advance(24 * 3600)
    await api.admin("POST", f"/webhooks/{endpoint['id']}/test")

    await until_received(receiver, 3)
    headers, body = receiver.received[2]
    assert signed_by(rotated.data["secret"], headers, body) and not signed_by(endpoint["secret"], headers, body)


async def test_a_day_of_failures_pauses_the_endpoint_and_resuming_sends_what_waited(
        api: Harness, receiver: Receiver) -> None:
    prop, endpoint = await register(api, receiver)
    receiver.answers = [500] * 8
    for attempt in range(1, 9):
        await until_received(receiver, attempt)
        if attempt <= len(SCHEDULE):
            api.advance(SCHEDULE[attempt - 1].total_seconds() * 1.1 + 1)  # past the wait and its jitter
    # the same event every time, each attempt signed afresh
    assert {h["webhook-id"] for h, _ in receiver.received} == {endpoint["pingEventId"]}

    async def paused() -> bool:
        found = (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data[0]
        return bool(found["status"] == "paused")
    await eventually(paused)
    await api.admin("POST", f"/webhooks/{endpoint['id']}/test")  # queued behind the first, while paused
    api.advance(3600)
    for _ in range(200):
        await trio.sleep(0)
    assert len(receiver.received) == 8  # a paused endpoint is not called

    async def owner_told() -> bool:
        notes = (await api.admin("GET", f"/properties/{prop['id']}/notifications")).data
        return [n["kind"] for n in notes] == ["webhook.paused"]
    await eventually(owner_told)

    resumed = await api.admin("POST", f"/webhooks/{endpoint['id']}/resume")
    assert resumed.data["status"] == "active"

    await until_received(receiver, 10)
    ids = [json.loads(body)["id"] for _, body in receiver.received[8:]]
    assert ids[0] == endpoint["pingEventId"]  # in order of occurrence
    await until_deliveries(api, endpoint["id"], [("delivered", 1), ("delivered", 1)])


async def test_retry_after_is_honoured(api: Harness, receiver: Receiver) -> None:
    _, endpoint = await register(api, receiver)
    receiver.answers = [(503, 60)]  # the schedule's next wait is 5 s; the receiver asks for a minute

    await until_received(receiver, 1)
    begun = api.ctx.clock.now()  # the attempt's start: the clock has not moved since
    # The answer read (a minute from then), before the clock moves.
    await until_deliveries(api, endpoint["id"], [("pending", 1)])
    assert await next_attempt_at(api, endpoint["id"]) == begun + timedelta(seconds=60)
    api.advance(30)
    for _ in range(200):
        await trio.sleep(0)
    assert len(receiver.received) == 1
    api.advance(31)

    await until_received(receiver, 2)
    await until_deliveries(api, endpoint["id"], [("delivered", 2)])


async def test_retry_after_counts_from_the_answer_that_carried_it(api: Harness, receiver: Receiver) -> None:
    _, endpoint = await register(api, receiver)

    async def slow_refusal(receiver: Receiver, stream: trio.SocketStream) -> None:
        receiver.misbehave = None  # the next attempt is answered 204
        await trio.sleep(8)  # the test's clock: the answer comes 8 s into the attempt (within its 10 s)
        await stream.send_all(b"HTTP/1.1 503 X\r\nretry-after: 60\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await stream.aclose()

    receiver.misbehave = slow_refusal

    await until_received(receiver, 1)
    begun = api.ctx.clock.now()  # the attempt's start: the clock has not moved since
    api.advance(8)
    await until_deliveries(api, endpoint["id"], [("pending", 1)])  # failed once, to be tried again
    # A minute from the answer, not from the attempt's start.
    assert await next_attempt_at(api, endpoint["id"]) == begun + timedelta(seconds=8 + 60)
    api.advance(61 - 8)  # a minute and a second after the attempt began: not yet a minute after the answer
    for _ in range(200):
        await trio.sleep(0)
    assert len(receiver.received) == 1
    api.advance(8)

    await until_received(receiver, 2)
    await until_deliveries(api, endpoint["id"], [("delivered", 2)])


@pytest.mark.parametrize("env", [{}])
async def test_inside_urls_are_refused_unless_allowed(api: Harness) -> None:
    prop = await api.create_property()
    for url in ("http://hooks.example.com/in", "https://127.0.0.1/in", "https://10.0.0.8/in", "https://localhost/in"):
        refused = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
        assert (refused.status, refused.code, refused.data["details"][0]["path"]) == (400, "VALIDATION", "url"), url
    assert (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data == []
    assert (await api.admin("POST", "/webhooks/999999/pause")).code == "WEBHOOK_NOT_FOUND"


async def test_redeliver_one_event_and_recover_everything_since(api: Harness, receiver: Receiver) -> None:
    prop, endpoint = await register(api, receiver)
    api.advance(3600)
    second = (await api.admin("POST", f"/webhooks/{endpoint['id']}/test")).data["eventId"]

    await until_received(receiver, 2)
    again = await api.admin("POST", f"/webhooks/{endpoint['id']}/redeliver", {"eventId": endpoint["pingEventId"]})
    assert again.status == 202
    await until_received(receiver, 3)
    assert receiver.received[2][0]["webhook-id"] == endpoint["pingEventId"]  # same id: receivers drop repeats
    missing = await api.admin("POST", f"/webhooks/{endpoint['id']}/redeliver", {"eventId": "evt_nope"})
    assert (missing.status, missing.code) == (404, "EVENT_NOT_FOUND")
    since = (datetime(2026, 11, 22, 10, 30, tzinfo=UTC)).isoformat()
    recovered = await api.admin("POST", f"/webhooks/{endpoint['id']}/recover", {"since": since})
    assert (recovered.status, recovered.data["events"]) == (202, 1)
    assert set(recovered.data) == {"events", "keptSince"}  # how far back recover reaches: the retention
    await until_received(receiver, 4)
    assert receiver.received[3][0]["webhook-id"] == second
    naive = await api.admin("POST", f"/webhooks/{endpoint['id']}/recover", {"since": "2026-11-22T10:30:00"})
    assert naive.code == "VALIDATION"
    other = await api.create_property()
    other_hook = await api.admin("POST", f"/properties/{other['id']}/webhooks", {"url": receiver.url})
    foreign = await api.admin("POST", f"/webhooks/{other_hook.data['id']}/redeliver", {"eventId": second})
    assert foreign.code == "EVENT_NOT_FOUND"  # another property's event


async def test_the_queue_survives_a_restart(db: Any, receiver: Receiver) -> None:
    from .conftest import open_harness

    receiver.answers = [500]
    env = {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}
    async with open_harness(db, env) as first:
        _, endpoint = await register(first, receiver)

        await until_received(receiver, 1)
    # a new service on the same record: the pending delivery is still owed, and sent once the
    # first one's sending lease has run out (the first stopped before recording its attempt)
    async with open_harness(db, env) as second:
        second.advance(61)

        async def delivered() -> bool:
            return len(receiver.received) >= 2
        # The jump can land while a round of the new service is at the record (real time):
        # that statement's deadline fires, and the round waits the outage out on the mock
        # clock, which the test moves on while it waits.
        await after_janitor_rounds(second, delivered, "the owed delivery", every=2.0)
        assert {headers["webhook-id"] for headers, _ in receiver.received} == {endpoint["pingEventId"]}


async def test_gone_pauses_the_endpoint_at_once(api: Harness, receiver: Receiver) -> None:
    prop, endpoint = await register(api, receiver)
    receiver.answers = [410]

    async def paused() -> bool:
        found = (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data[0]
        return bool(found["status"] == "paused")
    await eventually(paused)
    assert len(receiver.received) == 1
    await until_deliveries(api, endpoint["id"], [("pending", 1)])


def resolving(host: str, address: str) -> Any:
    """A resolver that answers `address` for `host` (and nothing else): DNS under the test's hand."""
    async def resolver(name: str, port: int) -> list[Any]:
        return [ipaddress.ip_address(address)] if name == host else []
    return resolver


async def test_a_host_name_resolving_to_loopback_is_refused_at_send_time(db: Any, receiver: Receiver) -> None:
    from .conftest import open_harness

    # Registration takes the name (it looks public); the send resolves it, finds 127.0.0.1, and refuses.
    async with open_harness(db, {}, resolving("hooks.partner.example", "127.0.0.1")) as api:
        prop = await api.create_property()
        made = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": "https://hooks.partner.example/in"})
        assert made.status == 201, made.body
        await until_deliveries(api, made.data["id"], [("pending", 1)])
        [attempt] = (await api.admin("GET", f"/webhooks/{made.data['id']}/deliveries")).data
        assert "not public" in attempt["lastError"] and "127.0.0.1" in attempt["lastError"]
        assert attempt["responseStatus"] is None
    assert receiver.received == []


async def test_a_name_the_resolver_cannot_encode_is_a_refused_attempt_not_a_crash(
        db: Any, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    """A name registered before such names were refused (or one a resolver chokes on for
    another reason): the attempt fails as a refusal, said, with no traceback."""
    from .conftest import open_harness

    async def choking(name: str, port: int) -> list[Any]:
        raise UnicodeError("encoding with 'idna' codec failed (UnicodeError: label too long)")

    async with open_harness(db, {}, choking) as api:
        prop = await api.create_property()
        made = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": "https://hooks.partner.example/in"})
        assert made.status == 201, made.body
        await until_deliveries(api, made.data["id"], [("pending", 1)])
        [attempt] = (await api.admin("GET", f"/webhooks/{made.data['id']}/deliveries")).data
        assert "cannot be looked up" in attempt["lastError"], attempt
    assert "failed inside the sender" not in caplog.text
    assert not [r for r in caplog.records if r.levelname == "ERROR" and r.exc_info]


async def test_a_send_goes_to_the_address_checked_with_the_host_name_kept(db: Any, receiver: Receiver) -> None:
    from .conftest import open_harness

    async with open_harness(db, {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"},
                            resolving("hooks.partner.example", "127.0.0.1")) as api:
        prop = await api.create_property()
        url = f"http://hooks.partner.example:{receiver.port}/hooks"
        made = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
        assert made.status == 201, made.body
        await until_received(receiver, 1)  # the ping
        headers, _ = receiver.received[0]
        # Connected to the one address resolved and checked, never resolving again.
        assert headers["host"] == f"hooks.partner.example:{receiver.port}"


async def test_an_event_held_behind_a_retry_does_not_make_the_sender_spin(
        api: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second event is due, but waits behind the first one's retry (in order per endpoint):
    the sender looks again when the retry falls due, not over and over meanwhile."""
    from connectapi.storage import webhooks

    receiver.answers = [204, 503]  # the ping goes through; the first test event does not
    _, endpoint = await register(api, receiver)
    await until_deliveries(api, endpoint["id"], [("delivered", 1)])
    await api.admin("POST", f"/webhooks/{endpoint['id']}/test")
    await until_deliveries(api, endpoint["id"], [("pending", 1), ("delivered", 1)])
    looks = 0
    real_due = webhooks.due

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal looks
        looks += 1
        return await real_due(*args, **kwargs)

    monkeypatch.setattr(webhooks, "due", counted)
    await api.admin("POST", f"/webhooks/{endpoint['id']}/test")  # due now, held behind the retry
    for _ in range(200):
        await trio.sleep(0)
    assert looks <= 3, f"the sender looked {looks} times in 200 scheduler rounds"
    api.advance(SCHEDULE[0].total_seconds() * 1.2)  # the retry falls due (with its jitter): both go, in order
    await until_deliveries(api, endpoint["id"], [("delivered", 1), ("delivered", 2), ("delivered", 1)])


@pytest.mark.parametrize("url", ["http://0177.0.0.1/", "http://127.1/", "http://0x7f.0.0.1/", "http://2130706433/"])
async def test_numeric_host_oddities_are_refused_at_registration(api: Harness, url: str) -> None:
    """Refused even here, where private receivers are allowed: a resolver reads each as
    127.0.0.1, and no receiver needs its address written so."""
    prop = await api.create_property()
    refused = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
    assert (refused.status, refused.code, refused.data["details"][0]["path"]) == (400, "VALIDATION", "url"), url
    assert "numeric host" in refused.data["details"][0]["message"]
    assert (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data == []


@pytest.mark.parametrize("env", [{}, {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}])
async def test_a_host_name_no_resolver_takes_is_refused_at_registration(api: Harness) -> None:
    prop = await api.create_property()
    for url in ("https://" + "a" * 64 + ".example.com/in", "https://hooks..example.com/in"):
        refused = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
        assert (refused.status, refused.code, refused.data["details"][0]["path"]) == (400, "VALIDATION", "url"), url
        assert "cannot be looked up" in refused.data["details"][0]["message"]
    assert (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data == []


@pytest.mark.parametrize("env", [{}])
@pytest.mark.parametrize("url", ["https://0177.0.0.1/", "https://127.1/", "https://0x7f.0.0.1/", "https://2130706433/"])
async def test_numeric_host_oddities_are_refused_over_https_too(api: Harness, url: str) -> None:
    prop = await api.create_property()
    refused = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
    assert (refused.status, refused.code, refused.data["details"][0]["path"]) == (400, "VALIDATION", "url"), url
    assert "numeric host" in refused.data["details"][0]["message"]


async def test_proxy_settings_in_the_environment_never_carry_a_webhook(
        receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy named in the environment (set for something else on the host) would see every
    signed body and choose where it goes; the delivery client does not read the environment."""
    proxy = Receiver()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1"))
        proxy.port = listeners[0].socket.getsockname()[1]
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        async with open_webhook_client() as client:
            answer = await client.post(receiver.url, content=b"{}")
        nursery.cancel_scope.cancel()
    assert answer.status_code == 204
    assert len(receiver.received) == 1 and proxy.received == []
