"""Which addresses are public, for webhook sends: an explicit list of ranges refused.

Not `ipaddress.is_global`: what it answers changes between Python releases (3.11 calls
`::127.0.0.1`, `fec0::1` and `64:ff9b:1::a00:1` global) and it does not look inside an
IPv6 form that carries an IPv4 address. Here every range is named, so a refusal says
which one, and an IPv4 carried in an IPv6 form is judged as the IPv4 it is.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# The IANA IPv4 special-purpose registry, multicast and the reserved block. Ranges the
# registry marks globally reachable (192.0.0.9, AS112, AMT, the 6to4 relays) are refused
# too: a webhook receiver never lives there.
NOT_PUBLIC_V4: tuple[tuple[_V4, str], ...] = (
    (_V4("0.0.0.0/8"), "this network"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared (carrier-grade NAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignments"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.31.196.0/24"), "AS112"),
    (_V4("192.52.193.0/24"), "AMT"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),  # 255.255.255.255 included
)

# Forms that carry an IPv4 address in their last 32 bits (6to4 carries it in bits 16-47):
# judged by that IPv4.
_MAPPED = _V6("::ffff:0:0/96")
_COMPATIBLE = _V6("::/96")  # deprecated (RFC 4291); `::` and `::1` fall in it and unwrap to 0.0.0.0/8
_NAT64 = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")

# Not public, named; and outside 2000::/3, where IANA hands out no unicast space, nothing is.
GLOBAL_UNICAST = _V6("2000::/3")
NOT_PUBLIC_V6: tuple[tuple[_V6, str], ...] = (
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),  # RFC 8215: never routed beyond a site, whatever it wraps
    (_V6("100::/64"), "discard-only"),
    (_V6("2001::/23"), "IETF protocol assignments"),  # Teredo 2001::/32, benchmarking, ORCHID
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("5f00::/16"), "SRv6 segment identifiers"),
    (_V6("fc00::/7"), "unique local"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)


def carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96) or 6to4
    address stands for; None for any other IPv6 address."""
    if address in _MAPPED or address in _COMPATIBLE or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    return None


def why_not_public(address: Address) -> str | None:
    """The kind of range that keeps `address` from being public ("loopback", "private"
    carried in NAT64, …), or None when it is public."""
    if isinstance(address, ipaddress.IPv4Address):
        return next((why for network, why in NOT_PUBLIC_V4 if address in network), None)
    inner = carried_ipv4(address)
    if inner is not None:
        why = why_not_public(inner)
        return None if why is None else f"{why} ({inner}) in an IPv6 form"
    named = next((why for network, why in NOT_PUBLIC_V6 if address in network), None)
    if named is None and address not in GLOBAL_UNICAST:
        return "outside global unicast"
    return named


def is_public(address: Address) -> bool:
    return why_not_public(address) is None


# Where a test endpoint may also be (issue 45): an integrator's own machine or network,
# reached with test data only. Link-local (cloud metadata services live there), the
# carrier-grade NAT and every other range stay refused.
TEST_REACH_V4: tuple[_V4, ...] = (_V4("127.0.0.0/8"), _V4("10.0.0.0/8"), _V4("172.16.0.0/12"), _V4("192.168.0.0/16"))
TEST_REACH_V6: tuple[_V6, ...] = (_V6("::1/128"), _V6("fc00::/7"))
# Inside the unique-local range, where clouds answer their metadata services over IPv6.
NEVER_V6: tuple[tuple[_V6, str], ...] = (
    (_V6("fd00:ec2::/32"), "a cloud's metadata service (AWS)"),
    (_V6("fd00:c1::/32"), "a cloud's metadata service (Oracle)"),
)


def why_not_test_reachable(address: Address) -> str | None:
    """Why a test endpoint may not be at `address` (as why_not_public says it), or None:
    public, loopback and private addresses may."""
    if isinstance(address, ipaddress.IPv6Address):
        never = next((why for network, why in NEVER_V6 if address in network), None)
        if never is not None:
            return never
        if any(address in network for network in TEST_REACH_V6):
            return None
        inner = carried_ipv4(address)
        if inner is not None:
            why = why_not_test_reachable(inner)
            return None if why is None else f"{why} ({inner}) in an IPv6 form"
    elif any(address in network for network in TEST_REACH_V4):
        return None
    return why_not_public(address)

