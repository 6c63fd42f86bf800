"""Which webhook URLs the service will call: https on a public host, never an inside address.

Checked at registration (the URL's shape, and a literal address) and again before each
send, on every address the host name resolves to, so a name that later points inside
(DNS rebinding) is refused too. A test endpoint (`test_mode`: it receives test data only)
may also be plain http on loopback and private addresses, an integrator's own machine
(decision 0137); link-local and the other special ranges stay refused.
CONNECTAPI_WEBHOOK_ALLOW_PRIVATE lifts both checks for tests and the sandbox only.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

import idna

from .public_addresses import Address, is_public, why_not_public, why_not_test_reachable

__all__ = ["MAX_URL_LENGTH", "Address", "UnsafeUrl", "check_resolved", "check_url", "is_public"]

MAX_URL_LENGTH = 2048
# Names that never leave the machine or the site, whatever a resolver says.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
# A last label that is a number (decimal, or hex with 0x) makes a host an IPv4 address to
# a URL parser (WHATWG) and to inet_aton, which also read octal (0177), hex and fewer than
# four parts (127.1, 2130706433): one of those must be a plain dotted quad.
_NUMBER = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)", re.IGNORECASE)


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks; the message says why, for a VALIDATION answer."""


def _literal(host: str) -> Address | None:
    """The address a host names by itself, if it is one; UnsafeUrl for a numeric host that
    is not written plainly (a resolver would read it as an address we never checked)."""
    host = unicodedata.normalize("NFKC", host)  # fullwidth digits and dots read as ASCII ones by IDNA
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if ":" in host:
        return None  # urlsplit keeps only bracketed text here; ip_address refused it
    last = host.rstrip(".").rsplit(".", 1)[-1]
    if not _NUMBER.fullmatch(last):
        return None
    try:
        return ipaddress.IPv4Address(host.rstrip("."))
    except ValueError:
        raise UnsafeUrl(f"{host} is a numeric host that is not a plain dotted-quad address") from None


def check_url(url: str, allow_private: bool = False, *, test_mode: bool = False) -> str:
    """The URL as registered, or UnsafeUrl saying why it is refused."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL_LENGTH} characters")
    # A URL has no spaces or control characters (RFC 3986); NUL could not even be stored.
    if any(c.isspace() or not c.isprintable() for c in url):
        raise UnsafeUrl("the URL may not contain spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed [ of an IPv6 host, a host that NFKC makes another
        raise UnsafeUrl(f"the URL cannot be read: {exc}") from None
    schemes = ("https", "http") if allow_private or test_mode else ("https",)
    if parts.scheme not in schemes:
        raise UnsafeUrl("the URL must start with https://" + (" or http://" if test_mode else ""))
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
    literal = _literal(host)  # odd numeric hosts are refused even where private ones are allowed
    if literal is None:
        _resolvable(host)  # here too: no resolver takes such a name, sandbox or not
    if allow_private:
        return url
    if literal is not None:
        why = why_not_test_reachable(literal) if test_mode else why_not_public(literal)
        if why is not None:
            where = "an address a test endpoint may be at" if test_mode else "a public address"
            raise UnsafeUrl(f"{host} is not {where} ({why})")
        return url
    if test_mode:
        return url  # a local name (localhost, receiver.lan): judged by its addresses before each send
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(_LOCAL_SUFFIXES) or "." not in name:
        raise UnsafeUrl(f"{host} is not a public host name")
    return url


def _resolvable(host: str) -> None:
    """A name the sender can look up and greet: encoded as Python's `idna` codec does for
    the TLS server name (IDNA 2003: each label 1 to 63 characters) and, when it is not
    ASCII, as trio's resolver does (the `idna` package, IDNA 2008 with UTS 46, which refuses
    what 2003 took: a snowman); at most 253 characters in all (RFC 1035)."""
    try:
        encoded = host.encode("idna")
        if not host.isascii():
            idna.encode(host, uts46=True)
    except UnicodeError:  # idna.IDNAError is one
        raise UnsafeUrl("the host name cannot be looked up (a label of it is empty or longer than 63 "
                        "characters, or not a valid international name)") from None
    if len(encoded.rstrip(b".")) > 253:
        raise UnsafeUrl("the host name cannot be looked up (longer than 253 characters)")


def check_resolved(host: str, addresses: list[Address], allow_private: bool = False, *,
                   test_mode: bool = False) -> None:
    """Before a send: every address the host resolves to must be public (a test endpoint's:
    public, loopback or private)."""
    if allow_private:
        return
    if not addresses:
        raise UnsafeUrl(f"{host} does not resolve")
    judge = why_not_test_reachable if test_mode else why_not_public
    inside = [f"{a}: {why}" for a in addresses if (why := judge(a)) is not None]
    if inside:
        kind = "one a test endpoint may be at" if test_mode else "public"
        raise UnsafeUrl(f"{host} resolves to an address that is not {kind} ({'; '.join(inside)})")
