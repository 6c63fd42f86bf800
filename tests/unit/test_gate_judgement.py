"""`gates.judge`: every gate but the budgets, in the contract's order, written once for the
request whose key the process holds and for the one looked up gate by gate."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from connectapi.domain import api_keys as keyfmt
from connectapi.budgets.rules import RequestKind
from connectapi.http.api.gates import MAX_BODY_BYTES, Caller, Refused, RouteRule, judge
from connectapi.storage.records import ApiKey, KeyWithProperty, Property

AT = datetime(2026, 11, 26, tzinfo=timezone.utc)
SECRET = keyfmt.new_key()
PRESENTED = keyfmt.digest(SECRET)
PROPERTY = Property(7, "Casa Azul", "Europe/Lisbon", "EUR", channel_manager=True, pms=True, pms_entitled=True,
                    status="active", owner_email=None, bookings_per_day=None, guest_confirmation=False,
                    created_at=AT)
KEY = ApiKey(3, 7, "pms", keyfmt.display_prefix(SECRET), ("ari:read", "ari:write"), (), AT, None, None)
FOUND = KeyWithProperty(KEY, PRESENTED, PROPERTY)
WRITE_RATES = RouteRule("ari:write", "channelManager", RequestKind.WRITE)
BOOK = RouteRule("bookings:write", "pms", RequestKind.WRITE)


def code_of(verdict: Caller | Refused) -> tuple[str, str]:
    assert isinstance(verdict, Refused), verdict
    return verdict.gate, verdict.error.code


def test_a_good_caller_passes_with_its_key_property_and_address() -> None:
    verdict = judge(WRITE_RATES, 10, PRESENTED, FOUND, "203.0.113.7")
    assert verdict == Caller(KEY, PROPERTY, "203.0.113.7")


@pytest.mark.parametrize(("length", "passes"), [(None, True), (MAX_BODY_BYTES, True), (MAX_BODY_BYTES + 1, False)])
def test_the_body_size_comes_first(length: int | None, passes: bool) -> None:
    verdict = judge(WRITE_RATES, length, None, None, "203.0.113.7")  # no key either: the body is judged first
    assert code_of(verdict) == (("key", "API_KEY_INVALID") if passes else ("body", "PAYLOAD_TOO_LARGE"))


def test_no_key_an_unknown_key_and_a_digest_that_differs_are_all_invalid() -> None:
    assert code_of(judge(WRITE_RATES, None, None, FOUND, "203.0.113.7")) == ("key", "API_KEY_INVALID")
    assert code_of(judge(WRITE_RATES, None, PRESENTED, None, "203.0.113.7")) == ("key", "API_KEY_INVALID")
    other = keyfmt.digest(keyfmt.new_key())
    assert code_of(judge(WRITE_RATES, None, other, FOUND, "203.0.113.7")) == ("key", "API_KEY_INVALID")


def test_a_revoked_key_is_refused_before_its_allowlist() -> None:
    revoked = replace(FOUND, key=replace(KEY, revoked_at=AT, allowlist=("198.51.100.0/24",)))
    assert code_of(judge(WRITE_RATES, None, PRESENTED, revoked, "203.0.113.7")) == ("key", "API_KEY_REVOKED")


def test_the_allowlist_is_judged_on_the_address_and_comes_before_the_property() -> None:
    listed = replace(FOUND, key=replace(KEY, allowlist=("198.51.100.0/24",)),
                     property=replace(PROPERTY, status="suspended"))
    refused = judge(WRITE_RATES, None, PRESENTED, listed, "203.0.113.7")
    assert code_of(refused) == ("allowlist", "IP_NOT_ALLOWED")
    assert isinstance(refused, Refused) and refused.error.details == {"address": "203.0.113.7"}
    assert code_of(judge(WRITE_RATES, None, PRESENTED, listed, "198.51.100.9")) == ("property", "PROPERTY_UNAVAILABLE")


def test_property_then_product_then_scope() -> None:
    no_channel = replace(FOUND, property=replace(PROPERTY, channel_manager=False))
    assert code_of(judge(WRITE_RATES, None, PRESENTED, no_channel, "203.0.113.7")) == (
        "property", "CHANNEL_MANAGER_DISABLED")
    no_pms = replace(FOUND, property=replace(PROPERTY, pms=False))
    assert code_of(judge(BOOK, None, PRESENTED, no_pms, "203.0.113.7")) == ("property", "PMS_NOT_AVAILABLE")
    refused = judge(BOOK, None, PRESENTED, FOUND, "203.0.113.7")
    assert code_of(refused) == ("property", "SCOPE_MISSING")
    assert isinstance(refused, Refused) and refused.error.details == {
        "needed": "bookings:write", "held": ["ari:read", "ari:write"]}
    # A route any valid key may call needs no scope, nor a product.
    assert isinstance(judge(RouteRule(None, None, RequestKind.READ), None, PRESENTED, no_pms, "::1"), Caller)
