"""Webhook URLs: https on public hosts only, checked again on the resolved addresses."""

from __future__ import annotations

import ipaddress

import pytest

from connectapi.domain.webhook_urls import UnsafeUrl, check_resolved, check_url, is_public


@pytest.mark.parametrize("address", [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1",
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::1", "2002:c0a8:101::1", "64:ff9b::7f00:1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo wrapping 192.0.2.45
])
def test_inside_addresses_are_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", [
    # issue 16, item 7: these passed a check built on `is_global`
    "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",  # NAT64 of private, loopback, link-local
    "64:ff9b:1::a00:1", "64:ff9b:1:7f00:1::", "64:ff9b:1::808:808",  # local-use NAT64: never public
    "::127.0.0.1", "::10.0.0.1", "::169.254.169.254",  # IPv4-compatible
    "::ffff:10.0.0.1", "::ffff:169.254.169.254",  # IPv4-mapped
    "fec0::1", "feff::1",  # site-local
    # and their relatives
    "2002:a00:1::1", "2002:a9fe:a9fe::1", "2002:6440:1::1",  # 6to4 of private, link-local, shared
    "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:808:808::1",  # Teredo, whatever it carries
    "fc00::1", "fdff:ffff::1", "fe80::1", "febf::1",
    "100.64.0.1", "100.127.255.254", "0.1.2.3", "192.0.0.1", "192.0.0.9", "198.18.0.1", "198.19.255.255",
    "240.0.0.1", "255.255.255.255", "224.0.0.251", "ff05::1:3", "ff0e::1",
    "192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1", "3fff::1",  # documentation
    "100::1", "5f00::1", "2001:2::1", "192.88.99.1", "::", "::1", "4000::1", "e000::1",
])
def test_non_public_forms_and_their_relatives(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "203.0.114.1", "2606:4700::1111", "2002:808:808::1",
                                     "64:ff9b::808:808", "::ffff:8.8.8.8", "::8.8.8.8", "100.128.0.1",
                                     "198.20.0.1", "2a00:1450:4001::200e"])
def test_public_addresses(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(("url", "why"), [
    ("http://hooks.example.com/in", "https"),
    ("ftp://hooks.example.com/in", "https"),
    ("https:///in", "no host"),
    ("https://user:pw@hooks.example.com/in", "credentials"),
    ("https://hooks.example.com/in#x", "fragment"),
    ("https://hooks.example.com:99999/in", "port"),
    ("https://127.0.0.1/in", "not a public address"),
    ("https://[::1]/in", "not a public address"),
    ("https://[::ffff:10.0.0.1]/in", "not a public address"),
    ("https://169.254.169.254/latest", "not a public address"),
    ("https://localhost/in", "not a public host"),
    ("https://api.localhost/in", "not a public host"),
    ("https://printer.local/in", "not a public host"),
    ("https://intranet/in", "not a public host"),
    ("https://hooks.example.com/" + "x" * 2100, "longer"),
    ("https://127.0.0.1./in", "loopback"),
    ("https://[::127.0.0.1]/in", "loopback (127.0.0.1) in an IPv6 form"),
    ("https://[fec0::1]/in", "site-local"),
    ("https://0177.0.0.1/in", "numeric host"),
    ("https://127.1/in", "numeric host"),
    ("https://0x7f.0.0.1/in", "numeric host"),
    ("https://2130706433/in", "numeric host"),
    ("https://8.8.8.010/in", "numeric host"),
    ("https://hooks.example.0x1/in", "numeric host"),
])
def test_refused_urls_say_why(url: str, why: str) -> None:
    with pytest.raises(UnsafeUrl) as refused:
        check_url(url)
    assert why in str(refused.value)


def test_accepted_urls() -> None:
    assert check_url("https://hooks.example.com/in?x=1") == "https://hooks.example.com/in?x=1"
    assert check_url("https://8.8.8.8:8443/in") == "https://8.8.8.8:8443/in"


@pytest.mark.parametrize("url", ["http://0177.0.0.1/", "http://127.1/", "http://0x7f.0.0.1/", "http://2130706433/",
                                 "http://１２７.１/"])
def test_numeric_host_oddities_are_refused_even_where_private_hosts_are_allowed(url: str) -> None:
    """A resolver (inet_aton) reads these as 127.0.0.1; `ipaddress` reads none of them, so
    they used to pass as host names. No receiver needs them written so."""
    with pytest.raises(UnsafeUrl, match="numeric host"):
        check_url(url, allow_private=True)


@pytest.mark.parametrize("url", ["https://" + "a" * 64 + ".example.com/in", "https://hooks..example.com/in",
                                 "https://☃.example.com/in",  # IDNA 2003 takes it, trio's resolver (2008) not
                                 "https://" + ("a" * 60 + ".") * 5 + "com/in"])
@pytest.mark.parametrize("allow_private", [False, True])
def test_a_host_name_no_resolver_takes_is_refused(url: str, allow_private: bool) -> None:
    """A label over 63 characters was registered, and every delivery then failed inside the
    sender (UnicodeError, a traceback) for a day."""
    with pytest.raises(UnsafeUrl, match="cannot be looked up"):
        check_url(url, allow_private=allow_private)


def test_names_at_the_limits_are_taken() -> None:
    longest = "https://" + "a" * 63 + ".example.com/in"
    assert check_url(longest) == longest
    assert check_url("https://bücher.example/in") == "https://bücher.example/in"
    assert check_url("https://hooks.example.com./in") == "https://hooks.example.com./in"


def test_the_private_setting_allows_http_and_loopback() -> None:
    assert check_url("http://127.0.0.1:9000/in", allow_private=True) == "http://127.0.0.1:9000/in"
    with pytest.raises(UnsafeUrl):
        check_url("ftp://127.0.0.1/in", allow_private=True)
    check_resolved("localhost", [ipaddress.ip_address("127.0.0.1")], allow_private=True)


def test_a_name_is_refused_when_any_of_its_addresses_is_inside() -> None:
    public, inside = ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.0.0.7")
    check_resolved("hooks.example.com", [public])
    with pytest.raises(UnsafeUrl) as refused:
        check_resolved("hooks.example.com", [public, inside])
    assert "10.0.0.7" in str(refused.value)
    with pytest.raises(UnsafeUrl):
        check_resolved("hooks.example.com", [])


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/hook", "http://localhost:4242/webhook", "https://localhost/hook",
    "http://192.168.1.5/in", "http://10.0.0.2:9000/in", "http://172.20.0.3/in", "http://[::1]:8000/in",
    "http://[fd00::1]/in", "http://receiver.lan/in", "http://receiver/in", "https://hooks.example.com/in",
])
def test_a_test_endpoint_may_be_plain_http_on_loopback_and_private_addresses(url: str) -> None:
    assert check_url(url, test_mode=True) == url


@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest/meta-data", "link-local"),  # a cloud's metadata service
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://[fe80::1]/in", "link-local"),
    ("http://[fd00:ec2::254]/latest/meta-data", "metadata service"),  # AWS's, over IPv6
    ("http://[fd00:c1::a9fe:a9fe]/opc/v2/", "metadata service"),  # Oracle's
    ("http://100.64.0.1/in", "carrier-grade NAT"),
    ("http://0.0.0.0:8000/in", "this network"),
    ("http://224.0.0.1/in", "multicast"),
    ("ftp://127.0.0.1/in", "https:// or http://"),
])
def test_a_test_endpoint_is_still_refused_where_nothing_of_an_integrators_lives(url: str, why: str) -> None:
    with pytest.raises(UnsafeUrl, match=why):
        check_url(url, test_mode=True)


def test_a_live_endpoint_keeps_every_rule_and_a_test_endpoints_names_are_judged_by_their_addresses() -> None:
    for url in ("http://127.0.0.1:8000/hook", "https://localhost/hook", "https://192.168.1.5/in"):
        with pytest.raises(UnsafeUrl):
            check_url(url)
    check_resolved("localhost", [ipaddress.ip_address("127.0.0.1")], test_mode=True)
    check_resolved("receiver.lan", [ipaddress.ip_address("192.168.1.9"), ipaddress.ip_address("::1")],
                   test_mode=True)
    with pytest.raises(UnsafeUrl, match="not one a test endpoint may be at.*169.254.169.254: link-local"):
        check_resolved("rebound.example", [ipaddress.ip_address("169.254.169.254")], test_mode=True)
    with pytest.raises(UnsafeUrl, match="not public"):
        check_resolved("localhost", [ipaddress.ip_address("127.0.0.1")])
