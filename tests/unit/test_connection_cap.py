"""The connection guard's cap, and the hypercorn it was written for."""

from __future__ import annotations

import resource

import pytest
from hypercorn.trio.tcp_server import TCPServer

from connectapi.http.serving.connections import RESERVED_FILES, WRITTEN_FOR, check_hypercorn, connection_cap


def test_the_cap_leaves_files_for_everything_else() -> None:
    assert connection_cap(50) == 50
    capped = connection_cap(10**7)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)  # raised to the hard limit by the call
    if soft != resource.RLIM_INFINITY:
        assert capped <= max(soft - RESERVED_FILES, 10)
    assert capped >= 10


def test_the_guard_serves_over_the_hypercorn_it_was_written_for_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """http/serving/connections.py overrides hypercorn's private methods: another release is refused
    at start, said, rather than served by a guard that no longer guards."""
    check_hypercorn()  # the installed, pinned one
    check_hypercorn(WRITTEN_FOR + ".7")
    for other in ("0.19.0", "0.17.2", "1.0"):
        with pytest.raises(RuntimeError, match=f"hypercorn {other} is installed"):
            check_hypercorn(other)
    monkeypatch.delattr(TCPServer, "_idle_timeout")
    with pytest.raises(RuntimeError, match="TCPServer._idle_timeout"):
        check_hypercorn()
