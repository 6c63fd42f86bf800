"""The owners' console against a record that is away or stuck: pages and forms answer an
HTML 503 with Retry-After (never the API's envelope, never a 500), a login the record
could not judge is not counted toward the e-mail's lockout, and with the record back
everything works. The admin owners API and PATCH /bookings/{id} answer the 503 envelope,
and a change the record failed leaves nothing half-written and no crash counted against
the property's writer; the retention janitor waits the record out.

The record is made stuck for real: another session holds a lock, and the statements of
the request wait on it. Then either the record gives up on its own (the budget function's
5 s `lock_timeout`, in real time) or the waiting session is ended, as a restarting or
dying server ends every session."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TypeVar

import pytest
import trio

from connectapi.actors.janitors import RetentionJanitor
from connectapi.domain.owners import LOCKOUT_FAILURES
from connectapi.domain.retention import Retention

from .console_visitor import Page, Visitor, logged_in, owner_with_password
from .harness import API, Answer, Harness, held_elsewhere
from .test_bookings import EVERY_SCOPE, book, stay

EMAIL, PASSWORD = "ines@example.com", "a long enough password"
T = TypeVar("T")


@asynccontextmanager
async def held(dsn: str, lock: str) -> AsyncIterator[None]:
    """Another session holding `lock` (a LOCK TABLE statement) until the block ends."""
    async with held_elsewhere(dsn, (lock, ())):
        yield


async def through_an_outage(api: Harness, waits_on: str, work: Callable[[], Awaitable[T]],
                            end: str = "pg_terminate_backend") -> T:
    """`work`'s outcome, its statements waiting on a lock (the statement's text holds
    `waits_on`) ended by the record as a server going away ends its sessions (or, with
    `end="pg_cancel_backend"`, refused as a lock or statement timeout refuses them). Ended
    until the work is done: another task of the service waiting on the same lock is ended
    too (tests have no statement timeout: a wait left alone would be for ever)."""
    done: list[T] = []

    async def run() -> None:
        done.append(await work())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        for _ in range(5000):
            if done:
                break
            await api.ctx.db.execute(
                f"""SELECT {end}(pid) FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1
                     AND pid <> pg_backend_pid()""", f"%{waits_on}%")
            await trio.sleep(0)  # the mock clock stands still: a turn for the work, no time
        else:
            nursery.cancel_scope.cancel()
            raise AssertionError(f"no answer with the record going away under it ({waits_on})")
    return done[0]


def html_unavailable(page: Page) -> None:
    assert page.status == 503, (page.status, page.text[:300])
    assert page.headers["Content-Type"].startswith("text/html"), page.headers["Content-Type"]
    assert "<html" in page.text and '"statuscode"' not in page.text
    assert page.headers["Retry-After"] == "5"
    assert page.headers["Content-Security-Policy"]  # the console's own headers, as on any page of it


@pytest.mark.slow  # every console page, each while the record refuses: about 15 s
async def test_console_pages_answer_html_while_the_record_refuses_for_now(api: Harness) -> None:
    """The budget counts wait at most 5 s for a row lock (then the record refuses, for
    now): a console page or form answered the API's JSON envelope then."""
    prop = await api.create_property()
    await owner_with_password(api, EMAIL, PASSWORD, [prop["id"]])
    visitor = await logged_in(api, EMAIL, PASSWORD)
    form = await visitor.get(f"/console/properties/{prop['id']}/keys")
    assert form.status == 200
    stranger = Visitor(api, "198.51.100.30")
    login_form = await stranger.get("/console/login")
    async with held(api.ctx.db.dsn, "LOCK TABLE budget_windows IN ACCESS EXCLUSIVE MODE"):
        html_unavailable(await visitor.get("/console/properties"))
        html_unavailable(await visitor.post(f"/console/properties/{prop['id']}/keys",
                                            {"csrf": form.csrf(), "label": "made while stuck"}))
        html_unavailable(await stranger.post("/console/login", {"csrf": login_form.csrf(), "email": EMAIL,
                                                                 "password": PASSWORD}))
    assert (await visitor.get("/console/properties")).status == 200
    keys = await visitor.get(f"/console/properties/{prop['id']}/keys")
    assert "made while stuck" not in keys.text
    await logged_in(api, EMAIL, PASSWORD, "198.51.100.30")


async def test_a_console_page_whose_record_goes_away_answers_html_503(api: Harness) -> None:
    prop = await api.create_property()
    await owner_with_password(api, EMAIL, PASSWORD, [prop["id"]])
    visitor = await logged_in(api, EMAIL, PASSWORD)
    async with held(api.ctx.db.dsn, "LOCK TABLE owner_sessions IN ACCESS EXCLUSIVE MODE"):
        html_unavailable(await through_an_outage(api, "owner_sessions", lambda: visitor.get("/console/properties")))
    assert (await visitor.get("/console/properties")).status == 200


async def test_logins_the_record_could_not_judge_do_not_lock_the_owner_out(api: Harness) -> None:
    """Each login is counted on the e-mail before its password is checked. With the owners'
    table stuck, a login was counted, then its read of the password failed (503): ten
    retries of the right password locked the owner out for 15 minutes once the record
    was back."""
    prop = await api.create_property()
    await owner_with_password(api, EMAIL, PASSWORD, [prop["id"]])
    visitor = Visitor(api)
    form = await visitor.get("/console/login")
    async with held(api.ctx.db.dsn, "LOCK TABLE owners IN ACCESS EXCLUSIVE MODE"):
        for _ in range(LOCKOUT_FAILURES):
            html_unavailable(await through_an_outage(api, "owners", lambda: visitor.post(
                "/console/login", {"csrf": form.csrf(), "email": EMAIL, "password": PASSWORD})))
    failures = await api.ctx.db.fetchval("SELECT count(*) FROM owner_login_failures")
    assert failures == 0
    await logged_in(api, EMAIL, PASSWORD)


def unavailable(answer: Answer) -> None:
    assert (answer.status, answer.code) == (503, "SERVICE_UNAVAILABLE"), (answer.status, answer.body)
    assert answer.headers["Retry-After"] == "5"


async def test_changes_the_record_fails_leave_nothing_and_the_writer_serves(api: Harness) -> None:
    """More failed changes than the writer's crash budget (6 a minute): none counts as a
    crash, so the property's writes are not taken down by an outage."""
    prop, key = await api.keyed_property(EVERY_SCOPE)
    made = await book(api, key, stay(prop))
    assert made.status == 201, made.body
    booking_id = made.data["bookingId"]
    async with held(api.ctx.db.dsn, "LOCK TABLE bookings IN ACCESS EXCLUSIVE MODE"):
        for night in range(8):
            unavailable(await through_an_outage(api, "bookings", functools.partial(
                api.call, "PATCH", f"{API}/bookings/{booking_id}", key=key,
                body={"checkOut": f"2026-12-{5 + night:02d}", "guest": {"name": "Ana Changed"}})))
    assert not api.ctx.operation.down()
    kept = await api.call("GET", f"{API}/bookings/{booking_id}", key=key)
    assert (kept.data["checkOut"], kept.data["guest"]["name"], kept.data["revision"]) == (
        "2026-12-04", "Ana Silva", 1)
    changed = await api.call("PATCH", f"{API}/bookings/{booking_id}", key=key, body={"checkOut": "2026-12-05"})
    assert (changed.status, changed.data["checkOut"], changed.data["revision"]) == (200, "2026-12-05", 2)


async def test_the_admin_owners_api_answers_503_while_the_record_goes_away(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.admin("POST", "/owners", {"email": EMAIL, "name": "Ines", "propertyIds": [prop["id"]]})
    assert made.status == 201, made.body
    owner = made.data["ownerId"]
    async with held(api.ctx.db.dsn, "LOCK TABLE owners IN ACCESS EXCLUSIVE MODE"):
        for method, path, body in (("GET", "/owners", None), ("GET", f"/owners/{owner}", None),
                                   ("POST", "/owners", {"email": "other@example.com", "name": "O",
                                                        "propertyIds": [prop["id"]]}),
                                   ("PATCH", f"/owners/{owner}", {"name": "Renamed", "propertyIds": []}),
                                   ("POST", f"/owners/{owner}/reset", None), ("DELETE", f"/owners/{owner}", None)):
            unavailable(await through_an_outage(api, "owners", functools.partial(api.admin, method, path, body)))
    listed = await api.admin("GET", "/owners")
    assert [(o["email"], o["name"], o["propertyIds"]) for o in listed.data] == [(EMAIL, "Ines", [prop["id"]])]


@pytest.mark.parametrize("end", ["pg_terminate_backend", "pg_cancel_backend"])
async def test_the_retention_janitor_waits_out_a_record_that_goes_away(api: Harness, end: str) -> None:
    """A round the record fails, or refuses for now (its statement cancelled, as a lock or
    statement timeout cancels it: a crash until now), is no crash: the janitor tries again
    within seconds, and prunes once the record is back."""
    prop = await api.create_property()
    db = api.ctx.db
    await db.execute(
        """INSERT INTO write_batches (id, property_id, resource, created_at, requested_cells, accepted_cells,
                                      noop_cells)
           SELECT gen_random_uuid(), $1, 'availability', $2, 1, 0, 1 FROM generate_series(1, 3)""",
        prop["id"], api.ctx.clock.now() - timedelta(days=31))
    # Made 31 days ago, not by moving the clock on: that would wake the service's own
    # janitor too, whose statement could be the one ended here while this one waits on.
    janitor = RetentionJanitor(db, api.ctx.clock, Retention(), every=3600)
    async with held(db.dsn, "LOCK TABLE write_batches IN ACCESS EXCLUSIVE MODE"):
        await through_an_outage(api, "write_batches", janitor.run_round, end)  # raises if it is a crash
        assert 0 < janitor.wake_in() <= RetentionJanitor.outage_wait_max
    await janitor.run_round()
    assert await db.fetchval("SELECT count(*) FROM write_batches") == 0
    assert janitor.wake_in() == 3600
