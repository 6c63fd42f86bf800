"""The public-address list: every refusal names its range, and an IPv4 address is judged
the same in each IPv6 form that carries it; numeric hosts are plain dotted quads or refused."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectapi.domain.public_addresses import NOT_PUBLIC_V4, NOT_PUBLIC_V6, carried_ipv4, is_public, why_not_public
from connectapi.domain.webhook_urls import UnsafeUrl, check_url

V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address


def wrapped(inner: V4) -> dict[str, V6]:
    """The IPv6 forms that carry `inner`, by name."""
    n = int(inner)
    return {"mapped": V6(0xFFFF << 32 | n), "compatible": V6(n), "nat64": V6(0x64FF9B << 96 | n),
            "6to4": V6(0x2002 << 112 | n << 80 | 1)}


def inside(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> st.SearchStrategy[int]:
    return st.integers(int(network.network_address), int(network.broadcast_address))


not_public_v4 = st.sampled_from(NOT_PUBLIC_V4).flatmap(lambda entry: inside(entry[0]).map(V4))
any_v4 = st.integers(0, 2**32 - 1).map(V4)


@pytest.mark.parametrize(("address", "why"), [
    ("10.0.0.1", "private"), ("127.0.0.1", "loopback"), ("169.254.169.254", "link-local"),
    ("100.64.0.1", "shared (carrier-grade NAT)"), ("240.0.0.1", "reserved"), ("224.0.0.1", "multicast"),
    ("::ffff:10.0.0.1", "private (10.0.0.1) in an IPv6 form"), ("::127.0.0.1", "loopback (127.0.0.1) in an IPv6 form"),
    ("64:ff9b::a9fe:a9fe", "link-local (169.254.169.254) in an IPv6 form"),
    ("2002:c0a8:101::1", "private (192.168.1.1) in an IPv6 form"),
    ("64:ff9b:1::808:808", "local-use NAT64"), ("2001::1", "IETF protocol assignments"),
    ("fec0::1", "site-local"), ("fd00::1", "unique local"), ("fe80::1", "link-local"), ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"), ("4000::1", "outside global unicast"),
])
def test_a_refusal_names_the_range(address: str, why: str) -> None:
    assert why_not_public(ipaddress.ip_address(address)) == why


@given(not_public_v4)
def test_a_non_public_ipv4_address_is_not_public_in_any_ipv6_form(address: V4) -> None:
    assert not is_public(address)
    for form, carried in wrapped(address).items():
        assert carried_ipv4(carried) == address, form
        assert not is_public(carried), form


@given(any_v4)
def test_an_ipv4_address_is_judged_alike_in_every_form(address: V4) -> None:
    for form, carried in wrapped(address).items():
        assert is_public(carried) == is_public(address), form


@given(st.sampled_from(NOT_PUBLIC_V6).flatmap(lambda entry: inside(entry[0]).map(V6)))
def test_the_named_ipv6_ranges_are_not_public_whatever_the_host_bits(address: V6) -> None:
    assert not is_public(address)


def odd_spellings(address: V4) -> list[str]:
    """How inet_aton (and a WHATWG URL parser) would also read `address`."""
    a, b, c, d = address.packed
    n = int(address)
    return [str(n), hex(n), f"{a}.{b << 16 | c << 8 | d}", f"{a}.{b}.{c << 8 | d}", f"0{a:o}.{b}.{c}.{d}",
            f"{hex(a)}.{b}.{c}.{d}", f"{a}.{b}.{c}.0{d:o}" if d else f"{a}.{b}.{c}.00"]


@given(any_v4, st.booleans())
def test_a_numeric_host_not_written_as_a_plain_dotted_quad_is_refused(address: V4, allow_private: bool) -> None:
    for host in odd_spellings(address):
        with pytest.raises(UnsafeUrl, match="numeric host"):
            check_url(f"https://{host}/in", allow_private)
