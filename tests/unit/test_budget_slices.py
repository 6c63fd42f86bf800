"""Budget slices as a process keeps them (connectapi/budgets/slices.py; decision 0124)."""

from __future__ import annotations

from connectapi.budgets.charges import Charge
from connectapi.budgets.slices import (HOT, LEASE, QUIET_AFTER_FAILURE, RENEW_LIFE, SHARE, SPEND_SHARE, Grant, Slices,
                                       Taken, Want)
from connectapi.budgets.window import WindowState

LIMIT = 10_000


def request(key: str = "k", limit: int = LIMIT) -> list[Charge]:
    """A known key's read, as the gates charge it: ip and global, the ip-auth check, the key's."""
    return [Charge("ip", "a", 1, limit, 60.0, 1, 1), Charge("global", "", 1, limit, 60.0, 1, 1),
            Charge("ip-auth", "a", 2, 20, 60.0, 1, 0), Charge("requests", key, 3, limit, 60.0, 1, 1)]


def busy(slices: Slices, charges: list[Charge], now: float, asks: int = HOT) -> None:
    """Asks with no slice to admit them (they go to the record)."""
    for _ in range(asks):
        assert not slices.take(charges, now)


def busy_key() -> tuple[Slices, list[Charge]]:
    """A process that has just seen 40 requests of one key (busy: slices are worth it)."""
    slices, charges = Slices(), request()
    busy(slices, charges, 0.0, 40)
    return slices, charges


def grant_all(slices: Slices, wants: list[Want], now: float, used: int = 100, auth_used: int = 0) -> list[Grant]:
    grants = [Grant(w.subject, w.tokens, now + LEASE, auth_used if w.tokens == 0 else used + w.tokens, 30.0)
              for w in wants]
    slices.granted(wants, grants, now, slices.ticket())
    slices.settled(wants)  # as the keeper does once the ask is over
    return grants


def test_nothing_is_spent_without_slices_and_a_quiet_subject_wants_none() -> None:
    slices = Slices()
    charges = request()
    busy(slices, charges, 0.0, HOT - 1)  # none admitted: no slice
    assert slices.wanted(charges, 0.0) == []
    busy(slices, charges, 0.0, 1)
    assert slices.wanted(charges, 0.0)


def test_a_busy_request_wants_a_slice_of_each_subject_and_spends_them_until_their_life_ends() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    assert [w.subject for w in wants] == [c.subject for c in charges]
    assert [w.tokens for w in wants] == [80, 80, 0, 80]  # twice the busy period's asks; a check asks none
    assert all(w.cap == int(w.limit * SHARE) for w in wants)
    assert slices.wanted(charges, 0.0) == []  # asked already: not twice at once
    grant_all(slices, wants, 0.0)

    assert slices.take(charges, 0.1)
    states = [slices.state(charge, 0.1) for charge in charges]
    assert [s.used for s in states] == [101, 101, 0, 101]  # the record's count, less what is unspent
    assert states[0].reset_after == 30.0 - 0.1
    for _ in range(79):
        assert slices.take(charges, 0.2)
    assert not slices.take(charges, 0.2)  # every unit spent
    busy(slices, charges, 0.2, 40)
    assert slices.wanted(charges, 0.2)  # and more wanted

    other = Slices()
    busy(other, charges, 0.0, 40)
    wants = other.wanted(charges, 0.0)
    grant_all(other, wants, 0.0)
    assert other.take(charges, LEASE * SPEND_SHARE - 0.001)
    assert not other.take(charges, LEASE * SPEND_SHARE)  # its life is over here before the record's


def test_spending_is_all_or_nothing() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    grants = [Grant(w.subject, 1 if w.subject == "requests:k" else w.tokens, LEASE, 101 if w.tokens else 0, 30.0)
              for w in wants]
    slices.granted(wants, grants, 0.0, slices.ticket())
    assert slices.take(charges, 0.1)
    assert not slices.take(charges, 0.1)  # the key's unit is gone: nothing else is spent
    unspent = {g.subject: g.tokens for g in slices.give_backs(1.0)}
    assert unspent == {"ip:a": 79, "global": 79}


def test_no_slice_when_one_subject_is_quiet_or_the_budget_is_small() -> None:
    slices, charges = busy_key()
    assert slices.wanted(charges + [Charge("property", "9", 3, LIMIT, 60.0, 1, 1)], 0.0) == []
    small = request(limit=HOT * 16 - 1)  # a slice would be under HOT units: not worth it
    busy(slices, small, 0.0, 40)
    assert slices.wanted(small, 0.0) == []
    cells = [Charge("cells", "9", 1, LIMIT, 60.0, 50, 50)]  # more than one unit a request
    busy(slices, cells, 0.0, 40)
    assert slices.wanted(cells, 0.0) == []


def test_a_refused_ask_takes_nothing_and_is_not_asked_again_for_a_while() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    # Global past its share: the record grants none of the ask (all together or none); a
    # grant of the others, were there one, goes back.
    grants = [Grant(w.subject, 0 if w.subject == "global" else w.tokens, LEASE, 0 if w.tokens == 0 else 500, 30.0)
              for w in wants]
    slices.granted(wants, grants, 0.0, slices.ticket())
    slices.settled(wants)
    assert {(g.subject, g.tokens) for g in slices.give_backs(0.0)} == {("ip:a", 80), ("requests:k", 80)}
    busy(slices, charges, 0.1, 1)  # counted one by one
    assert slices.wanted(charges, 0.1) == []  # not asked again on every request meanwhile
    busy(slices, charges, LEASE, 1)
    assert slices.wanted(charges, LEASE)


def test_a_failed_ask_waits_longer_before_it_is_asked_again() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    slices.failed(wants, 0.0)
    slices.settled(wants)
    busy(slices, charges, LEASE, 20)
    assert slices.wanted(charges, LEASE) == []
    busy(slices, charges, QUIET_AFTER_FAILURE, 20)
    assert slices.wanted(charges, QUIET_AFTER_FAILURE)


def test_at_the_close_every_unspent_unit_goes_back() -> None:
    slices, charges = busy_key()
    grant_all(slices, slices.wanted(charges, 0.0), 0.0)
    for _ in range(5):
        assert slices.take(charges, 0.1)
    assert {(g.subject, g.tokens) for g in slices.give_back_all()} == {
        ("ip:a", 75), ("global", 75), ("requests:k", 75)}
    assert not slices.take(charges, 0.1)
    assert slices.give_backs(LEASE) == [] and slices.give_back_all() == []


def test_an_ask_settled_without_an_answer_can_be_asked_again() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    slices.settled(wants)
    assert slices.wanted(charges, 0.0) == wants


def test_one_subject_asked_already_leaves_the_others_to_be_asked() -> None:
    slices = Slices()
    charges, other_key = request(), request("other")
    busy(slices, charges, 0.0, 40)
    busy(slices, other_key, 0.0, 40)
    first = slices.wanted(charges, 0.0)
    assert [w.subject for w in slices.wanted(other_key, 0.0)] == ["requests:other"]  # ip, global, the check: out
    slices.settled(first)


def test_an_answer_read_before_a_failed_authentication_is_not_taken() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    slices.forget("ip-auth:a")  # counted while the ask was out
    grants = grant_all(slices, wants, 0.0)
    assert not slices.take(charges, 0.1)  # the address's check was read before the failure
    assert slices.give_backs(0.1) == []  # the other slices stand
    assert [(w.subject, w.generation) for w in slices.wanted(charges, 0.1)] == [("ip-auth:a", 1)]
    assert [g.subject for g in grants if g.tokens == 0] == ["ip-auth:a"]


def test_units_granted_for_a_forgotten_subject_go_back() -> None:
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    slices.forget("requests:k")
    grant_all(slices, wants, 0.0)
    assert [(g.subject, g.tokens) for g in slices.give_backs(0.0)] == [("requests:k", 80)]


def test_ended_slices_give_back_their_unspent_units_once() -> None:
    slices, charges = busy_key()
    grants = grant_all(slices, slices.wanted(charges, 0.0), 0.0)
    for _ in range(30):
        assert slices.take(charges, 0.1)
    assert slices.give_backs(0.2) == []  # still alive
    back = slices.give_backs(LEASE)
    assert {(g.subject, g.at, g.tokens) for g in back} == {
        (g.subject, g.at, 50) for g in grants if g.tokens > 0}
    assert slices.give_backs(LEASE) == []


def test_a_failed_authentication_forgets_the_address_check() -> None:
    slices, charges = busy_key()
    grant_all(slices, slices.wanted(charges, 0.0), 0.0)
    assert slices.take(charges, 0.1)
    slices.forget("ip-auth:a")
    assert not slices.take(charges, 0.1)
    slices.forget("ip:a")
    assert [(g.subject, g.tokens) for g in slices.give_backs(0.1)] == [("ip:a", 79)]


def test_a_slice_is_renewed_before_it_runs_out_and_the_next_is_spent_after() -> None:
    slices, charges = busy_key()
    grant_all(slices, slices.wanted(charges, 0.0), 0.0)
    assert slices.wanted(charges, 0.1) == []  # plenty left
    for _ in range(70):
        assert slices.take(charges, 0.1)
    renewing = slices.wanted(charges, 0.1)  # under a quarter of a slice left
    assert sorted(w.subject for w in renewing) == ["global", "ip:a", "requests:k"]
    [renewed] = [g.tokens for g in grant_all(slices, renewing, 0.1) if g.subject == "requests:k"]
    for _ in range(10 + renewed):
        assert slices.take(charges, 0.2)
    assert not slices.take(charges, 0.2)


def test_an_answer_that_raced_a_grant_shows_the_later_count() -> None:
    """A request counted in the record while a slice was asked: when the record counted it
    first, the grant's count has it, and its own answer, arriving after, must not undo that
    (the slice's units would then be taken off a count that lacks them)."""
    slices, charges = busy_key()
    wants = slices.wanted(charges, 0.0)
    sent_grant, sent_request = slices.ticket(), slices.ticket()
    grants = [Grant(w.subject, w.tokens, LEASE, 101 + w.tokens if w.tokens else 0, 30.0) for w in wants]
    slices.granted(wants, grants, 0.0, sent_grant)
    slices.settled(wants)
    key = charges[3]
    assert slices.shown(key, WindowState(LIMIT, 60.0, 101, 30.0), 0.0, sent_request).used == 101
    assert slices.take(charges, 0.0)
    assert slices.state(key, 0.0).used == 102
    # An answer to an ask sent after the grant arrived is the record's latest: taken as it is.
    later = slices.ticket()
    assert slices.shown(key, WindowState(LIMIT, 60.0, 90 + 79, 30.0), 0.0, later).used == 90


def test_a_take_from_a_slice_near_its_end_says_the_next_is_worth_asking_for() -> None:
    slices, charges = busy_key()
    grant_all(slices, slices.wanted(charges, 0.0), 0.0)  # 80 units each, spent until LEASE * SPEND_SHARE
    assert slices.take(charges, 0.0) is Taken.TAKEN
    assert slices.take(charges, LEASE * SPEND_SHARE - RENEW_LIFE - 0.001) is Taken.TAKEN
    assert slices.take(charges, LEASE * SPEND_SHARE - RENEW_LIFE + 0.001) is Taken.RENEW  # its last quarter of life

    by_units, charges = busy_key()
    grant_all(by_units, by_units.wanted(charges, 0.0), 0.0)
    taken = [by_units.take(charges, 0.1) for _ in range(80)]
    assert taken[:60] == [Taken.TAKEN] * 60 and taken[60:] == [Taken.RENEW] * 20  # under a quarter of 80 left
    assert by_units.take(charges, 0.1) is Taken.MISSED and not Taken.MISSED


def test_a_slice_followed_by_a_newer_one_asks_for_none() -> None:
    slices, charges = busy_key()
    grant_all(slices, slices.wanted(charges, 0.0), 0.0)
    late = LEASE * SPEND_SHARE - RENEW_LIFE + 0.001
    assert slices.take(charges, late) is Taken.RENEW
    grant_all(slices, slices.wanted(charges, late), late)  # the next, asked in time
    assert slices.take(charges, late) is Taken.TAKEN  # still spending the older one, followed already
