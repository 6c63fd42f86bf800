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


@contextmanager
def statements_sent(db: Database) -> Iterator[list[str]]:
    """Every statement any connection of the pool sends while the block runs (asyncpg's
    query logger, on each connection as it is acquired)."""
    sent: list[str] = []
    acquire = db._acquire  # noqa: SLF001 - the one place every connection passes through

    def logged(record: Any) -> None:
        sent.append(" ".join(record.query.split())[:80])

    async def acquire_logged() -> asyncpg.Connection:
        conn = await acquire()
        conn.add_query_logger(logged)
        return conn

    db._acquire = acquire_logged  # type: ignore[method-assign]  # noqa: SLF001
    try:
        yield sent
    finally:
        db._acquire = acquire  # type: ignore[method-assign]  # noqa: SLF001


async def test_a_keyed_put_rates_sends_no_statement_it_does_not_need(api: Harness) -> None:
    prop, key = await api.keyed_property()
    plan = prop["ratePlans"][0]["id"]

    async def put(night: str, idem: str) -> list[str]:
        body = {"updates": [{"ratePlanId": plan, "dateFrom": night, "dateTo": night, "rate": 120, "currency": "EUR"}]}
        with statements_sent(api.ctx.db) as sent:
            answer = await api.call("PUT", f"{API}/rates", key=key, body=body, headers={"x-idempotency-key": idem})
        assert answer.status == 202, answer.body
        return sent

    await put("2026-12-10", "warm-the-caches-01")
    sent = await put("2026-12-11", "counted-write-0001")
    # The claim is one statement, committed on its own (a twin elsewhere sees it in flight);
    # the write one transaction that records the outcome under the key; nothing after its
    # commit (an answered request releases nothing). The budgets' one statement goes on a
    # connection of its own (connectapi/budgets/batcher.py) and is not counted here.
    assert sent[0].startswith("INSERT INTO idempotency_keys"), sent
    assert sent[1] == "BEGIN;" and sent[-1] == "COMMIT;", sent
    assert sent[-2].startswith("UPDATE idempotency_keys SET state = 'done'"), sent
    assert len(sent) <= 8, sent  # 11 before issue 43: a claim of four, a release after the commit
    # A repeat of it is answered from the claim's statement and a fresh read of the key.
    assert len(await put("2026-12-11", "counted-write-0001")) == 2
