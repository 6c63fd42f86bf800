"""Client addresses: allowlists and the trusted-proxy rule for X-Forwarded-For."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from functools import lru_cache

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_ALLOWLIST_ENTRIES = 20


@lru_cache(maxsize=4096)  # every request parses its peer's address, mostly the same few
def parse_address(text: str) -> IPAddress | None:
    """An address, with IPv4-mapped IPv6 (::ffff:a.b.c.d) taken as the IPv4 it carries."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=4096)  # as parse_address: writing an address out costs more than the lookup
def canonical_address(text: str) -> str | None:
    """The address's canonical text (parse_address's, written out), or None."""
    address = parse_address(text)
    return None if address is None else str(address)


def parse_network(text: str) -> IPNetwork:
    """An address or CIDR range; host bits of a range are cleared. Raises ValueError."""
    text = text.strip()
    if "/" not in text:
        address = parse_address(text)
        if address is None:
            raise ValueError(f"{text!r} is not an IPv4/IPv6 address or CIDR range")
        return ipaddress.ip_network(address)
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an IPv4/IPv6 address or CIDR range") from exc


def normalise_allowlist(entries: Sequence[str]) -> list[str]:
    """The allowlist as stored: canonical text of each network, duplicates removed."""
    if len(entries) > MAX_ALLOWLIST_ENTRIES:
        raise ValueError(f"at most {MAX_ALLOWLIST_ENTRIES} allowlist entries")
    seen: list[str] = []
    for entry in entries:
        network = parse_network(entry)
        # A single host reads as its address, not as a /32 or /128.
        if network.prefixlen == network.max_prefixlen:
            text = str(network.network_address)
        else:
            text = str(network)
        if text not in seen:
            seen.append(text)
    return seen


class Allowlist:
    """A key's allowed networks; an empty allowlist allows every address."""

    __slots__ = ("_networks",)

    def __init__(self, entries: Iterable[str]) -> None:
        self._networks = tuple(parse_network(e) for e in entries)

    def allows(self, address: str) -> bool:
        if not self._networks:
            return True
        parsed = parse_address(address)
        if parsed is None:
            return False
        return any(parsed in net for net in self._networks if net.version == parsed.version)


class TrustedProxies:
    """Only a peer in this set may name the client through X-Forwarded-For.

    The client is then the rightmost address of the header that is not itself a trusted
    proxy: everything left of it was written by parties we cannot vouch for.
    """

    __slots__ = ("_networks",)

    def __init__(self, entries: Iterable[str]) -> None:
        self._networks = tuple(parse_network(e) for e in entries if e.strip())

    def _trusted(self, address: IPAddress) -> bool:
        return any(address in net for net in self._networks if net.version == address.version)

    def is_proxy(self, peer: str) -> bool:
        parsed = parse_address(peer)
        return parsed is not None and self._trusted(parsed)

    def client_address(self, peer: str, forwarded_for: str | None) -> str:
        if not forwarded_for or not self._networks:
            peer_text = canonical_address(peer)
            return peer if peer_text is None else peer_text
        peer_address = parse_address(peer)
        if peer_address is None:
            return peer
        if not self._trusted(peer_address):
            return str(peer_address)
        hops = [h.strip() for h in forwarded_for.split(",")]
        for hop in reversed(hops):
            address = parse_address(hop)
            if address is None:
                # A garbled hop ends what we can trust; the last trusted proxy is the client we know.
                return str(peer_address)
            if not self._trusted(address):
                return str(address)
        # Every hop is one of our proxies: the leftmost is as far as the chain goes.
        first = parse_address(hops[0])
        return str(first) if first is not None else str(peer_address)
