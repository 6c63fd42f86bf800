from __future__ import annotations

from connectapi import __version__

from .harness import Harness


async def test_healthz(api: Harness) -> None:
    answer = await api.call("GET", "/healthz")
    assert answer.status == 200 and answer.data == {"status": "up", "version": __version__}


async def test_readyz_follows_the_record(api: Harness) -> None:
    assert (await api.call("GET", "/readyz")).status == 200
    await api.ctx.db.execute("DELETE FROM schema_migrations")
    answer = await api.call("GET", "/readyz")
    assert (answer.status, answer.code) == (503, "NOT_READY")
