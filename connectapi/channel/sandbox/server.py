"""The sandbox channel manager over HTTP: Channex's API as documented, plus control routes.

Channex routes (auth: `user-api-key`): POST /api/v1/properties, /room_types, /rate_plans
(per room or per person); POST and GET /api/v1/availability and /api/v1/restrictions; the
booking revision feed (paged), one revision, and its acknowledgement. Control routes:
control.py.
Order for every Channex call: key, armed fault, body, budget, work. Every answer carries a
fresh `x-request-id`, as Channex's do.

Faults: `429` and `500` answer so; `timeout` holds the call for an hour; `malformed`
answers 200 with an HTML page (content type text/html); `reset` closes the connection
without an answer. Hypercorn answers 500 itself for an app that ends without starting a
response, so `reset` is done by `sandbox_asgi_app`'s wrapper (see SandboxASGI).
"""

from __future__ import annotations

import hmac
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

import trio
from hypercorn.typing import (ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, HTTPResponseStartEvent,
                              Scope)
from quart import Response, request
from quart_trio import QuartTrio
from werkzeug.local import LocalProxy

from ...engine import Clock
from . import answers
from .answers import DROP_CONNECTION_HEADER
from .ari_fields import readable
from .control import add_control_routes
from .occupancy import sold_per_person
from .state import CallKind, SandboxState, Throttle

HANG_SECONDS = 3600.0  # a "timeout" fault holds the call this long (the client gives up first)
DRAIN_SECONDS = 0.5  # what is left of a body no handler read: read if already there, not awaited
# Channex pages its lists: the first 10 unless asked, at most 100 a page (API reference, Pagination).
FEED_DEFAULT_LIMIT = 10
FEED_MAX_LIMIT = 100


class Refused(Exception):
    """Raised inside a route to answer at once with `answer`."""

    def __init__(self, answer: Response) -> None:
        super().__init__("refused")
        self.answer = answer


@dataclass(frozen=True)
class Served:
    """One sandbox as served: what its answers read and change, its key and its clock."""

    state: SandboxState
    api_key: str
    clock: Clock


# The sandbox a request is for: set by SandboxASGI for each ASGI call. A sandbox's app is
# not built for it but lent (sandbox_asgi_app): building one (werkzeug compiles each route)
# cost 13 ms, a fifth of starting a service in the tests, which start hundreds.
_serving: ContextVar[Served] = ContextVar("sandbox_serving")
state = cast(SandboxState, LocalProxy(_serving, "state", unbound_message="no sandbox is being served"))
clock = cast(Clock, LocalProxy(_serving, "clock", unbound_message="no sandbox is being served"))
_idle_apps: list[QuartTrio] = []  # built, and serving no sandbox now


@contextmanager
def serving(served: Served) -> Iterator[None]:
    """Requests handled in this context (by tasks started from it) answer for `served`."""
    token = _serving.set(served)
    try:
        yield
    finally:
        _serving.reset(token)


@contextmanager
def sandbox_asgi_app(state: SandboxState, api_key: str, clock: Clock) -> Iterator[SandboxASGI]:
    """The sandbox as hypercorn serves it, for as long as it is served: an app answering for
    `state` with `api_key`, able to drop a connection (fault `reset`). The app is one this
    process built before and no sandbox is using, if there is one: not one shared by all,
    since a served app keeps its lifespan's nursery and shutdown event on itself."""
    app = _idle_apps.pop() if _idle_apps else sandbox_app()
    try:
        yield SandboxASGI(app, Served(state, api_key, clock))
    finally:
        _idle_apps.append(app)


def sandbox_app() -> QuartTrio:
    """A new sandbox app; a request answers for the sandbox `serving` names."""
    app = QuartTrio("connectapi-sandbox-cm")
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False

    def authorised() -> bool:
        given = request.headers.get("user-api-key", "")
        return hmac.compare_digest(given.encode(), _serving.get().api_key.encode())

    async def gate(kind: CallKind) -> None:
        """The key, then a fault armed for this kind of call; raises Refused to answer."""
        if not authorised():
            raise Refused(answers.unauthorized())
        mode, retry_after = state.faults.take(kind)
        await answer_fault(mode, retry_after)

    async def answer_fault(mode: str, retry_after: int | None) -> None:
        """Raises Refused with the answer of an armed fault; nothing for `ok`."""
        if mode == "429":
            state.stats.throttled += 1
            raise Refused(answers.too_many(retry_after))
        if mode == "ok":
            return
        state.stats.failed += 1
        if mode == "timeout":
            await trio.sleep(HANG_SECONDS)
        raise Refused({"500": answers.server_error, "malformed": answers.malformed,
                       "reset": answers.dropped, "timeout": answers.server_error}[mode]())

    def budget(subjects: list[tuple[str, str]]) -> None:
        throttle = state.admit(clock.monotonic(), subjects)
        if isinstance(throttle, Throttle):
            # Channex's 429 names no wait (no Retry-After): the exact one stays ours to know.
            raise Refused(answers.too_many())

    async def body() -> Any:
        try:
            return json.loads(await request.get_data(as_text=True) or "null")
        except json.JSONDecodeError:
            raise Refused(answers.bad_request("body is not valid JSON")) from None  # ours

    @app.errorhandler(Refused)
    async def refused(exc: Refused) -> Response:
        return exc.answer

    @app.errorhandler(404)
    async def no_route(_: Exception) -> Response:
        return answers.not_found()

    @app.errorhandler(405)
    async def no_method(_: Exception) -> Response:
        return answers.error(405, "method_not_allowed", "Method Not Allowed")  # ours

    @app.after_request
    async def request_id(response: Response) -> Response:
        response.headers["x-request-id"] = str(uuid.uuid4())
        # A body no handler read (a control POST of `{}`): read now, before the answer. An
        # answer sent over an unread body left the next request on that keep-alive
        # connection hanging, now and then (the certification's test 11 saw it once in a
        # few runs; the service's own app drains the same way, http/app.py).
        if request.content_length or request.headers.get("Transfer-Encoding"):
            with trio.move_on_after(DRAIN_SECONDS) as waiting:
                await request.get_data(cache=False)
            if waiting.cancelled_caught:
                response.headers["Connection"] = "close"
        return response

    async def entity(kind: str) -> dict[str, Any]:
        """The body's `kind` object as sent, any JSON object: each route checks the fields
        it takes, and its answer echoes them all."""
        await gate("catalog")
        wanted = await body()
        attrs = wanted.get(kind) if isinstance(wanted, dict) else None
        if not isinstance(attrs, dict):
            raise Refused(answers.invalid({kind: ["can't be blank"]}))
        return attrs

    def required(attrs: dict[str, Any], *names: str) -> None:
        missing = {name: ["can't be blank"] for name in names if attrs.get(name) in (None, "")}
        if missing:
            raise Refused(answers.invalid(missing))

    @app.post("/api/v1/properties")
    async def create_property() -> Response:
        """`{"property": {"title", "currency", "timezone"?, "settings"?: {"min_stay_type"?}}}`."""
        attrs = await entity("property")
        required(attrs, "title", "currency")
        settings: dict[str, Any] = attrs["settings"] if isinstance(attrs.get("settings"), dict) else {}
        try:
            pid = state.create_property(str(attrs["title"]), str(attrs["currency"]), str(attrs.get("timezone") or "UTC"),
                                        str(settings.get("min_stay_type") or "arrival"))
        except KeyError:
            raise Refused(answers.invalid({"currency": ["is invalid"]})) from None
        except ValueError as exc:
            raise Refused(answers.invalid({str(exc): ["is invalid"]})) from None
        prop = state.properties[pid]
        return answers.created("property", pid, {**attrs, "timezone": prop.timezone,
                                                 "settings": {"min_stay_type": prop.min_stay_type}})

    @app.post("/api/v1/room_types")
    async def create_room_type() -> Response:
        attrs = await entity("room_type")
        required(attrs, "property_id", "title")
        rooms = attrs.get("count_of_rooms", 0)
        if isinstance(rooms, bool) or not isinstance(rooms, int) or rooms < 0:
            raise Refused(answers.invalid({"count_of_rooms": ["is invalid"]}))
        if str(attrs["property_id"]) not in state.properties:
            raise Refused(answers.invalid({"property_id": ["not found"]}))  # ours
        return answers.created("room_type", state.create_room_type(str(attrs["property_id"]), str(attrs["title"]),
                                                                   rooms), attrs)

    @app.post("/api/v1/rate_plans")
    async def create_rate_plan() -> Response:
        """`{"rate_plan": {"property_id", "room_type_id", "title", "sell_mode"?, "options"?}}`:
        `sell_mode` per_room (the default) or per_person, which needs `options`, one
        `{occupancy, is_primary, rate?}` per count of adults it sells (occupancy.py)."""
        attrs = await entity("rate_plan")
        required(attrs, "property_id", "room_type_id", "title")
        sold = sold_per_person(attrs)
        if isinstance(sold, dict):
            raise Refused(answers.invalid(sold))
        try:
            rid = state.add_rate_plan(str(attrs["property_id"]), str(attrs["room_type_id"]), str(attrs["title"]), sold)
        except KeyError:
            raise Refused(answers.invalid({"room_type_id": ["not found"]})) from None  # ours
        return answers.created("rate_plan", rid, attrs)

    async def push(kind: str) -> Response:
        await gate("write")
        wanted = await body()
        if not isinstance(wanted, dict) or "values" not in wanted:
            raise Refused(answers.invalid({"values": ["can't be blank"]}))
        values = wanted["values"]
        if not isinstance(values, list):
            raise Refused(answers.invalid({"values": ["is invalid"]}))
        properties = sorted({v["property_id"] for v in values
                             if isinstance(v, dict) and isinstance(v.get("property_id"), str)})
        budget([(kind, pid) for pid in properties])
        fault = state.take_property_fault(properties)
        if fault in ("429", "500", "timeout"):
            await answer_fault(fault, None)
        if any(state.open_pushes[pid] for pid in properties):
            state.stats.overlapping_calls += 1
        state.open_pushes.update(properties)
        state.push_opened.update(dict.fromkeys(properties, trio.current_time()))
        try:
            if state.call_seconds:
                await trio.sleep(state.call_seconds)
        finally:
            state.open_pushes.subtract(properties)
        if kind == "availability":
            state.stats.availability_calls += 1
            applied = state.apply_availability(values, clock.now(), refuse_all=fault == "refuse")
        else:
            state.stats.restriction_calls += 1
            applied = state.apply_restrictions(values, clock.now(), refuse_all=fault == "refuse")
        tasks = [{"id": applied.task_id, "type": "task"}] if applied.task_id else []
        return answers.json_answer({"data": tasks, "meta": {"message": "Success", "warnings": applied.warnings}})

    @app.post("/api/v1/availability")
    async def push_availability() -> Response:
        return await push("availability")

    @app.post("/api/v1/restrictions")
    async def push_restrictions() -> Response:
        return await push("restrictions")

    async def read(kind: str) -> Response:
        await gate("read")
        budget([("reads", "account")])
        state.stats.read_calls += 1
        pid, first, last = read_filters(request.args)
        if kind == "availability":
            return answers.json_answer({"data": state.read_availability(pid, first, last)})
        asked = [name for name in request.args.get("filter[restrictions]", "").split(",") if name]
        if not asked:
            raise Refused(answers.bad_request("restrictions is required"))
        fields = [name for name in asked if readable(name)]
        if len(fields) < len(asked):
            raise Refused(answers.bad_request("restrictions is invalid"))  # ours
        return answers.json_answer({"data": state.read_fields(pid, first, last, fields)})

    def read_filters(args: Any) -> tuple[str, date, date]:
        """filter[property_id] and filter[date] (one day) or filter[date][gte] and [lte]."""
        pid = args.get("filter[property_id]")
        if not pid:
            raise Refused(answers.bad_request("property_id is required"))  # ours, in the docs' words
        one, gte, lte = args.get("filter[date]"), args.get("filter[date][gte]"), args.get("filter[date][lte]")
        if not one and not (gte and lte):
            raise Refused(answers.bad_request("date is required"))
        try:
            first, last = (date.fromisoformat(one),) * 2 if one else (date.fromisoformat(gte), date.fromisoformat(lte))
        except ValueError:
            raise Refused(answers.bad_request("date is invalid")) from None  # ours
        if last < first:
            raise Refused(answers.bad_request("date is invalid"))  # ours
        if pid not in state.properties:
            raise Refused(answers.not_found())
        return pid, first, last

    @app.get("/api/v1/availability")
    async def read_availability() -> Response:
        return await read("availability")

    @app.get("/api/v1/restrictions")
    async def read_restrictions() -> Response:
        return await read("restrictions")

    @app.get("/api/v1/booking_revisions/feed")
    async def booking_feed() -> Response:
        """filter[property_id], order[inserted_at]=asc|desc, pagination[page] and [limit]."""
        await gate("feed")
        problems: dict[str, list[str]] = {}
        numbers = {}
        for name, default in (("page", 1), ("limit", FEED_DEFAULT_LIMIT)):
            text = request.args.get(f"pagination[{name}]", str(default))
            numbers[name] = int(text) if text.isdigit() else 0
            if numbers[name] < 1:
                problems[f"pagination[{name}]"] = ["is invalid"]
        order = request.args.get("order[inserted_at]", "asc")
        if order not in ("asc", "desc"):
            problems["order[inserted_at]"] = ["is invalid"]
        if problems:
            raise Refused(answers.invalid(problems))
        page, limit = numbers["page"], min(numbers["limit"], FEED_MAX_LIMIT)
        state.stats.feed_reads += 1
        revisions = state.bookings.feed(request.args.get("filter[property_id]"))
        if order == "desc":
            revisions = revisions[::-1]
        shown = revisions[(page - 1) * limit:page * limit]
        return answers.json_answer({"data": [{"type": "booking_revision", "id": r["id"], "attributes": r}
                                             for r in shown],
                                    "meta": {"page": page, "limit": limit, "total": len(revisions)}})

    @app.get("/api/v1/booking_revisions/<revision_id>")
    async def booking_revision(revision_id: str) -> Response:
        await gate("feed")
        found = state.bookings.revisions.get(revision_id)
        if found is None:
            return answers.not_found()
        return answers.json_answer({"data": {"type": "booking_revision", "id": revision_id, "attributes": found}})

    @app.post("/api/v1/booking_revisions/<revision_id>/ack")
    async def ack_booking_revision(revision_id: str) -> Response:
        await gate("ack")
        repeated = revision_id in state.bookings.acked
        if not state.bookings.ack(revision_id):
            return answers.not_found()
        state.stats.acks += 1
        state.stats.acks_repeated += repeated
        return answers.success()

    add_control_routes(app, state, clock, authorised, body)
    return app


class SandboxASGI:
    """One sandbox as an ASGI app: a sandbox app lent to it, answering for `served`;
    and a response marked with DROP_CONNECTION_HEADER is never sent, the connection closed
    without an answer.

    Hypercorn (0.18) answers 500 on its own when an app ends without starting a response,
    and writes a response's status line as soon as the app starts it; the one way an app
    can end an exchange with no final answer is to start an interim one (1xx) and stop:
    hypercorn writes the `100 Continue`, which HTTP clients read past while waiting for
    the answer (RFC 9110, 15.2), and, the response left unfinished, closes the
    connection. A client sees the server hang up without an answer (httpx:
    RemoteProtocolError "Server disconnected without sending a response.").
    """

    def __init__(self, app: QuartTrio, served: Served) -> None:
        self.app = app
        self.served = served

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        with serving(self.served):
            await self._call(scope, receive, send)

    async def _call(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        dropping = False

        async def send_or_drop(message: ASGISendEvent) -> None:
            nonlocal dropping
            if message["type"] == "http.response.start" and any(
                    name.lower() == DROP_CONNECTION_HEADER.encode() for name, _ in message.get("headers", ())):
                dropping = True
                interim: HTTPResponseStartEvent = {"type": "http.response.start", "status": 100, "headers": [],
                                                   "trailers": False}
                await send(interim)
            elif not dropping:
                await send(message)

        await self.app(scope, receive, send_or_drop)
