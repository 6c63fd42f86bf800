"""A crash injected into each kind of actor: restarted alone while the rest serves; past its
crash budget, down and named by /readyz and the metrics, and still the rest serves."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing

from connectapi.actors.booking_intake import BookingIntake
from connectapi.actors.channel_manager import ChannelManagerActor
from connectapi.actors.janitors import IdempotencyJanitor, KeyListener, RetentionJanitor
from connectapi.actors.messages.channel_manager import CreateProperty
from connectapi.actors.outbox import OutboxSender
from connectapi.actors.property_writer import PropertyWriter
from connectapi.actors.push_scheduler import PushSweeper
from connectapi.actors.pushers import AriProjector, InventoryDrain
from connectapi.actors.reconciler import Reconciler
from connectapi.actors.webhook_sender import WebhookSender
from connectapi.metrics import REGISTRY
from connectapi.storage import notifications

from .harness import API, CASA_AZUL, Harness, eventually

PUSHING = {"CONNECTAPI_PUSH_PAUSED": "0"}


class Injected(RuntimeError):
    pass


def restarts(kind: str) -> float:
    return REGISTRY.get_sample_value("connectapi_actor_restarts_total", {"actor": kind}) or 0.0


def down_gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("connectapi_actor_down", {"actor": name})


def inject(monkeypatch: pytest.MonkeyPatch, cls: type, method: str,
           only: Callable[[Any], bool] = lambda message: True) -> dict[str, bool]:
    """Make `cls.method` raise (on the messages `only` picks) while the returned switch is on."""
    switch = {"on": True}
    original = getattr(cls, method)

    async def crashing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if switch["on"] and only(args[0] if args else None):
            raise Injected(f"injected into {cls.__name__}.{method}")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(cls, method, crashing)
    return switch


async def step(api: Harness, seconds: float = 1.0) -> None:
    """Let the restart backoffs and the actors' timers move on the mock clock (after what is
    running now has settled: a supervisor may still be about to start its backoff)."""
    await trio.testing.wait_all_tasks_blocked()
    api.advance(seconds)
    for _ in range(5):
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(0)


@dataclass
class World:
    """A property with a key, a second one, and what provokes the actor under test once."""

    api: Harness
    prop: dict[str, Any]
    key: str
    other: dict[str, Any]
    other_key: str

    async def serves(self, key: str | None = None) -> bool:
        answer = await self.api.call("GET", f"{API}/property", key=key or self.other_key)
        return answer.status == 200

    async def write(self, key: str | None = None, available: int = 3) -> Any:
        room = (self.other if key == self.other_key else self.prop)["roomTypes"][0]["id"]
        return await self.api.call("PUT", f"{API}/availability", key=key or self.key, body={"updates": [
            {"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "available": available}]})


async def a_world(api: Harness) -> World:
    prop, key = await api.keyed_property(["ari:read", "ari:write"])
    other, other_key = await api.keyed_property(["ari:read", "ari:write"], name="Next Door")
    return World(api, prop, key, other, other_key)


async def kill_the_listener(world: World) -> None:
    """The key listener's round lasts as long as its connection: end it from the record."""
    await world.api.ctx.db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")


async def nothing(world: World) -> None:
    """A round actor runs a round at start, so each new incarnation meets the fault by itself."""


@pytest.mark.parametrize(("env", "name", "cls", "first_provocation"), [
    ({}, "webhook-sender", WebhookSender, nothing),
    ({}, "outbox", OutboxSender, nothing),
    ({}, "booking-intake", BookingIntake, nothing),
    ({}, "reconciler", Reconciler, nothing),
    ({}, "idempotency-janitor", IdempotencyJanitor, nothing),
    ({}, "retention-janitor", RetentionJanitor, nothing),
    ({}, "key-listener", KeyListener, kill_the_listener),
    (PUSHING, "push-sweep", PushSweeper, nothing),
], ids=lambda v: v if isinstance(v, str) else "")
async def test_a_round_actor_that_crashes_restarts_then_goes_down_alone(
        api: Harness, monkeypatch: pytest.MonkeyPatch, name: str, cls: type,
        first_provocation: Callable[[World], Awaitable[None]]) -> None:
    world = await a_world(api)
    before = restarts(name)
    switch = inject(monkeypatch, cls, "round")
    await first_provocation(world)
    # Its timer (at most an hour away) or the provocation: the first crash. A step of a
    # minute lets a crashed actor's backoff start, never end (the clock moves only here).
    for _ in range(70):
        if restarts(name) > before:
            break
        await step(api, 60.0)
    # The provocation (the record ending the listener's connection) is noticed in real time.
    await eventually(lambda: restarts(name) > before, "the first crash")
    assert restarts(name) == before + 1
    assert await world.serves() and (await world.write()).status == 202  # the rest serves meanwhile

    for _ in range(200):  # restarted after each backoff, crashing at once: its budget runs out
        if name in {d.name for d in api.ctx.operation.down()}:
            break
        await step(api)
    down = {d.name: d for d in api.ctx.operation.down()}[name]
    assert down.reason.startswith("Injected: injected into") and down.degraded
    assert down_gauge(name) == 1
    restarts_when_down = restarts(name)
    ready = await api.call("GET", "/readyz")
    assert (ready.status, ready.code) == (503, "NOT_READY")
    assert ready.data["details"]["record"] == "ready"
    assert [d["actor"] for d in ready.data["details"]["down"]] == [name] and name in ready.body["message"]
    # Down means down: no copy started behind the supervisor's back, whatever time passes.
    switch["on"] = False
    for _ in range(30):
        await step(api, 60.0)
    assert restarts(name) == restarts_when_down and name in {d.name for d in api.ctx.operation.down()}
    # and the rest of the service still serves
    assert await world.serves() and (await world.write(available=4)).status == 202
    assert (await api.admin("GET", f"/properties/{world.prop['id']}")).status == 200


async def provoke_by_request(world: World) -> Any:
    return await world.write()


async def provoke_by_creating_a_property(world: World) -> Any:
    """In sandbox mode the admin route makes the property at the channel manager too."""
    return await world.api.admin("POST", "/properties", CASA_AZUL)


# The longest restart backoff before the budget runs out: a singleton's doubles from 1 s to
# 16 s (within 5 minutes), a property's from 0.1 s to 1.6 s (within a minute).
SINGLETON, PER_PROPERTY = 20.0, 2.0


def any_message(message: Any) -> bool:
    return True


def the_admin_route_asks(message: Any) -> bool:
    # Only the test's own requests crash it: the intake's feed reads on its timer would add
    # crashes at moments the test does not choose.
    return isinstance(message, CreateProperty)


@pytest.mark.parametrize(("name_of", "kind", "cls", "only", "provoke", "stays_up", "backoff"), [
    (lambda w: f"writer[{w.prop['id']}]", "writer", PropertyWriter, any_message, provoke_by_request,
     "next door", PER_PROPERTY),
    (lambda w: "channel-manager", "channel-manager", ChannelManagerActor, the_admin_route_asks, provoke_by_creating_a_property,
     "next door", SINGLETON),
], ids=["writer", "channel-manager"])
async def test_an_actor_that_crashes_on_a_message_answers_it_then_restarts(
        api: Harness, monkeypatch: pytest.MonkeyPatch, name_of: Callable[[World], str], kind: str, cls: type,
        only: Callable[[Any], bool], provoke: Callable[[World], Awaitable[Any]], stays_up: str,
        backoff: float) -> None:
    """Each provocation waits out the restart backoff first: a message sent meanwhile would
    wait in the mailbox for a clock that only the test moves."""
    world = await a_world(api)
    name = name_of(world)
    before = restarts(kind)
    switch = inject(monkeypatch, cls, "handle", only)
    crashed = await provoke(world)
    assert (crashed.status, crashed.code) == (500, "INTERNAL")  # the asker hears the crash at once
    await step(api, backoff)
    assert restarts(kind) == before + 1
    switch["on"] = False
    assert (await provoke(world)).status in (200, 201, 202)  # a fresh incarnation
    switch["on"] = True

    for _ in range(30):
        await provoke(world)
        await step(api, backoff)
        if name in {d.name for d in api.ctx.operation.down()}:
            break
    assert name in {d.name for d in api.ctx.operation.down()} and down_gauge(name) == 1
    switch["on"] = False
    refused = await provoke(world)
    assert (refused.status, refused.code) == (503, "SERVICE_UNAVAILABLE")
    assert refused.headers["Retry-After"]
    ready = await api.call("GET", "/readyz")
    assert ready.status == 503 and [d["actor"] for d in ready.data["details"]["down"]] == [name]
    if stays_up == "next door":
        assert await world.serves(world.other_key)
        assert (await world.write(key=world.other_key)).status == 202
    assert (await api.admin("GET", f"/properties/{world.prop['id']}")).status == 200


@pytest.mark.parametrize(("env", "cls"), [(PUSHING, InventoryDrain), (PUSHING, AriProjector)],
                         ids=["inventory-drain", "ari-projector"])
async def test_a_pusher_that_crashes_restarts_and_its_cells_wait_in_the_record(
        api: Harness, monkeypatch: pytest.MonkeyPatch, cls: type) -> None:
    world = await a_world(api)
    kind = "inventory-drain" if cls is InventoryDrain else "ari-projector"
    before = restarts(kind)
    switch = inject(monkeypatch, cls, "push_round")
    plan = world.prop["ratePlans"][0]["id"]
    if cls is InventoryDrain:
        assert (await world.write(available=2)).status == 202
    else:
        rate = await api.call("PUT", f"{API}/rates", key=world.key, body={"updates": [
            {"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "rate": 99, "currency": "EUR"}]})
        assert rate.status == 202
    # The crash comes after the push lease is taken (a statement, in real time): counted then.
    await eventually(lambda: restarts(kind) > before, "the pusher's crash")
    assert restarts(kind) == before + 1
    dirty = await api.call("GET", f"{API}/sync", key=world.key)
    assert dirty.status == 200 and dirty.data["inventory" if cls is InventoryDrain else "rates"]["dirtyCells"] == 1
    switch["on"] = False
    # the next wake finds them (a write of the same property, or the sweep)
    await api.handles.pushes.wake(world.prop["id"], True, True)
    for _ in range(200):
        synced = await api.call("GET", f"{API}/sync", key=world.key)
        if not synced.data["inventory"]["dirtyCells"] and not synced.data["rates"]["dirtyCells"]:
            break
        await step(api)
    assert not synced.data["inventory"]["dirtyCells"] and not synced.data["rates"]["dirtyCells"]


async def test_the_operator_sees_a_down_actor_and_revives_it(api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    world = await a_world(api)
    switch = inject(monkeypatch, OutboxSender, "round")
    api.ctx.properties.wakeups.mails_queued()
    for _ in range(200):
        if api.ctx.operation.down():
            break
        await step(api)
    listed = await api.admin("GET", "/actors")
    assert [d["actor"] for d in listed.data["down"]] == ["outbox"]
    assert listed.data["down"][0]["reason"].startswith("Injected") and listed.data["down"][0]["since"]
    # one process serves (no `serve --workers N` parent): this one
    assert listed.data["workers"] == {"count": 1, "pids": [os.getpid()], "answeredBy": os.getpid()}
    switch["on"] = False  # the cause dealt with
    revived = await api.admin("POST", "/actors/outbox/revive")
    assert (revived.status, revived.data) == (200, {"actor": "outbox", "revived": True})
    assert down_gauge("outbox") is None and (await api.call("GET", "/readyz")).status == 200
    # it works again: an e-mail queued now is sent on the next wake
    now = api.ctx.clock.now()
    await api.ctx.db.transaction(lambda tx: notifications.enqueue(
        tx, world.prop["id"], None, "test", "owner@example.com", "after the revival", "body", now))
    api.ctx.properties.wakeups.mails_queued()

    async def sent() -> bool:
        # the database answers in real time: the round may need a moment past one step
        mails = (await api.admin("GET", f"/properties/{world.prop['id']}/notifications")).data
        return [m["sentAt"] is not None for m in mails if m["subject"] == "after the revival"] == [True]

    await eventually(sent, "the e-mail queued after the revival is sent")
    assert not api.ctx.operation.down()
    again = await api.admin("POST", "/actors/outbox/revive")
    assert (again.status, again.code) == (404, "ACTOR_NOT_DOWN")
    assert await world.serves()
