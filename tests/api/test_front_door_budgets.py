"""The budgets counted before a key is known: `global` keeps a share for good keys, and an
IPv6 client is one subject per /64."""

from __future__ import annotations

import pytest

from .harness import API, Answer, Harness

WRONG_KEY = "cak_live_" + "x" * 43


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": "global=20,ip=1000,ip-auth=3"}


def limited(answer: Answer, scope: str) -> None:
    assert (answer.status, answer.code) == (429, "RATE_LIMITED"), answer.body
    assert answer.data["scope"] == scope and int(answer.headers["Retry-After"]) >= 1


async def test_a_flood_without_a_good_key_leaves_global_to_integrators(api: Harness) -> None:
    """global=20: requests without a known key take at most 16; the last 4 are for good keys."""
    _, key = await api.keyed_property()
    for i in range(16):  # a flood from many addresses, with no key and with a wrong one
        answer = await api.call("GET", f"{API}/nowhere" if i % 2 else f"{API}/property",
                                key=None if i % 2 else WRONG_KEY, address=f"192.0.2.{i + 1}")
        assert answer.status in (401, 404), answer.body
    limited(await api.call("GET", f"{API}/nowhere", address="192.0.2.100"), "global")
    limited(await api.call("GET", f"{API}/property", key=WRONG_KEY, address="192.0.2.101"), "global")
    limited(await api.call("GET", f"{API}/property", address="192.0.2.102"), "global")
    for _ in range(4):  # a good key still gets through, until global is whole
        assert (await api.call("GET", f"{API}/property", key=key, address="198.51.100.99")).status == 200
    limited(await api.call("GET", f"{API}/property", key=key, address="198.51.100.99"), "global")
    api.advance(60)
    assert (await api.call("GET", f"{API}/property", key=key, address="198.51.100.99")).status == 200


async def test_good_keys_count_against_the_whole_of_global(api: Harness) -> None:
    _, key = await api.keyed_property()
    for _ in range(20):
        assert (await api.call("GET", f"{API}/property", key=key)).status == 200
    limited(await api.call("GET", f"{API}/property", key=key), "global")


async def test_an_ipv6_client_is_counted_by_its_slash_64(api: Harness) -> None:
    _, key = await api.keyed_property()
    for host in range(1, 4):  # three wrong keys from three addresses of one /64
        assert (await api.call("GET", f"{API}/property", key=WRONG_KEY, address=f"2001:db8:7:1::{host}")).status == 401
    limited(await api.call("GET", f"{API}/property", key=key, address="2001:db8:7:1:ffff::9"), "ip-auth")
    assert (await api.call("GET", f"{API}/property", key=key, address="2001:db8:7:2::1")).status == 200


async def flood_the_open_share(api: Harness) -> None:
    for i in range(16):
        answer = await api.call("GET", f"{API}/nowhere", address=f"192.0.2.{i + 1}")
        assert answer.status == 404, answer.body


async def test_past_the_open_share_wrong_keys_still_count_against_ip_auth(api: Harness) -> None:
    """Each lookup of a wrong key past the share is an ip-auth failure: an address is held to
    its few lookups a minute, as before the share."""
    await flood_the_open_share(api)
    for _ in range(3):
        limited(await api.call("GET", f"{API}/property", key=WRONG_KEY, address="203.0.113.9"), "global")
    limited(await api.call("GET", f"{API}/property", key=WRONG_KEY, address="203.0.113.9"), "ip-auth")


async def test_a_key_used_outside_its_allowlist_gets_none_of_the_kept_part(api: Harness) -> None:
    prop = await api.create_property()
    fenced = await api.create_key(prop["id"], allowlist=["198.51.100.99"])
    await flood_the_open_share(api)
    for host in range(3):  # a stolen key from elsewhere: refused, and not charged as a good key
        limited(await api.call("GET", f"{API}/property", key=fenced["key"], address=f"203.0.113.{host + 20}"),
                "global")
    for _ in range(4):  # the kept part is whole for the key's rightful user
        assert (await api.call("GET", f"{API}/property", key=fenced["key"], address="198.51.100.99")).status == 200
    limited(await api.call("GET", f"{API}/property", key=fenced["key"], address="198.51.100.99"), "global")
