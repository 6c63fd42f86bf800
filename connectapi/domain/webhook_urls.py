"""Which webhook URLs the service will call: https on a public host, never an inside address.

Checked at registration (the URL's shape, and a literal address) and again before each
send, on every address the host name resolves to, so a name that later points inside
(DNS rebinding) is refused too. CONNECTAPI_WEBHOOK_ALLOW_PRIVATE lifts both checks for
tests and the sandbox only.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Names that never leave the machine or the site, whatever a resolver says.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks; the message says why, for a VALIDATION answer."""


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Globally routable unicast: not loopback, private, link-local, CGNAT, multicast,
    reserved, documentation or unspecified, nor an IPv6 form of one of those."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            return is_public(inner)
    return True


def check_url(url: str, allow_private: bool = False) -> str:
    """The URL as registered, or UnsafeUrl saying why it is refused."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise UnsafeUrl("the URL must start with https://")
    host = parts.hostname
    if not host:
        raise UnsafeUrl("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeUrl("the URL may not carry credentials; use the signing secret")
    if parts.fragment:
        raise UnsafeUrl("the URL may not have a fragment")
    try:
        parts.port
    except ValueError:
        raise UnsafeUrl("the URL's port is not a number from 0 to 65535") from None
    if allow_private:
        return url
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        if not is_public(literal):
            raise UnsafeUrl(f"{host} is not a public address (loopback, private, link-local, shared, multicast "
                            "or reserved addresses are refused)")
        return url
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(_LOCAL_SUFFIXES) or "." not in name:
        raise UnsafeUrl(f"{host} is not a public host name")
    return url


def check_resolved(host: str, addresses: list[Address], allow_private: bool = False) -> None:
    """Before a send: every address the host resolves to must be public."""
    if allow_private:
        return
    if not addresses:
        raise UnsafeUrl(f"{host} does not resolve")
    inside = [str(a) for a in addresses if not is_public(a)]
    if inside:
        raise UnsafeUrl(f"{host} resolves to an address that is not public ({', '.join(inside)})")
