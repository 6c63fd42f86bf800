"""Budget slices in the record (connectapi_reserve_budgets, migration 0027; decision 0124):
what a grant and a give-back count, and that processes spending slices beside requests
counted one by one never admit more than a budget in any window."""

from __future__ import annotations

import random
from bisect import bisect_right

from connectapi.budgets.charges import Charge, Verdict
from connectapi.budgets.slices import HOT, LEASE, GiveBack, Slices, Taken, Want
from connectapi.budgets import record as budgets, record_slices as budget_slices
from connectapi.storage.database import Database

START = 1_790_000_000.0


async def counted(db: Database, now: float, name: str = "requests", whose: str = "k", limit: int = 1000,
                  window: float = 60.0) -> int:
    """What the window counts at `now` (a check that charges nothing)."""
    found = await budgets.charge(db, now, [Charge(name, whose, 1, limit, window, 0, 0)])
    return found[0].state.used


async def test_a_grant_counts_at_once_until_a_window_after_its_life(db: Database) -> None:
    await budgets.charge(db, START, [Charge("requests", "k", 1, 1000, 60.0, 1, 1)])
    want = Want("requests:k", 1000, 60.0, 100, 500)
    [grant] = await budget_slices.reserve(db, START + 1, LEASE, [want], [])
    assert (grant.tokens, grant.at, grant.used) == (100, START + 1 + LEASE, 101)
    assert grant.reset_after == 59.0  # the oldest event, the request's, leaves then
    assert await counted(db, START + 2) == 101  # every process sees the slice counted
    assert await counted(db, START + 60.5) == 100  # the request left; the slice counts on
    assert await counted(db, START + 61 + LEASE - 0.01) == 100
    assert await counted(db, START + 61 + LEASE) == 0


async def test_no_grant_past_its_share_of_the_limit_and_a_check_makes_no_row(db: Database) -> None:
    for _ in range(40):
        await budgets.charge(db, START, [Charge("requests", "k", 1, 100, 60.0, 1, 1)])
    wants = [Want("requests:k", 100, 60.0, 16, 50), Want("ip-auth:a", 20, 60.0, 0, 10)]
    grants = await budget_slices.reserve(db, START, LEASE, wants, [])
    assert [(g.subject, g.tokens, g.used) for g in grants] == [("requests:k", 0, 40), ("ip-auth:a", 0, 0)]
    assert await budgets.subjects(db) == 1
    [grant] = await budget_slices.reserve(db, START, LEASE, [Want("requests:k", 100, 60.0, 10, 50)], [])
    assert (grant.tokens, grant.used) == (10, 50)  # exactly up to the share


async def test_an_ask_is_granted_all_together_or_not_at_all(db: Database) -> None:
    for _ in range(60):
        await budgets.charge(db, START, [Charge("global", "", 1, 100, 60.0, 1, 1)])
    for _ in range(20):
        await budgets.charge(db, START, [Charge("ip-auth", "a", 1, 20, 60.0, None, 1)])
    key, past_share = Want("requests:k", 1000, 60.0, 50, 500), Want("global", 100, 60.0, 16, 50)
    check, spent_check = Want("ip-auth:b", 20, 60.0, 0, 10), Want("ip-auth:a", 20, 60.0, 0, 10)
    for wants in ([key, past_share], [key, spent_check]):
        grants = await budget_slices.reserve(db, START, LEASE, wants, [])
        assert [g.tokens for g in grants] == [0, 0]
    assert await counted(db, START) == 0  # the key's window: nothing taken
    grants = await budget_slices.reserve(db, START, LEASE, [key, check], [])
    assert [(g.tokens, g.used) for g in grants] == [(50, 50), (0, 0)]


async def test_a_give_back_takes_only_what_its_slice_still_counts(db: Database) -> None:
    [grant] = await budget_slices.reserve(db, START, LEASE, [Want("requests:k", 1000, 60.0, 100, 500)], [])
    await budgets.charge(db, START + 0.1, [Charge("requests", "k", 1, 1000, 60.0, 1, 1)])
    back = GiveBack("requests:k", grant.at, 60)
    [again] = await budget_slices.reserve(db, START + 0.6, LEASE, [Want("requests:k", 1000, 60.0, 0, 500)], [back])
    assert again.used == 41
    # More given back than the event still holds (a process never sends one twice): never below zero.
    await budget_slices.reserve(db, START + 0.7, LEASE, [], [GiveBack("requests:k", grant.at, 60)])
    assert await counted(db, START + 0.8) == 1
    # A give-back of an event already gone changes nothing.
    await budget_slices.reserve(db, START + 0.8, LEASE, [], [GiveBack("requests:k", START - 500, 5)])
    assert await counted(db, START + 0.9) == 1


async def test_prune_keeps_a_subject_while_a_slice_of_it_is_in_its_window(db: Database) -> None:
    await budget_slices.reserve(db, START, 30.0, [Want("ip:a", 1000, 60.0, 50, 500)], [])
    assert await budgets.prune(db, START + 60) == 0  # counted at START + 30: in its window until START + 90
    assert await budgets.prune(db, START + 90) == 1


async def ask_slices(db: Database, slices: Slices, charges: list[Charge], now: float) -> None:
    """As the keeper asks (`_ask_slices`), answered at once."""
    wants = slices.wanted(charges, now)
    give_backs = slices.give_backs(now)
    if wants or give_backs:
        slices.granted(wants, await budget_slices.reserve(db, now, LEASE, wants, give_backs), now, slices.ticket())
        slices.settled(wants)


async def test_processes_spending_slices_never_admit_more_than_the_budget_in_any_window(db: Database) -> None:
    """Two processes, each keeping its slices, ask as the gates ask (a slice when it
    admits, the record otherwise, then slices when busy, and the next slice when one it
    spends from is in its last quarter), at random instants over several windows, faster
    than the budget: no window ever holds more than the limit, whatever each process
    spends locally or leaves unspent, and however its slices overlap."""
    rng = random.Random(28)
    limit, window = 1600, 2.0
    processes = [Slices() for _ in range(2)]
    charges = [Charge("requests", "k", 1, limit, window, 1, 1), Charge("global", "", 1, 50 * limit, window, 1, 1)]
    admitted: list[float] = []
    by_slice = refused = renewed = 0
    now = START
    while now < START + 4 * window:
        # Calm under the budget's rate (busy enough for slices), then bursts past it.
        burst = (now - START) % (2 * window) >= 1.5 * window
        now += rng.expovariate((2.5 if burst else 0.4) * limit / window)
        slices = rng.choice(processes)
        if taken := slices.take(charges, now):
            admitted.append(now)
            by_slice += 1
            if taken is Taken.RENEW:
                renewed += 1
                await ask_slices(db, slices, charges, now)
            continue
        got = await budgets.charge(db, now, charges)
        if got[0].verdict is not Verdict.CHARGED:
            refused += 1
            continue
        admitted.append(now)
        await ask_slices(db, slices, charges, now)
    most = max(bisect_right(admitted, t) - bisect_right(admitted, t - window) for t in admitted)
    assert most <= limit
    print(f"admitted {len(admitted)}, by slices {by_slice}, renewed {renewed}, refused {refused}, most {most}")
    assert by_slice > len(admitted) // 4  # slices admitted many of them
    assert renewed > 0  # and slices overlapped: the next asked while one was held
    assert refused > 0 and most > limit * 0.9  # the budget was spent, near to its limit
    assert HOT * 16 <= limit  # a slice could be taken at all


async def one_by_one(db: Database, rate: float, renew: bool) -> int:
    """Requests of one busy key at `rate` a second, a little under half its limit (`requests`
    16000 in 6 s, so slices stop near 1333 a second): how many the record counted one by
    one after the first window, with the next slice asked in the last quarter of one
    (`renew`, decision 0146) or only at a miss (0124)."""
    rng = random.Random(5)
    slices = Slices()
    charges = [Charge("requests", f"k{rate}{renew}", 1, 16000, 6.0, 1, 1)]
    misses = 0
    now = START
    while now < START + 18.0:
        now += rng.expovariate(rate)
        if taken := slices.take(charges, now):
            if renew and taken is Taken.RENEW:
                await ask_slices(db, slices, charges, now)
            continue
        misses += now > START + 6.0
        if (await budgets.charge(db, now, charges))[0].verdict is Verdict.CHARGED:
            await ask_slices(db, slices, charges, now)
    return misses


async def test_an_early_ask_refused_near_the_share_waits_only_for_the_slice_it_follows(db: Database) -> None:
    """An ask made while a slice is held has that slice's unspent units counted by the
    record: near the share it is refused where an ask at a miss (those units given back
    first) is granted. Quiet for a whole period after it, every request in that period went
    to the record (thousands of them here, against a few dozen with asks only at a miss);
    quiet only until the held slice ends, the next miss asks as before."""
    for rate, most in ((800, 0), (1100, 100)):
        at_miss = await one_by_one(db, rate, renew=False)
        renewing = await one_by_one(db, rate, renew=True)
        assert renewing <= min(most, at_miss + 20), (rate, renewing, at_miss)
