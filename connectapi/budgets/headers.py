"""RateLimit-Policy and RateLimit header values (IETF httpapi draft -10), via http-sf."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import http_sf

from .window import WindowState, whole_seconds


def policy_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";q=120;w=60, "writes";q=30;w=60`"""
    return _policy_text(tuple((name, state.limit, int(state.window)) for name, state in policies))


@lru_cache(maxsize=64)
def _policy_text(policies: tuple[tuple[str, int, int], ...]) -> str:
    # The same few policies on every answer: serialise each once.
    members: list[Any] = [(name, {"q": limit, "w": window}) for name, limit, window in policies]
    return str(http_sf.ser(members))


def ratelimit_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";r=117;t=42`: remaining and seconds until quota starts to return."""
    return _ratelimit_text(tuple((name, state.remaining, whole_seconds(state.reset_after))
                                 for name, state in policies))


@lru_cache(maxsize=4096)
def _ratelimit_text(states: tuple[tuple[str, int, int], ...]) -> str:
    # Every answer carries one, and a key's remaining units and whole seconds repeat from
    # window to window: serialised once each (http-sf's checks cost more than the lookup).
    members: list[Any] = [(name, {"r": remaining, "t": seconds}) for name, remaining, seconds in states]
    return str(http_sf.ser(members))
