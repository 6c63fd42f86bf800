"""The operator token at the door: wrong tokens are charged to the address's `ip-auth`
budget, as wrong API keys are, so guessing ends in the contract's 429."""

from __future__ import annotations

import pytest

from .harness import ADMIN, ADMIN_TOKEN, Answer, Harness


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": "ip-auth=3"}


async def admin_call(api: Harness, token: str, address: str = "198.51.100.7") -> Answer:
    return await api.call("GET", f"{ADMIN}/properties/1", address=address,
                          headers={"Authorization": f"Bearer {token}"})


async def test_wrong_admin_tokens_end_in_429_ip_auth_and_a_right_one_is_never_charged(api: Harness) -> None:
    for _ in range(10):  # more than the budget: a right token is not a failure
        assert (await admin_call(api, ADMIN_TOKEN)).code == "PROPERTY_NOT_FOUND"
    for _ in range(3):
        assert (await admin_call(api, "wrong-token")).code == "ADMIN_TOKEN_INVALID"
    api.advance(59.999)
    blocked = await admin_call(api, "wrong-token")
    assert (blocked.status, blocked.code, blocked.data["scope"]) == (429, "RATE_LIMITED", "ip-auth")
    assert blocked.headers["Retry-After"] == "1"
    # the address is blocked before the token is compared, the right one included
    assert (await admin_call(api, ADMIN_TOKEN)).status == 429
    assert (await admin_call(api, ADMIN_TOKEN, address="198.51.100.8")).code == "PROPERTY_NOT_FOUND"
    api.advance(0.001)
    assert (await admin_call(api, ADMIN_TOKEN)).code == "PROPERTY_NOT_FOUND"


async def test_wrong_tokens_on_metrics_count_too(api: Harness) -> None:
    for _ in range(3):
        answer = await api.call("GET", "/metrics", headers={"Authorization": "Bearer wrong"})
        assert answer.code == "ADMIN_TOKEN_INVALID"
    assert (await api.call("GET", "/metrics", headers={"Authorization": "Bearer wrong"})).status == 429
