"""How many statements a keyed PUT /rates sends to PostgreSQL before its 202 (issue 43):
the bench's round-trip row, held here so that one more statement on the write path is
seen the day it comes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg
import pytest

from connectapi.storage.database import Database

from .harness import API, Harness


@pytest.fixture
def env() -> dict[str, str]:
    # Nothing pushes meanwhile: every statement counted is the request's.
    return {"CONNECTAPI_PUSH_PAUSED": "1"}


class Statements:
    """Every statement any connection of the pool sends while `counting` (asyncpg's query
    logger, put on each connection the first time it is taken: the budget counter's
    connection, held between requests, as well as the pool's)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.counting = False
        self._logged: list[Any] = []  # the connections under the pool's proxies, held: ids stay theirs

    def log(self, record: Any) -> None:
        if self.counting:
            self.sent.append(" ".join(record.query.split())[:60])

    def watch(self, conn: asyncpg.Connection) -> None:
        underneath = getattr(conn, "_con", conn)  # a proxy per take; the logger stays on the connection
        if all(underneath is not seen for seen in self._logged):
            self._logged.append(underneath)
            conn.add_query_logger(self.log)

    @contextmanager
    def counted(self) -> Iterator[list[str]]:
        self.sent = []
        self.counting = True
        try:
            yield self.sent
        finally:
            self.counting = False


@contextmanager
def statements_of(db: Database) -> Iterator[Statements]:
    statements = Statements()
    acquire = db._acquire  # noqa: SLF001 - the one place every connection passes through

    async def acquire_watched() -> asyncpg.Connection:
        conn = await acquire()
        statements.watch(conn)
        return conn

    db._acquire = acquire_watched  # type: ignore[method-assign]  # noqa: SLF001
    try:
        yield statements
    finally:
        db._acquire = acquire  # type: ignore[method-assign]  # noqa: SLF001


async def test_a_keyed_put_rates_makes_two_round_trips_or_fewer(api: Harness) -> None:
    with statements_of(api.ctx.db) as statements:
        prop, key = await api.keyed_property()
        plan = prop["ratePlans"][0]["id"]

        async def put(night: str, idem: str) -> list[str]:
            body = {"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night, "rate": 120,
                                 "currency": "EUR"}]}
            with statements.counted() as sent:
                answer = await api.call("PUT", f"{API}/rates", key=key, body=body, headers={"x-idempotency-key": idem})
            assert answer.status == 202, answer.body
            return sent

        # The first write of a property reads the catalog its writer checks writes against.
        first = await put("2026-12-10", "warm-the-caches-01")
        assert any(s.startswith("SELECT p.currency") for s in first), first
        sent = await put("2026-12-11", "counted-write-0001")
        # The request's budgets (one statement, or none when a slice of them is held here),
        # and the write: lock, catalog check, cells, key, batch and outcome in one statement.
        writes = [s for s in sent if "connectapi_write_cells" in s]
        assert len(writes) == 1 and len(sent) <= 2, sent  # up to 10 before issue 43
        assert all("connectapi_write_cells" in s or "connectapi_charge_budgets" in s for s in sent), sent
        # A repeat is answered from the same one statement.
        again = await put("2026-12-11", "counted-write-0001")
        assert len([s for s in again if "connectapi_write_cells" in s]) == 1 and len(again) <= 2, again
