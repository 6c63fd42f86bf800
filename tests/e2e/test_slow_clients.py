"""Clients that send slowly or hold connections: none holds a connection for long, a refusal
never waits for a body, and past the cap a connection is answered 503 and closed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio

from connectapi.config import Settings
from connectapi.engine import SystemClock
from connectapi.http.app import create_app
from connectapi.http.serving.server import hypercorn_config, serve_http
from connectapi.service import open_front
from connectapi.storage.database import Database

from .conftest import ADMIN_TOKEN

READ_LIMIT = 2.0
SEND_LIMIT = 1.0
CAP = 4
API = "/api/v1/connect-api/v1"


@pytest.fixture
async def address(db: Database) -> AsyncIterator[tuple[str, int]]:
    settings = Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent"})
    async with open_front(settings, db, SystemClock(), ADMIN_TOKEN) as ctx:
        config = hypercorn_config("127.0.0.1:0", max_connections=CAP, request_read_limit=READ_LIMIT,
                                  send_limit=SEND_LIMIT)
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(serve_http, create_app(ctx), config, ctx.stopping)
            host, port = binds[0].removeprefix("http://").split(":")
            yield host, int(port)
            ctx.stopping.set()


@pytest.fixture
async def wide_address(db: Database) -> AsyncIterator[tuple[str, int]]:
    """A cap of 50 connections in all: 10 per client."""
    settings = Settings.from_env({"CONNECTAPI_DATA_DIR": "/nonexistent"})
    async with open_front(settings, db, SystemClock(), ADMIN_TOKEN) as ctx:
        config = hypercorn_config("127.0.0.1:0", max_connections=50)
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(serve_http, create_app(ctx), config, ctx.stopping)
            host, port = binds[0].removeprefix("http://").split(":")
            yield host, int(port)
            ctx.stopping.set()


async def read_all(stream: trio.SocketStream, within: float) -> bytes:
    """What the server sends until it closes the connection (fails if it does not in time)."""
    seen = b""
    with trio.fail_after(within):
        while data := await stream.receive_some():
            seen += data
    return seen


async def test_a_request_head_trickled_a_byte_at_a_time_is_cut_off(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    head = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    started = trio.current_time()
    async with stream, trio.open_nursery() as nursery:
        async def trickle() -> None:
            try:
                for byte in head:
                    await stream.send_all(bytes([byte]))
                    await trio.sleep(0.05)  # 10 s for the head: each read is quick, the whole is not
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

        nursery.start_soon(trickle)
        try:
            answer = await read_all(stream, within=5)
        except trio.BrokenResourceError:
            # Closed while a byte of ours sat unread: the kernel answers with a reset, not
            # a FIN. Cut off all the same; when is checked below.
            answer = b""
        nursery.cancel_scope.cancel()
    # closed without an answer, about when the head's time was up (hypercorn's own idle timer
    # would have taken 5 s)
    assert b"HTTP/1.1 200" not in answer
    assert READ_LIMIT - 0.5 < trio.current_time() - started < READ_LIMIT + 1.5


async def test_a_refusal_does_not_wait_for_a_body_that_is_not_coming(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        # no key, a body announced and never sent: 401 at once, and the connection closed
        await stream.send_all((f"PUT {API}/availability HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                               "Content-Length: 5000\r\n\r\n{\"upd").encode())
        answer = await read_all(stream, within=3)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401") and b"connection: close" in head.lower(), answer
    assert json.loads(body)["data"]["code"] == "API_KEY_INVALID"


CONSOLE_LOGIN = "POST /console/login HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
FORM_COOKIE = "Cookie: connectapi_console_form=" + "f" * 43 + "\r\n"


async def console_answer(stream: trio.SocketStream, request: bytes) -> bytes:
    """The head of the console's answer to `request`, which the server must send and close
    on without the rest of the body (never sent)."""
    await stream.send_all(request)
    head, _, _ = (await read_all(stream, within=3)).partition(b"\r\n\r\n")
    return head.lower()


async def test_a_console_post_without_session_or_form_cookie_is_refused_before_its_body(
        address: tuple[str, int]) -> None:
    """No session and no form cookie: nothing in the body could pass, so none is read (the
    console read and parsed up to 1 MB of fields before looking)."""
    async with await trio.open_tcp_stream(*address) as stream:
        head = await console_answer(stream, (CONSOLE_LOGIN + "Content-Length: 60000\r\n\r\na=&a=&").encode())
    assert head.startswith(b"http/1.1 403") and b"connection: close" in head, head
    assert b"content-security-policy" in head


async def test_a_console_form_over_its_cap_is_refused_from_its_length(address: tuple[str, int]) -> None:
    async with await trio.open_tcp_stream(*address) as stream:
        head = await console_answer(stream, (CONSOLE_LOGIN + FORM_COOKIE
                                             + "Content-Length: 900000\r\n\r\na=&a=&").encode())
    assert head.startswith(b"http/1.1 413") and b"content-security-policy" in head, head


async def test_a_chunked_console_form_is_cut_off_at_its_cap(address: tuple[str, int]) -> None:
    """Sent without a length: refused once it passes 64 KB, without waiting for its end."""
    chunk = b"a=&" * 7000  # 21 KB a chunk
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4))
    async with await trio.open_tcp_stream(*address) as stream:
        head = await console_answer(stream, (CONSOLE_LOGIN + FORM_COOKIE
                                             + "Transfer-Encoding: chunked\r\n\r\n").encode() + chunks)
    assert head.startswith(b"http/1.1 413") and b"content-security-policy" in head, head


async def test_a_small_body_already_sent_keeps_the_connection(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        request = (f"PUT {API}/availability HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                   "Content-Length: 2\r\n\r\n{}").encode()
        for _ in range(2):  # the refusal reads the little body, and the connection serves again
            await stream.send_all(request)
            answer = b""
            with trio.fail_after(3):
                while b"}}" not in answer:
                    answer += await stream.receive_some()
            assert answer.startswith(b"HTTP/1.1 401") and b"connection: close" not in answer.lower()


async def test_past_the_connection_cap_a_connection_is_answered_503_and_closed(address: tuple[str, int]) -> None:
    held = [await trio.open_tcp_stream(*address) for _ in range(CAP)]
    try:
        for stream in held:  # each is open and served
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            with trio.fail_after(3):
                assert (await stream.receive_some()).startswith(b"HTTP/1.1 200")
        extra = await trio.open_tcp_stream(*address)
        async with extra:
            answer = await read_all(extra, within=3)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head.lower()
        assert json.loads(body)["data"]["code"] == "SERVICE_UNAVAILABLE"
    finally:
        for stream in held:
            await stream.aclose()
    with trio.fail_after(3):  # the slots come back as connections close
        while True:
            again = await trio.open_tcp_stream(*address)
            async with again:
                await again.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                if (await read_all(again, within=3)).startswith(b"HTTP/1.1 200"):
                    break
            await trio.sleep(0.05)


async def test_clients_that_never_read_their_answers_lose_their_connections(address: tuple[str, int]) -> None:
    """Each send of an answer is bounded: a client that asks and never reads used to hold
    its connection (and the stop) for ever, so a few of them held the whole cap."""
    pipelined = b"GET /api/v1/connect-api/openapi.json HTTP/1.1\r\nHost: test\r\n\r\n" * 200  # about 20 MB of answers
    stuck = [await trio.open_tcp_stream(*address) for _ in range(CAP)]
    try:
        for stream in stuck:
            await stream.send_all(pipelined)
        with trio.fail_after(4):  # within SEND_LIMIT, well before the 5 s keep-alive could free them
            while True:
                fresh = await trio.open_tcp_stream(*address)
                async with fresh:
                    await fresh.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                    if (await read_all(fresh, within=3)).startswith(b"HTTP/1.1 200"):
                        break
                await trio.sleep(0.2)
    finally:
        for stream in stuck:
            await stream.aclose()


async def test_a_websocket_upgrade_is_refused_without_a_fault(address: tuple[str, int],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                              b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        answer = b""
        with trio.fail_after(3):
            while b"\r\n\r\n" not in answer:
                data = await stream.receive_some()
                if not data:
                    break
                answer += data
    assert answer.startswith(b"HTTP/1.1 403"), answer
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


async def test_http2_is_not_spoken(address: tuple[str, int]) -> None:
    """An h2c upgrade or the HTTP/2 preface ends the connection: one HTTP/2 connection would
    carry a hundred streams past the caps."""
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        answer = await read_all(stream, within=3)
    assert b"HTTP/1.1 200" not in answer and len(answer) < 200, answer


async def test_one_client_cannot_take_every_connection(wide_address: tuple[str, int]) -> None:
    held = [await trio.open_tcp_stream(*wide_address, local_address="127.0.0.1") for _ in range(10)]
    try:
        for stream in held:
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            with trio.fail_after(3):
                assert (await stream.receive_some()).startswith(b"HTTP/1.1 200")
        extra = await trio.open_tcp_stream(*wide_address, local_address="127.0.0.1")
        async with extra:
            assert (await read_all(extra, within=3)).startswith(b"HTTP/1.1 503")
        other = await trio.open_tcp_stream(*wide_address, local_address="127.0.0.2")  # another client
        async with other:
            await other.send_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            assert (await read_all(other, within=3)).startswith(b"HTTP/1.1 200")
    finally:
        for stream in held:
            await stream.aclose()
