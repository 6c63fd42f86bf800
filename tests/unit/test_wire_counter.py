"""The bench's count of round trips to PostgreSQL (bench/round_trips.py) reads the
frontend protocol right: what it counts is what the report's row says."""

from __future__ import annotations

import struct

from bench.round_trips import FrontendMessages


def message(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!I", 4 + len(body)) + body


def untyped(code: int, body: bytes = b"") -> bytes:
    return struct.pack("!II", 8 + len(body), code) + body


def test_statements_are_counted_by_what_the_client_waits_on_however_the_bytes_arrive() -> None:
    startup = untyped(80877103) + untyped(196608, b"user\0postgres\0\0")
    # A prepared statement new to the connection (Parse, Describe, Flush: answered), then
    # bound and run (Bind, Execute, Sync); a simple query; a password message (not counted).
    conversation = (startup + message(b"p", b"secret\0")
                    + message(b"P", b"\0SELECT 1\0\0\0") + message(b"D", b"S\0") + message(b"H")
                    + message(b"B", b"\0\0" + bytes(6)) + message(b"E", b"\0" + bytes(4)) + message(b"S")
                    + message(b"Q", b"BEGIN\0"))
    whole = FrontendMessages()
    assert whole.feed(conversation) == 3
    bytewise = FrontendMessages()
    assert sum(bytewise.feed(conversation[i:i + 1]) for i in range(len(conversation))) == 3
    # A Sync whose length says 'S' in its body is one message, not two.
    assert FrontendMessages().feed(startup + message(b"d", b"SSSS") + message(b"S")) == 1
