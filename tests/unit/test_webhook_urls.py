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


@pytest.mark.parametrize("address", ["8.8.8.8", "203.0.114.1", "2606:4700::1111", "2002:808:808::1",
                                     "64:ff9b::808:808", "::ffff:8.8.8.8"])
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
])
def test_refused_urls_say_why(url: str, why: str) -> None:
    with pytest.raises(UnsafeUrl) as refused:
        check_url(url)
    assert why in str(refused.value)


def test_accepted_urls() -> None:
    assert check_url("https://hooks.example.com/in?x=1") == "https://hooks.example.com/in?x=1"
    assert check_url("https://8.8.8.8:8443/in") == "https://8.8.8.8:8443/in"


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
