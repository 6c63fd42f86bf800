from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import trio.testing

from connectapi.config import Settings
from connectapi.engine import FakeClock
from connectapi.http.app import create_app
from connectapi.service import open_front
from connectapi.storage.database import Database

from .harness import ADMIN_TOKEN, Harness

# 10:00 in Lisbon: far from midnight, so "today" is the same date in every test zone we use.
START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def settings_for(env: dict[str, str] | None = None) -> Settings:
    return Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent", **(env or {})})


@pytest.fixture
def env() -> dict[str, str]:
    """Override in a test module to change settings (budgets, trusted proxies)."""
    return {}


@pytest.fixture
async def api(db: Database, mock_clock: trio.testing.MockClock, env: dict[str, str]) -> AsyncIterator[Harness]:
    clock = FakeClock(START)
    async with open_front(settings_for(env), db, clock, ADMIN_TOKEN) as ctx:
        app = create_app(ctx)
        yield Harness(app.test_client(), ctx, mock_clock)
