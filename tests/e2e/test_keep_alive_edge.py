"""A request sent on a keep-alive connection just as its idle time runs out, before the
server's read loop was done with it, is answered: the connection is not closed under it.

A client that keeps idle connections as long as the service does (httpx's default, 5 s)
sends such requests now and then; on a busy server, whose loop runs a due timer and a ready
read in either order, some of them met a closed connection and got no answer. Here the
clock jumps past the keep-alive time with a request sent, many times over (trio runs a
batch of ready tasks in either order), in two ways: sent with no checkpoint before the jump
(the bytes wait in the server's socket, unread), and sent through trio (the server's read
loop has parsed it, but not yet stopped the timer, when the timer runs)."""

from __future__ import annotations

import socket
from collections.abc import MutableMapping
from typing import Any

import trio
import trio.testing

from connectapi.http.serving.server import hypercorn_config, serve_http

REQUEST = b"GET /ping HTTP/1.1\r\nHost: test\r\n\r\n"
TRIES = 20


async def ping_app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]})
    await send({"type": "http.response.body", "body": b"pong"})


async def answer_of(stream: trio.SocketStream) -> bytes:
    seen = b""
    while not seen.endswith(b"pong"):
        try:
            data = await stream.receive_some()
        except trio.BrokenResourceError:
            return seen  # reset: no answer
        if not data:
            return seen  # closed: no answer
        seen += data
    return seen


async def test_a_request_sent_as_the_keep_alive_time_runs_out_is_answered(mock_clock: trio.testing.MockClock) -> None:
    config = hypercorn_config("127.0.0.1:0")
    stop = trio.Event()
    answered = 0
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve_http, ping_app, config, stop)
        host, port = binds[0].removeprefix("http://").split(":")
        for attempt in range(TRIES):
            plain = socket.create_connection((host, int(port)))  # the listener's backlog takes it
            plain.setblocking(False)
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(plain))
            async with stream:
                await stream.send_all(REQUEST)
                assert (await answer_of(stream)).startswith(b"HTTP/1.1 200")
                await trio.testing.wait_all_tasks_blocked()  # the connection idle, its timer running
                if attempt % 2:
                    await stream.send_all(REQUEST)  # a checkpoint: the read loop may take it first
                else:
                    assert plain.send(REQUEST) == len(REQUEST)  # no checkpoint: unread at the jump
                mock_clock.jump(config.keep_alive_timeout + 0.5)
                if (await answer_of(stream)).startswith(b"HTTP/1.1 200"):
                    answered += 1
        # An idle connection is still closed after its keep-alive time.
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(REQUEST)
            assert (await answer_of(stream)).startswith(b"HTTP/1.1 200")
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(config.keep_alive_timeout + 0.5)
            assert await answer_of(stream) == b""
        stop.set()
    assert answered == TRIES
