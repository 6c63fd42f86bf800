"""The request body as bytes, read once, within Quart's size limit (413 past it)."""

from __future__ import annotations

from quart import request


async def raw_body() -> bytes:
    data = await request.get_data(cache=False, as_text=False)
    return data if isinstance(data, bytes) else data.encode()
