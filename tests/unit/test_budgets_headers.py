from typing import Any

import http_sf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.budgets.rules import DEFAULT_LIMITS, Budgets
from connectapi.budgets.headers import SF_INTEGER_MOST, policy_header, ratelimit_header
from connectapi.budgets.window import WindowState, whole_seconds


def test_defaults_are_the_spec_limits() -> None:
    b = Budgets.from_overrides(None)
    assert {n: b.get(n).limit for n in DEFAULT_LIMITS} == {
        "ip": 240, "global": 3000, "ip-auth": 20, "requests": 120, "writes": 30, "property": 300,
        "property-writes": 60, "cells": 20000, "bookings": 20, "property-bookings": 40,
        "property-bookings-day": 500,
    }
    assert b.get("property-bookings-day").window == 86400
    assert b.get("requests").window == 60


def test_overrides() -> None:
    b = Budgets.from_overrides(" requests=1000, global=100000 ,")
    assert b.get("requests").limit == 1000 and b.get("global").limit == 100000
    assert b.get("ip").limit == 240
    for bad in ("nope=1", "requests", "requests=x", "requests=-1", "requests=3000000000"):
        with pytest.raises(ValueError):
            Budgets.from_overrides(bad)


def test_headers_parse_back_with_http_sf() -> None:
    states = [("requests", WindowState(120, 60, 3, 41.2)), ("writes", WindowState(30, 60, 30, 0.5))]
    policy = http_sf.parse(policy_header(states).encode(), tltype="list")
    assert policy == [("requests", {"q": 120, "w": 60}), ("writes", {"q": 30, "w": 60})]
    limit = http_sf.parse(ratelimit_header(states).encode(), tltype="list")
    assert limit == [("requests", {"r": 117, "t": 42}), ("writes", {"r": 0, "t": 1})]


@given(st.lists(st.tuples(st.sampled_from(sorted(DEFAULT_LIMITS)),
                          st.integers(0, SF_INTEGER_MOST), st.integers(0, SF_INTEGER_MOST),
                          st.floats(0, 1e9, allow_nan=False)), min_size=1, max_size=4))
def test_ratelimit_header_is_what_http_sf_writes(budgets: list[tuple[str, int, int, float]]) -> None:
    # The header is written without http-sf's serialiser per answer: it must be, byte for
    # byte, what that serialiser writes.
    states = [(name, WindowState(limit, 60, used, reset_after)) for name, limit, used, reset_after in budgets]
    members: list[Any] = [(name, {"r": state.remaining, "t": whole_seconds(state.reset_after)})
                          for name, state in states]
    assert ratelimit_header(states) == str(http_sf.ser(members))


def test_a_count_past_a_structured_integer_is_refused_not_written() -> None:
    with pytest.raises(ValueError):
        ratelimit_header([("requests", WindowState(SF_INTEGER_MOST + 1, 60, 0, 1.0))])
