"""Budget slices over HTTP (decision 0124): a busy known key's requests are admitted from
slices, with far fewer statements than requests, the RateLimit headers counting down one
by one, and every admitted request counted in the record."""

from __future__ import annotations

import time

import pytest
import trio

from connectapi.budgets.slices import HOT, LEASE

from connectapi.storage.database import Database

from .conftest import open_harness
from .harness import API, Answer, Harness
from .test_budgets import policies

LIFTED = "requests=100000,property=100000,ip=100000,global=100000"


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": LIFTED}


def remaining(answer: Answer) -> int:
    assert answer.status == 200, answer.body
    _, [(name, params)] = policies(answer)
    assert name == "requests"
    return params["r"]


async def used(api: Harness, subject: str) -> int:
    found: int = await api.ctx.db.fetchval("SELECT used FROM budget_windows WHERE subject = $1", subject)
    return found


async def metric(api: Harness, name: str) -> float:
    """A counter's value on /metrics (0 before it was first counted)."""
    response = await api.client.get("/metrics", headers={"Authorization": "Bearer test-operator-token"})
    text = await response.get_data(as_text=True)
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")
               or line.startswith(name + "{"))


async def test_a_busy_key_is_admitted_from_slices_and_every_request_is_counted(api: Harness) -> None:
    prop, key = await api.keyed_property()
    counter = api.ctx.budgets.keeper._counter
    from_slices = await metric(api, "connectapi_budget_slice_admissions_total")
    asked = await metric(api, 'connectapi_budget_slice_asks_total{outcome="granted"}')
    before = counter.statements  # type: ignore[attr-defined]
    answers = [remaining(await api.call("GET", f"{API}/property", key=key)) for _ in range(300)]
    sent = counter.statements - before  # type: ignore[attr-defined]
    # Operators see it: the requests no statement counted were admitted from slices (the
    # key's first request takes two statements: its key is looked up between them).
    assert await metric(api, "connectapi_budget_slice_admissions_total") - from_slices == 300 - (sent - 1)
    assert await metric(api, 'connectapi_budget_slice_asks_total{outcome="granted"}') > asked
    # As this process counts them: the record's count less the units its slices hold
    # unspent, whether a request was admitted from a slice or by the record. Never more
    # than is left; less only for a request the record counted while a slice was being
    # granted (its count has the units the process does not hold yet).
    exact = [100000 - n for n in range(1, 301)]
    assert all(shown <= left for shown, left in zip(answers, exact, strict=True)), [(n, a - e) for n, (a, e) in enumerate(zip(answers, exact)) if a != e]
    assert sum(shown == left for shown, left in zip(answers, exact, strict=True)) > 280, answers
    assert sent < 300 // 4, sent  # most were admitted from slices: no statement of their own
    key_subject = next(s for s in await subjects(api) if s.startswith("requests:"))
    assert await used(api, key_subject) >= 300  # counted, with what slices hold unspent
    assert await used(api, f"property:{prop['id']}") >= 300

    # Quiet for a slice's life, then busy again: the unspent units are given back, and the
    # record counts what was admitted, plus only the new slices.
    api.advance(LEASE)
    for _ in range(HOT + 2):
        remaining(await api.call("GET", f"{API}/property", key=key))
    counted = await used(api, key_subject)
    assert 300 + HOT + 2 <= counted < 300 + HOT + 2 + 100000 // 16


async def test_a_failed_authentication_sends_the_address_back_to_the_record(api: Harness) -> None:
    _, key = await api.keyed_property()
    counter = api.ctx.budgets.keeper._counter
    for _ in range(100):
        remaining(await api.call("GET", f"{API}/property", key=key))
    before = counter.statements  # type: ignore[attr-defined]
    remaining(await api.call("GET", f"{API}/property", key=key))
    assert counter.statements == before  # type: ignore[attr-defined]  # from slices
    assert (await api.call("GET", f"{API}/property", key="cak_live_" + "x" * 40)).status == 401
    after_failure = counter.statements  # type: ignore[attr-defined]
    remaining(await api.call("GET", f"{API}/property", key=key))
    assert counter.statements > after_failure > before  # type: ignore[attr-defined]  # the check asked again


async def subjects(api: Harness) -> set[str]:
    rows = await api.ctx.db.fetch("SELECT subject FROM budget_windows")
    return {row["subject"] for row in rows}


async def test_the_units_a_closing_front_did_not_spend_go_back(db: Database) -> None:
    """A worker stopped or reloaded leaves its windows counting what it admitted, not the
    units it held unspent."""
    async with open_harness(db, {"CONNECTAPI_BUDGETS": LIFTED}) as api:
        prop, key = await api.keyed_property()
        for _ in range(100):
            remaining(await api.call("GET", f"{API}/property", key=key))
        counter = api.ctx.budgets.keeper._counter
        before = counter.statements  # type: ignore[attr-defined]
        remaining(await api.call("GET", f"{API}/property", key=key))
        assert counter.statements == before  # type: ignore[attr-defined]  # from slices: units were held
    rows = await db.fetch("SELECT subject, used FROM budget_windows WHERE subject LIKE 'property:%'")
    assert {row["subject"]: row["used"] for row in rows} == {f"property:{prop['id']}": 101}


async def asks_answered(api: Harness) -> None:
    """Until no ask for slices is out (it runs in a task of its own, on the real record)."""
    subjects_kept = api.ctx.budgets.keeper._slices._subjects
    waited_since = time.monotonic()
    while any(subject.reserving for subject in subjects_kept.values()):
        assert time.monotonic() - waited_since < 10, "an ask for slices was not answered"
        await trio.sleep(0)


async def test_a_busy_keys_slices_are_followed_before_they_end(api: Harness) -> None:
    _, key = await api.keyed_property()
    counter = api.ctx.budgets.keeper._counter
    for _ in range(60):
        remaining(await api.call("GET", f"{API}/property", key=key))
        await asks_answered(api)
    before = counter.statements  # type: ignore[attr-defined]
    # Six slice lives at twenty requests each: each slice's next is asked in its last
    # quarter, so no request finds none and waits for a statement of its own.
    for _ in range(120):
        api.advance(LEASE / 20)
        remaining(await api.call("GET", f"{API}/property", key=key))
        await asks_answered(api)
    assert counter.statements == before  # type: ignore[attr-defined]
