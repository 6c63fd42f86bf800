"""Codecs for PostgreSQL's built-in array types, asked of the server once per process.

asyncpg has a codec for each built-in scalar type, but builds the codec of an array type
(`bigint[]`, `date[]`, ...) only after asking the server what the type is, with a recursive
catalog query, on each new connection whose statement first uses one. On a new backend
that query is planned with a cold catalog cache: about 20 ms of the server's CPU a
connection on two cores, and a quarter of the server's statement time in the tests, which
open pools by the hundred (decision 0147). A built-in type's oid and shape are fixed by PostgreSQL's own
catalog (pg_type.dat), so what one connection was told holds for every other: the first
connection of a process asks for all of them in one query, and each later one is handed
the answer.

This reaches into asyncpg's connection (`_introspect_types`, the protocol's settings),
which pyproject pins to one minor version; tests/record/test_builtin_arrays.py fails if a
new connection asks again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import asyncpg

# The built-in array types our statements send or read (name for the reader, oid as fixed in
# pg_type.dat). text[] and oid[] are left out: asyncpg has codecs of its own for them.
ARRAY_OIDS = {
    "boolean[]": 1000,
    "smallint[]": 1005,
    "integer[]": 1007,
    "bigint[]": 1016,
    "double precision[]": 1022,
    "date[]": 1182,
    "timestamp with time zone[]": 1185,
    "numeric[]": 1231,
    "uuid[]": 2951,
}

log = logging.getLogger(__name__)
_told: list[Sequence[Any]] = []  # the server's answer, once asked: its rows


async def teach(conn: asyncpg.Connection) -> None:
    """Give `conn` the codecs of the built-in array types, asking the server only the first
    time in this process. A connection whose asyncpg lacks the parts used here, or has them
    in another shape, is left to ask for itself, as asyncpg does."""
    try:
        if not _told:
            rows, _ = await conn._introspect_types(list(ARRAY_OIDS.values()), None)
            _told.append(list(rows))
        conn._protocol.get_settings().register_data_types(_told[0])
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        # asyncpg's parts gone or changed shape (an upgrade past the pin): the connection
        # asks for itself, as it would have; tests/record/test_builtin_arrays.py says so.
        log.warning("built-in array codecs not handed to the connection: %s", type(exc).__name__)
