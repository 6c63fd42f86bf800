"""RateLimit-Policy and RateLimit header values (IETF httpapi draft -10), via http-sf."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import http_sf

from .window import WindowState, whole_seconds

# RFC 8941, 3.3.1: the largest magnitude a structured-field Integer may have.
SF_INTEGER_MOST = 999_999_999_999_999


def policy_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";q=120;w=60, "writes";q=30;w=60`"""
    return _policy_text(tuple((name, state.limit, int(state.window)) for name, state in policies))


@lru_cache(maxsize=64)
def _policy_text(policies: tuple[tuple[str, int, int], ...]) -> str:
    # The same few policies on every answer: serialise each once.
    members: list[Any] = [(name, {"q": limit, "w": window}) for name, limit, window in policies]
    return str(http_sf.ser(members))


def ratelimit_header(policies: Sequence[tuple[str, WindowState]]) -> str:
    """`"requests";r=117;t=42`: remaining and seconds until quota starts to return.

    Its remaining units change with every request, so a cache of whole values missed on
    nearly every answer and http-sf serialised it each time (most of what the header
    cost): the budget's name is serialised by http-sf once, and its two parameters, which
    are Integers, are written as RFC 8941 writes one (4.1.4: the decimal digits).
    """
    return ", ".join(f"{_member(name)};r={_sf_integer(state.remaining)};t={_sf_integer(whole_seconds(state.reset_after))}"
                     for name, state in policies)


@lru_cache(maxsize=64)
def _member(name: str) -> str:
    return str(http_sf.ser([(name, {})]))


def _sf_integer(value: int) -> str:
    if not -SF_INTEGER_MOST <= value <= SF_INTEGER_MOST:
        raise ValueError(f"{value} is out of a structured-field Integer's range")
    return str(value)
