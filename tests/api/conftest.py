from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio.testing
from quart_trio import QuartTrio
from argon2 import PasswordHasher

from connectapi.actors.webhook_sender import Resolver, resolve
from connectapi.config import Settings
from connectapi.engine import FakeClock
from connectapi.http.app import create_app
from connectapi.http.context import FrontContext
from connectapi.http.console import auth as console_auth
from connectapi.service import open_service
from connectapi.storage.database import Database

from connectapi.http.api.gates import CONNECT_PREFIX

from .harness import ADMIN_TOKEN, Harness
from .webhook_receiver import Receiver
from .probe import probe

# 10:00 in Lisbon: far from midnight, so "today" is the same date in every test zone we use.
START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def settings_for(env: dict[str, str] | None = None) -> Settings:
    """Pushes to the (in-process sandbox) channel manager are held unless a test lets them run:
    most API tests look at the record and its batches before any push.

    No shutdown grace: it is counted on the mock clock, which stands still, so an actor caught
    mid-backoff when a test ends (say, after a failed assertion) would hold the end forever."""
    return Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent", "CONNECTAPI_PUSH_PAUSED": "1",
                              "CONNECTAPI_RECONCILE": "off",
                              # Pushers call at once: a test that looks at gathering sets it.
                              "CONNECTAPI_CM_GATHER_MS": "0", **(env or {})}, shutdown_grace_seconds=0.0)


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 at the service's cost (64 MiB and three passes a hash, on purpose) was the
    console tests' largest cost; what they check is what is done with a hash, not what one
    costs. One pass over 1 MiB here; tests/unit/test_password_cost.py holds the service's
    own parameters, and the browser and e2e tests run the service as it is."""
    monkeypatch.setattr(console_auth, "HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))


@pytest.fixture
def env() -> dict[str, str]:
    """Override in a test module to change settings (budgets, trusted proxies)."""
    return {}


def run_on_mock_clock(fn: Any, clock: Any = None, instruments: Any = ()) -> Any:
    """Every API test runs on a MockClock that stands still until the test jumps it."""
    return trio.run(fn, clock=clock or trio.testing.MockClock(), instruments=instruments)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = str(Path(__file__).parent)
    for item in items:
        if (str(item.path).startswith(here) and isinstance(item, pytest.Function)
                and inspect.iscoroutinefunction(item.obj)):
            item.add_marker(pytest.mark.trio(run=run_on_mock_clock), append=False)


@pytest.fixture
def db_dsn(db: Database) -> str:
    return db.dsn


@asynccontextmanager
async def open_harness(db: Database, env: dict[str, str] | None = None,
                       resolver: Resolver = resolve) -> AsyncIterator[Harness]:
    """The whole front over `db`; run it on a MockClock (trio.run(..., clock=MockClock()))."""
    mock_clock = trio.lowlevel.current_clock()
    assert isinstance(mock_clock, trio.testing.MockClock), "API tests run on the mock clock"
    clock = FakeClock(START)
    async with open_service(settings_for(env), db, clock, ADMIN_TOKEN, resolver) as assembled:
        with _app_for(assembled.front) as app:
            yield Harness(app.test_client(), assembled.front, mock_clock, assembled.handles)


_spare_app: list[QuartTrio] = []


@contextmanager
def _app_for(ctx: FrontContext) -> Iterator[QuartTrio]:
    """The app over `ctx`. Built once per test process and handed each harness's context
    in turn: what it holds besides the context (routes, handlers) is the same for every
    test, and building it (werkzeug compiles every route) was a fifth of an API test's
    cost. A second harness open at the same time gets an app of its own."""
    if _spare_app:
        app = _spare_app.pop()
        app.config["CONNECTAPI"] = ctx
    else:
        app = create_app(ctx)
        app.register_blueprint(probe, url_prefix=CONNECT_PREFIX)
    try:
        yield app
    finally:
        _spare_app.append(app)


# The contract's own tests, run with live keys and again with test keys: a test key works
# on every route exactly as a live one does (issue 29). Their test-key run is marked
# `second_mode`: make test runs it with the quick tests, make check leaves it out.
BOTH_MODES = {"test_ari", "test_ari_model", "test_auth", "test_bookings", "test_booking_modify", "test_idempotency",
              "test_budgets", "test_hostile_input", "test_request_handling", "test_prices_per_occupancy"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if ("api" in metafunc.fixturenames and metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_MODES
            and metafunc.definition.get_closest_marker("live_only") is None):
        metafunc.parametrize("key_mode", ["live", pytest.param("test", marks=pytest.mark.second_mode)])


@pytest.fixture
def key_mode() -> str:
    return "live"


@pytest.fixture
async def api(db: Database, env: dict[str, str], key_mode: str) -> AsyncIterator[Harness]:
    async with open_harness(db, env) as harness:
        harness.key_mode = key_mode
        yield harness


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, found.handle, 0, host="127.0.0.1"))
        found.port = listeners[0].socket.getsockname()[1]
        yield found
        nursery.cancel_scope.cancel()
