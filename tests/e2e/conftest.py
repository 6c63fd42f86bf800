from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from connectapi.config import Settings
from connectapi.engine import SystemClock
from connectapi.http.app import create_app
from connectapi.http.api.gates import CONNECT_PREFIX
from connectapi.http.serving.server import hypercorn_config, serve_http
from connectapi.service import open_front
from connectapi.storage.database import Database

from tests.api.probe import probe

from .sandbox_served import Sandbox, served_sandbox

ADMIN_TOKEN = "e2e-operator-token"


@pytest.fixture
async def base_url(db: Database) -> AsyncIterator[str]:
    """The whole service on hypercorn, on a free loopback port."""
    settings = Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent"})
    async with open_front(settings, db, SystemClock(), ADMIN_TOKEN) as ctx:
        app = create_app(ctx)
        app.register_blueprint(probe, url_prefix=CONNECT_PREFIX)
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(serve_http, app, hypercorn_config("127.0.0.1:0"), ctx.stopping)
            yield binds[0]
            ctx.stopping.set()


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        yield http


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    """The sandbox channel manager on loopback, a property made in it (sandbox_served.py)."""
    async with served_sandbox() as served:
        yield served
