"""X-Forwarded-For is believed only from a trusted proxy."""

from __future__ import annotations

import pytest

from .harness import API, Harness


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_TRUSTED_PROXIES": "10.0.0.0/8, fd00::/8"}


async def test_forwarded_for_from_untrusted_peer_is_ignored(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], allowlist=["203.0.113.5"])
    spoofed = await api.call("GET", f"{API}/property", key=made["key"], address="198.51.100.7",
                             headers={"X-Forwarded-For": "203.0.113.5"})
    assert (spoofed.status, spoofed.code) == (403, "IP_NOT_ALLOWED")
    assert spoofed.data["details"] == {"address": "198.51.100.7"}


async def test_forwarded_for_from_trusted_proxy_names_the_client(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.create_key(prop["id"], allowlist=["203.0.113.5", "2001:db8::7"])
    via_proxy = await api.call("GET", f"{API}/property", key=made["key"], address="10.1.2.3",
                               headers={"X-Forwarded-For": "192.0.2.1, 203.0.113.5, 10.9.9.9"})
    assert via_proxy.status == 200
    v6 = await api.call("GET", f"{API}/property", key=made["key"], address="fd00::2",
                        headers={"X-Forwarded-For": "2001:db8::7"})
    assert v6.status == 200
    # the proxy itself is not the client: a client outside the allowlist is refused
    refused = await api.call("GET", f"{API}/property", key=made["key"], address="10.1.2.3",
                             headers={"X-Forwarded-For": "192.0.2.1"})
    assert refused.data["details"] == {"address": "192.0.2.1"}


async def test_budgets_follow_the_forwarded_client(api: Harness) -> None:
    for _ in range(20):
        await api.call("GET", f"{API}/property", address="10.0.0.1", headers={"X-Forwarded-For": "192.0.2.50"})
    blocked = await api.call("GET", f"{API}/property", address="10.0.0.1", headers={"X-Forwarded-For": "192.0.2.50"})
    assert blocked.data["scope"] == "ip-auth"
    other = await api.call("GET", f"{API}/property", address="10.0.0.1", headers={"X-Forwarded-For": "192.0.2.51"})
    assert other.code == "API_KEY_INVALID"


async def test_forwarded_for_on_several_lines_is_read_as_one_list(api: Harness) -> None:
    """A proxy that appends its own line: the client's first line must not choose the address."""
    from werkzeug.datastructures import Headers

    prop = await api.create_property()
    made = await api.create_key(prop["id"], allowlist=["203.0.113.5"])
    headers = Headers([("Authorization", f"Bearer {made['key']}"),
                       ("X-Forwarded-For", "203.0.113.5"),  # the client's own, forged
                       ("X-Forwarded-For", "198.51.100.66")])  # added by our proxy: the real client
    response = await api.client.open(f"{API}/property", method="GET", headers=headers,  # type: ignore[call-arg]
                                     scope_base={"client": ("10.1.2.3", 40000)})
    body = await response.get_json()
    assert response.status_code == 403 and body["data"]["code"] == "IP_NOT_ALLOWED", body
    assert body["data"]["details"] == {"address": "198.51.100.66"}
