"""The request body as bytes, read once, within Quart's size limit (413 past it)."""

from __future__ import annotations

from quart import g, request


async def raw_body() -> bytes:
    data = await request.get_data(cache=False, as_text=False)
    g.body_read = True  # nothing is left for the answer's drain (app.py) to read
    return data if isinstance(data, bytes) else data.encode()
