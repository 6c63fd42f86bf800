"""RateLimit-Policy and RateLimit header values (IETF httpapi draft -10), via http-sf."""

from __future__ import annotations

from collections.abc import Sequence

import http_sf

from .sliding_window import WindowState, whole_seconds


def policy_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";q=120;w=60, "writes";q=30;w=60`"""
    members = [(name, {"q": state.limit, "w": int(state.window)}) for name, state in policies]
    return http_sf.ser(members)


def ratelimit_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";r=117;t=42`: remaining and seconds until quota starts to return."""
    members = [
        (name, {"r": state.remaining, "t": whole_seconds(state.reset_after)}) for name, state in policies
    ]
    return http_sf.ser(members)
