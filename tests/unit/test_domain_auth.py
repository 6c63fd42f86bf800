import pytest

from connectapi.domain import api_keys, scopes
from connectapi.domain.addresses import Allowlist, TrustedProxies, normalise_allowlist


def test_new_keys_have_the_live_shape_and_differ() -> None:
    a, b = api_keys.new_key(), api_keys.new_key()
    assert a != b
    for key in (a, b):
        assert key.startswith("cak_live_") and len(key) == len("cak_live_") + 43
        assert api_keys.is_well_formed(key)
        assert len(api_keys.digest(key)) == 32


def test_test_keys_have_the_test_prefix_and_the_same_shape() -> None:
    key = api_keys.new_key("test")
    assert key.startswith("cak_test_") and len(key) == len(api_keys.new_key())
    assert api_keys.is_well_formed(key) and api_keys.mode_of(key) == "test"
    assert api_keys.mode_of(api_keys.new_key()) == "live" and api_keys.mode_of("nonsense") == "live"


@pytest.mark.parametrize("bad", ["", "cak_live_", "cak_demo_" + "a" * 43, "cak_test_" + "a" * 42, "cak_live_" + "a" * 42,
                                 "cak_live_" + "a" * 44, "cak_live_" + "a" * 42 + "=", " cak_live_" + "a" * 43])
def test_malformed_keys(bad: str) -> None:
    assert not api_keys.is_well_formed(bad)


@pytest.mark.parametrize(("header", "token"), [
    (None, None), ("", None), ("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None),
    ("Bearer", None), ("abc", None),
])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert api_keys.bearer_token(header) == token


def test_scope_rules() -> None:
    assert scopes.scope_problems(["ari:read", "bookings:write", "bookings:payments"]) == []
    assert scopes.scope_problems(["bookings:payments"]) == ["bookings:payments needs bookings:write"]
    assert scopes.scope_problems(["ari:read", "ari:read"]) == ["scopes repeat"]
    assert "unknown" in scopes.scope_problems(["admin"])[0]
    assert scopes.canonical(["bookings:read", "ari:write"]) == ["ari:write", "bookings:read"]


def test_allowlist_ipv4_ipv6_and_cidr() -> None:
    allow = Allowlist(normalise_allowlist(["203.0.113.0/24", "2001:db8::/32", "198.51.100.9"]))
    assert allow.allows("203.0.113.77")
    assert allow.allows("::ffff:203.0.113.77")  # IPv4-mapped IPv6 is the IPv4 address
    assert allow.allows("2001:db8:1::5")
    assert allow.allows("198.51.100.9")
    assert not allow.allows("198.51.100.10")
    assert not allow.allows("2001:db9::1")
    assert not allow.allows("garbage")
    assert Allowlist([]).allows("192.0.2.1")


def test_normalised_allowlist() -> None:
    assert normalise_allowlist(["10.1.2.3/8", "::1", "10.0.0.0/8", "2001:DB8::1"]) == ["10.0.0.0/8", "::1", "2001:db8::1"]
    with pytest.raises(ValueError):
        normalise_allowlist(["10.0.0.300"])
    with pytest.raises(ValueError):
        normalise_allowlist([f"10.0.0.{i}" for i in range(21)])


def test_forwarded_for_only_from_trusted_peers() -> None:
    proxies = TrustedProxies(["10.0.0.0/8", "fd00::/8"])
    # untrusted peer: the header is ignored
    assert proxies.client_address("198.51.100.7", "203.0.113.5") == "198.51.100.7"
    # trusted peer: the rightmost hop that is not one of ours
    assert proxies.client_address("10.0.0.2", "203.0.113.5") == "203.0.113.5"
    assert proxies.client_address("10.0.0.2", "1.2.3.4, 203.0.113.5, 10.0.0.9") == "203.0.113.5"
    assert proxies.client_address("fd00::1", "2001:db8::7") == "2001:db8::7"
    # a garbled hop: stop trusting the chain there
    assert proxies.client_address("10.0.0.2", "203.0.113.5, nonsense") == "10.0.0.2"
    # all hops are ours: the leftmost is as far as we can see
    assert proxies.client_address("10.0.0.2", "10.0.0.7, 10.0.0.8") == "10.0.0.7"
    assert proxies.client_address("10.0.0.2", None) == "10.0.0.2"
    assert TrustedProxies([]).client_address("10.0.0.2", "203.0.113.5") == "10.0.0.2"
