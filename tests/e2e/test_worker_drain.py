"""A stopping worker and its keep-alive connections (`idle_drain`, http/connections.py): a
client's next request on a connection kept alive is answered, with `Connection: close`,
instead of meeting a connection closed under it; other workers on the shared socket take
the client's next connection. Without it (a single process, hypercorn's way) the
connection is closed as soon as it is idle."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from connectapi.http.serving.server import hypercorn_config, serve_http

DRAIN = 1.0


class App:
    """An ASGI app: GET /slow starts its answer at once and ends it when released; any other
    path answers at once, with `Connection: close` once stopping, as the service does."""

    def __init__(self, stop: trio.Event) -> None:
        self.stop = stop
        self.release = trio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = scope["path"].encode()
        headers = [(b"content-length", str(len(body)).encode())]
        if scope["path"] != "/slow" and self.stop.is_set():
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if scope["path"] == "/slow":
            await self.release.wait()
        await send({"type": "http.response.body", "body": body})


async def answer(stream: trio.SocketStream, seen: bytearray) -> bytes:
    """The next answer's head and body ("" when the connection closed first)."""
    while b"\r\n\r\n" not in seen:
        data = await stream.receive_some()
        if not data:
            return b""
        seen += data
    head, _, rest = bytes(seen).partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        data = await stream.receive_some()
        assert data, "closed in the middle of an answer"
        rest += data
    seen[:] = rest[length:]
    return head.lower() + b"\r\n\r\n" + rest[:length]


async def closed(stream: trio.SocketStream) -> bool:
    with trio.move_on_after(DRAIN + 2):
        try:
            return await stream.receive_some() == b""
        except trio.BrokenResourceError:
            return True
    return False


async def serving(nursery: trio.Nursery, app: App, idle_drain: float) -> trio.SocketStream:
    binds = await nursery.start(serve_http, app, hypercorn_config("127.0.0.1:0", idle_drain=idle_drain), app.stop)
    host, port = binds[0].removeprefix("http://").rsplit(":", 1)
    return await trio.open_tcp_stream(host, int(port))


@pytest.mark.parametrize("idle_drain", [DRAIN, 0.0])
async def test_an_answer_begun_before_the_stop_leaves_its_connection_open_for_the_next_request(
        idle_drain: float) -> None:
    async with trio.open_nursery() as nursery:
        app = App(trio.Event())
        stream = await serving(nursery, app, idle_drain)
        seen = bytearray()
        await stream.send_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        while b"\r\n\r\n" not in seen:  # its head is out, without `Connection: close`
            seen += await stream.receive_some()
        app.stop.set()
        await trio.sleep(0.2)  # the server is stopping: it accepts nothing more
        app.release.set()
        assert (await answer(stream, seen)).endswith(b"/slow")
        if idle_drain:
            # the client's next request, at once, as a client that saw no `Connection: close`
            await stream.send_all(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            got = await answer(stream, seen)
            assert got.startswith(b"http/1.1 200") and b"connection: close" in got, got
        assert await closed(stream)


@pytest.mark.parametrize("idle_drain", [DRAIN, 0.0])
async def test_an_idle_connection_waits_out_the_drain_for_a_request_on_its_way(idle_drain: float) -> None:
    async with trio.open_nursery() as nursery:
        app = App(trio.Event())
        stream = await serving(nursery, app, idle_drain)
        seen = bytearray()
        await stream.send_all(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"connection: close" not in await answer(stream, seen)
        app.stop.set()
        if not idle_drain:
            assert await closed(stream)  # closed at once, under a client that may be sending
            return
        await trio.sleep(DRAIN / 2)
        await stream.send_all(b"GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
        got = await answer(stream, seen)
        assert got.startswith(b"http/1.1 200") and b"connection: close" in got, got
        assert await closed(stream)
