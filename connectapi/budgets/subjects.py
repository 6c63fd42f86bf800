"""Whose `ip` and `ip-auth` budgets an address charges.

An IPv6 client is counted by its /64: one subscriber is routinely given a whole /64 (and
often far more), so counting each address apart gave one client 2^64 budgets. IPv4 and
IPv4-mapped addresses count as themselves.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

IPV6_CLIENT_PREFIX = 64


@lru_cache(maxsize=4096)  # asked on every request, mostly for the same few addresses
def budget_subject(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an address (a test client, a unix socket): counted as itself
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_CLIENT_PREFIX), strict=False))
    return str(parsed)
