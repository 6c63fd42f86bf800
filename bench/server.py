"""The service under load: the real app with budgets lifted, plus a bare route on the same hypercorn.

Run by `bench/__main__.py` in its own process; prints one JSON line with the port and a key.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio
import trio_asyncio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve
from quart import Blueprint, Response

from connectapi.collector import tune_for_serving
from connectapi.config import Settings
from connectapi.domain import api_keys as keyfmt
from connectapi.budgets.charges import Charge, Counted
from tests.budget_ledger import BudgetLedger
from connectapi.domain.admin_models import PropertyIn
from connectapi.engine import SystemClock
from connectapi.http.app import create_app
from connectapi.tracing.asgi import traced_app
from connectapi.tracing.setup import exporting
from connectapi.http.envelope import ok
from connectapi.service import EMBEDDED_DATABASE, open_front
from connectapi.storage.embedded import ensure_database
from connectapi.storage import api_keys, properties
from connectapi.storage.database import open_database
from connectapi.storage.embedded import EmbeddedPostgres
from connectapi.storage.migrations import migrate

LIFTED = ",".join(f"{name}=1000000000" for name in
                  ("ip", "global", "requests", "property", "writes", "property-writes", "cells", "bookings",
                   "property-bookings", "property-bookings-day"))
BENCH_PLANS = 14
BARE_PATH = "/bench/bare"

bare = Blueprint("bench_bare", __name__)


@bare.get(BARE_PATH)
async def bare_route() -> Response:
    # The same envelope and a body of the same size class as GET /property, with no gates and no I/O.
    return ok({"id": 1, "name": "Casa Azul", "timezone": "Europe/Lisbon", "currency": "EUR",
               "scopes": ["ari:read"], "products": {"channelManager": True, "pms": True}, "bookingsPerMinute": 20})


async def main(port: int, dsn: str | None) -> None:
    # Webhook receivers in the bench are plain HTTP on loopback.
    settings = Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent",
                                  "CONNECTAPI_BUDGETS": os.environ.get("BENCH_BUDGETS", LIFTED),
                                  "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1",
                                  # The service's default unless a run compares another.
                                  "CONNECTAPI_CM_GATHER_MS": os.environ.get("BENCH_CM_GATHER_MS", "1000")})
    if os.environ.get("BENCH_ACTOR_IDLE"):  # the actors scenario watches idle actors go
        settings = settings.with_overrides(actor_idle_seconds=float(os.environ["BENCH_ACTOR_IDLE"]))
    async with trio_asyncio.open_loop():
        app_dsn = dsn if dsn else await ensure_database(EMBEDDED_DSN, EMBEDDED_DATABASE)
        async with open_database(app_dsn) as db:
            await migrate(db)
            clock = SystemClock()
            example = json.loads((Path(__file__).parents[1] / "docs/examples/property.json").read_text())
            touched = {**example, "ownerEmail": None}  # the plain example, for the actors scenario
            # Several plans without a rate policy, for the rates bench.
            example["ratePlans"] = [{"roomType": 0, "name": f"Plan {i}", "mealPlan": "RO"} for i in range(BENCH_PLANS)]
            body = PropertyIn.model_validate(example)
            prop, catalog = await properties.create_property(db, body, clock.now().date())
            secret = keyfmt.new_key()
            await api_keys.create_key(db, prop.id, "bench", keyfmt.digest(secret), keyfmt.display_prefix(secret),
                                      ["ari:read", "ari:write"], [])
            # The actors scenario's properties, made in the record before the service starts:
            # what it measures is touching them, not making them.
            many: list[list[Any]] = []
            limiter = trio.CapacityLimiter(8)

            async def make(i: int) -> None:
                async with limiter:
                    made, made_catalog = await properties.create_property(
                        db, PropertyIn.model_validate({**touched, "name": f"Touched {i}"}),
                        clock.now().date())
                    many_key = keyfmt.new_key()
                    await api_keys.create_key(db, made.id, "bench", keyfmt.digest(many_key),
                                              keyfmt.display_prefix(many_key), ["ari:read", "ari:write"], [])
                    many.append([made.id, many_key, made_catalog.room_types[0].id])

            async with trio.open_nursery() as makers:
                for i in range(int(os.environ.get("BENCH_PROPERTIES", "0"))):
                    makers.start_soon(make, i)
            counter = MemoryCounter() if os.environ.get("BENCH_MEMORY_BUDGETS") else None
            # Traced as `connectapi serve` is: only when an OTLP endpoint is set (bench/traces.py).
            with exporting("bench"):
                async with open_front(settings, db, clock, "bench-operator", budget_counter=counter) as ctx:
                    app = create_app(ctx)
                    app.register_blueprint(bare)
                    served = traced_app(app)
                    config = HypercornConfig()
                    config.bind = [f"127.0.0.1:{port}"]
                    config.accesslog = None
                    config.errorlog = None
                    stop = trio.Event()
                    async with trio.open_nursery() as nursery:
                        await nursery.start(lambda task_status: serve(
                            served, config, shutdown_trigger=stop.wait, task_status=task_status))
                        if not os.environ.get("BENCH_GC_DEFAULTS"):  # as `connectapi serve` does once it serves
                            tune_for_serving()
                        print(json.dumps({"port": port, "key": secret, "dsn": app_dsn, "property": prop.id,
                                          "many": many, "timezone": prop.timezone,
                                          "ratePlans": [p.id for p in catalog.rate_plans]}), flush=True)
                        if os.environ.get("BENCH_TRACEMALLOC"):
                            nursery.start_soon(_memory_diffs)
                        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                            async for _ in signals:
                                break
                        stop.set()


async def _memory_diffs() -> None:
    """BENCH_TRACEMALLOC=1: on each SIGUSR1, the allocations that grew most since the last one."""
    import tracemalloc

    tracemalloc.start(12)
    last = tracemalloc.take_snapshot()
    with trio.open_signal_receiver(signal.SIGUSR1) as signals:
        async for _ in signals:
            now = tracemalloc.take_snapshot()
            for stat in now.compare_to(last, "traceback")[:12]:
                print(f"{stat.size_diff / 1024:+.0f} KiB {stat.count_diff:+d}", file=sys.stderr)
                for line in stat.traceback.format()[-8:]:
                    print("   ", line, file=sys.stderr)
            sys.stderr.flush()
            last = now


class MemoryCounter:
    """Budgets counted in this process (`BENCH_MEMORY_BUDGETS=1`), as they were before
    issue 17: the figure `bench.scale` holds the record's shared counts against."""

    def __init__(self) -> None:
        self._ledger = BudgetLedger()

    async def charge(self, now: float | None, charges: Sequence[Charge]) -> list[Counted]:
        return self._ledger.charge(time.time() if now is None else now, charges)


EMBEDDED_DSN = ""

if __name__ == "__main__":
    chosen_port = int(sys.argv[1])
    database_url = os.environ.get("DATABASE_URL")
    embedded = None
    if not database_url:
        embedded = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="connectapi-bench-")))
        EMBEDDED_DSN = embedded.start()
    try:
        trio.run(main, chosen_port, database_url)
    finally:
        if embedded is not None:
            embedded.stop()
