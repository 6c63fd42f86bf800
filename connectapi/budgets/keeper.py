"""The contract's rate budgets as the gates ask for them: each ask is counted in the record
(batcher.py sends the asks of concurrent requests together), so every
process and machine counts the same windows (issue 17).

Nothing here waits on anything but that statement: no actor holds the counts, so
requests of one property or one address are counted concurrently, and the record's row
locks order them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import trio


from .charges import Charge, Counted, Verdict, refusal, state_of
from .slices import LEASE, GiveBack, Slices, Taken, Want
from .subjects import budget_subject
from .rules import (BOOKING_CHANGE_KEY_BUDGETS, BOOKING_CHANGE_PROPERTY_BUDGETS, BOOKING_KEY_BUDGETS,
                              BOOKING_PROPERTY_BUDGETS, KEY_BUDGETS, PROPERTY_BUDGETS, Budgets,
                              RequestKind)
from ..domain.errors import ApiError
from .window import WindowState, whole_seconds
from ..engine import Clock
from ..metrics import SLICE_ADMISSIONS, SLICE_ASKS
from .batcher import BudgetCounter
from . import record_slices as stored_slices
from ..storage.database import Database, StorageError
from ..tracing import spans

log = logging.getLogger("connectapi.budgets")

# A failing slice ask is logged at most this often (every miss of a busy key asks again).
COMPLAIN_EVERY = 60.0

# The part of `global` that requests without a known key cannot take: a flood of requests
# with no key or a wrong one (from many addresses) leaves this much to integrators whose
# keys are good (docs/decisions/0061-share-of-global-kept-for-good-keys.md).
GLOBAL_KEPT_FOR_KEYS = 0.2


@dataclass(frozen=True, slots=True)
class Entry:
    """The address's `ip` window after this request, and the refusal if there is one.

    `global_deferred`: the share of `global` open to requests without a known key is spent;
    the request goes on to its key, and is charged to `global` (`charge_global`) only once
    the key is found good.
    """

    ip: WindowState
    refusal: ApiError | None
    global_deferred: bool = False


@dataclass(frozen=True, slots=True)
class Admitted:
    """The key's policies after this request, for the RateLimit headers, and the refusal if any."""

    policies: tuple[tuple[str, WindowState], ...]
    refusal: ApiError | None


class _HeldRefusals:
    """Addresses refused by `ip`, answered here until their refusal's wait is over.

    Never late: a window's count drops as its events leave, and otherwise only as a
    process gives back units of a budget slice it did not spend (decision 0124), so an
    address refused with "retry in w seconds" is refused by every process until then, or
    admitted a little earlier after a give-back. The wait runs from when this process
    asked (at or before the record's instant), so a hold outlasts the record's refusal
    only by what was given back: a refusal early, never a request past the budget. A flood
    from one address then costs the record nothing after its first refusal.
    """

    MOST = 100_000  # a bound on memory, not a policy: past it the holds start over

    def __init__(self) -> None:
        self._held: dict[str, tuple[float, float, WindowState]] = {}  # subject -> asked at, until, state

    def hold(self, subject: str, asked_at: float, wait: float, state: WindowState) -> None:
        if len(self._held) >= self.MOST:
            self._held.clear()
        self._held[subject] = (asked_at, asked_at + wait, state)

    def held(self, subject: str, now: float) -> tuple[float, WindowState] | None:
        """Seconds left and the window as it stands now, or None."""
        found = self._held.get(subject)
        if found is None:
            return None
        asked_at, until, state = found
        if now >= until:
            del self._held[subject]
            return None
        return until - now, WindowState(state.limit, state.window, state.used,
                                        max(0.0, state.reset_after - (now - asked_at)))


def _shown(kind: RequestKind) -> tuple[str, ...]:
    """The budgets the RateLimit headers show for a request of `kind`."""
    return ("requests", "writes") if kind is RequestKind.WRITE else ("requests",)


@dataclass(frozen=True, slots=True)
class SliceSource:
    """Where budget slices come from (docs/decisions/0124-budget-slices.md): the record,
    asked from a task of `background` so that no request waits for it."""

    db: Database
    background: trio.Nursery


class BudgetKeeper:
    def __init__(self, budgets: Budgets, counter: BudgetCounter, clock: Clock,
                 slices: SliceSource | None = None) -> None:
        self._budgets = budgets
        self._counter = counter
        self._clock = clock
        self._held = _HeldRefusals()
        # A known key's busy budgets spent without a statement per request, when given.
        self._source = slices
        self._slices = Slices()
        self._complained_at = float("-inf")
        # The charges of a known caller's request, and those of them its RateLimit headers
        # show, built once per address, key and kind: the same few on every request.
        self._known: dict[tuple[str, int, int, RequestKind], tuple[tuple[Charge, ...], tuple[Charge, ...]]] = {}

    @staticmethod
    def _subject(address: str, mode: str) -> str:
        """An address's subject in `ip` and `ip-auth`: test traffic (a request presenting a
        test key) is counted apart and never spends a live budget."""
        subject = budget_subject(address)
        return subject if mode == "live" else f"{mode}:{subject}"

    @staticmethod
    def _global(mode: str) -> str | None:
        return None if mode == "live" else mode

    def _held_ip(self, subject: str, now: float) -> Entry | None:
        held = self._held.held(subject, now)
        if held is None:
            return None
        wait, state = held
        seconds = whole_seconds(wait)
        return Entry(state, ApiError("RATE_LIMITED", f"the ip budget is used up; retry in {seconds}s", scope="ip",
                                     retry_after_seconds=seconds))

    def _note_ip(self, subject: str, asked_at: float, charges: Sequence[Charge], counted: Sequence[Counted]) -> None:
        ip = counted[0]
        if charges[0].name == "ip" and ip.verdict is Verdict.REFUSED and ip.wait is not None:
            self._held.hold(subject, asked_at, ip.wait, ip.state)

    def _charge(self, name: str, whose: object, stage: int, need: int | None, amount: int, *,
                fallback: int | None = None, limit: int | None = None) -> Charge:
        budget = self._budgets.get(name)
        return Charge(name, str(whose) if whose is not None else "", stage,
                      budget.limit if limit is None else limit, budget.window, need, amount, fallback)

    async def _count(self, charges: Sequence[Charge]) -> list[Counted]:
        return await self._counter.charge(self._clock.shared_time(), charges)

    def _kept(self) -> int:
        return int(self._budgets.get("global").limit * GLOBAL_KEPT_FOR_KEYS)

    async def admit(self, address: str, needs_key: bool, mode: str = "live") -> Entry:
        """`ip` and `global`; then, for a request that will present a key, whether its
        address may still try one (`ip-auth`). A request past the open share of `global`
        that will present a key goes on, deferred: it is charged once its key is good.
        `mode`: the mode of the key presented (each mode has its own `ip`, `global` and
        `ip-auth`)."""
        subject = self._subject(address, mode)
        asked_at = self._clock.monotonic()
        if (held := self._held_ip(subject, asked_at)) is not None:
            return held
        kept = self._kept()
        charges = [
            self._charge("ip", subject, 1, 1, 1),
            self._charge("global", self._global(mode), 1, 1 + kept, 1, fallback=1 if needs_key else None),
        ]
        if needs_key:
            charges.append(self._charge("ip-auth", subject, 2, 1, 0))
        counted = await self._count(charges)
        self._note_ip(subject, asked_at, charges, counted)
        return Entry(counted[0].state, refusal(charges, counted),
                     global_deferred=counted[1].verdict is Verdict.DEFERRED)

    async def may_authenticate(self, address: str) -> ApiError | None:
        """May `address` present a secret? Its `ip-auth` budget alone is asked."""
        charges = [self._charge("ip-auth", budget_subject(address), 1, 1, 0)]
        return refusal(charges, await self._count(charges))

    async def attempt_auth(self, address: str) -> ApiError | None:
        """A console login from `address`: its `ip-auth` budget asked and charged in one
        statement, whatever the outcome (a password is checked at a cost of its own)."""
        charges = [self._charge("ip-auth", budget_subject(address), 1, 1, 1)]
        return refusal(charges, await self._count_ip_auth(charges[0]))

    async def auth_failed(self, address: str, mode: str = "live") -> None:
        """An answer of 401 (or an allowlist refusal) was given: counted whatever the count."""
        await self._count_ip_auth(self._charge("ip-auth", self._subject(address, mode), 1, None, 1))

    async def _count_ip_auth(self, charge: Charge) -> list[Counted]:
        """An `ip-auth` charge counted: the address's check is the record's again, both
        before the count and once it is in (an ask that left meanwhile may have read the
        window without it)."""
        self._slices.forget(charge.subject)
        counted = await self._count([charge])
        self._slices.forget(charge.subject)
        return counted

    async def charge_global(self, key_good: bool, mode: str = "live") -> ApiError | None:
        """A deferred request's key was looked up: a good one may take the whole of `global`,
        any other only the open share (usually spent: the refusal is the answer)."""
        charges = [self._charge("global", self._global(mode), 1, 1 if key_good else 1 + self._kept(), 1)]
        return refusal(charges, await self._count(charges))

    async def admit_known(self, address: str, key_id: int, property_id: int, kind: RequestKind,
                          mode: str = "live") -> Admitted:
        """Every request budget of a request whose key is already known good (from the
        process's key cache, with no lookup), in one statement: `ip` and `global`, then
        `ip-auth`, then the key's and the property's, in the gates' order. A good key may
        take the whole of `global`."""
        subject = self._subject(address, mode)
        asked_at = self._clock.monotonic()
        if (held := self._held_ip(subject, asked_at)) is not None:
            return Admitted((("ip", held.ip),), held.refusal)
        charges, shown = self._known_charges(subject, key_id, property_id, kind, mode)
        if self._source is not None and (taken := self._slices.take(charges, asked_at)):
            SLICE_ADMISSIONS.inc()
            if taken is Taken.RENEW:
                # The next slices asked before these end or run out: otherwise every slice's
                # end made requests miss, each waiting for a statement, until the ask that
                # the first miss sent was answered.
                self._ask_slices(self._source, charges)
            return Admitted(tuple([(charge.name, self._slices.state(charge, asked_at)) for charge in shown]), None)
        sent = self._slices.ticket()
        counted = await self._count(charges)
        self._note_ip(subject, asked_at, charges, counted)
        found = refusal(charges, counted)
        if found is not None and found.scope in ("ip", "global", "ip-auth"):
            # Refused before the key counted: the answer carries the address's policy.
            return Admitted((("ip", counted[0].state),), found)
        if found is None and self._source is not None:
            self._ask_slices(self._source, charges)
            counted = [Counted(c.verdict, self._slices.shown(charge, c.state, asked_at, sent), c.wait)
                       for charge, c in zip(charges, counted, strict=True)]
        return Admitted(self._policies(kind, charges, counted), found)

    def _ask_slices(self, source: SliceSource, charges: Sequence[Charge]) -> None:
        """Slices of the charges' subjects when they are busy, and the unspent units of
        ended slices given back, asked in one statement from a task of its own: the
        request that found a slice missing goes on, counted in the record."""
        asked_at = self._clock.monotonic()  # before the ask leaves: a slice's life here runs from it
        wants = self._slices.wanted(charges, asked_at)
        give_backs = self._slices.give_backs(asked_at)
        if wants or give_backs:
            source.background.start_soon(self._reserve, source.db, wants, give_backs, asked_at)

    async def _reserve(self, db: Database, wants: Sequence[Want], give_backs: Sequence[GiveBack],
                       asked_at: float) -> None:
        spans.outside_any()  # started by a request; serves the process, not that request
        try:
            sent = self._slices.ticket()
            grants = await stored_slices.reserve(db, self._clock.shared_time(), LEASE, wants, give_backs)
            taken = self._slices.granted(wants, grants, asked_at, sent)
            if wants:
                SLICE_ASKS.labels("granted" if taken else "refused").inc()
        except Exception as exc:  # the record's trouble, or a bug: requests go on, counted one by one
            SLICE_ASKS.labels("failed").inc()
            self._slices.failed(wants, self._clock.monotonic())
            if self._clock.monotonic() >= self._complained_at + COMPLAIN_EVERY:
                self._complained_at = self._clock.monotonic()
                log.warning("budget slices could not be asked of the record (requests are counted one by one): "
                            "%r", exc, exc_info=not isinstance(exc, StorageError))
        finally:
            self._slices.settled(wants)

    async def give_back_slices(self) -> None:
        """The front closes: every unit of its slices not spent goes back to the record, in
        one statement (if it fails, they stay counted until their window passes)."""
        if self._source is None or not (give_backs := self._slices.give_back_all()):
            return
        try:
            await stored_slices.reserve(self._source.db, self._clock.shared_time(), LEASE, [], give_backs)
        except Exception as exc:
            log.warning("unspent budget slices could not be given back (counted until their window passes): %r",
                        exc, exc_info=not isinstance(exc, StorageError))

    def _known_charges(self, subject: str, key_id: int, property_id: int, kind: RequestKind,
                       mode: str) -> tuple[tuple[Charge, ...], tuple[Charge, ...]]:
        """A known caller's charges, and those of them the RateLimit headers show."""
        wanted = (subject, key_id, property_id, kind)  # the subject carries the mode
        found = self._known.get(wanted)
        if found is None:
            if len(self._known) >= _HeldRefusals.MOST:  # a bound on memory: past it, built anew
                self._known.clear()
            charges = (self._charge("ip", subject, 1, 1, 1), self._charge("global", self._global(mode), 1, 1, 1),
                       self._charge("ip-auth", subject, 2, 1, 0),
                       *self._request_charges(key_id, property_id, kind, stage=3))
            found = self._known[wanted] = (charges, tuple(self._shown_charges(charges, kind)))
        return found

    def _request_charges(self, key_id: int, property_id: int, kind: RequestKind, stage: int) -> list[Charge]:
        charges = [self._charge(name, key_id, stage, 1, 1) for name in KEY_BUDGETS[kind]]
        return charges + [self._charge(name, property_id, stage, 1, 1) for name in PROPERTY_BUDGETS[kind]]

    @staticmethod
    def _shown_charges(charges: Sequence[Charge], kind: RequestKind) -> list[Charge]:
        """The charges whose windows the RateLimit headers show."""
        return [next(c for c in charges if c.name == name) for name in _shown(kind)]

    @staticmethod
    def _policies(kind: RequestKind, charges: Sequence[Charge],
                  counted: Sequence[Counted]) -> tuple[tuple[str, WindowState], ...]:
        return tuple((name, state_of(name, charges, counted)) for name in _shown(kind))

    async def admit_request(self, key_id: int, property_id: int, kind: RequestKind) -> Admitted:
        """The key's and the property's request budgets, all or none."""
        charges = self._request_charges(key_id, property_id, kind, stage=1)
        counted = await self._count(charges)
        return Admitted(self._policies(kind, charges, counted), refusal(charges, counted))

    def cells_charge(self, property_id: int, cells: int) -> Charge:
        """A write's `cells` budget, charged by the write's own statement (its 429 is made by
        `refusal` of it)."""
        return self._charge("cells", property_id, 1, cells, cells)

    def shared_time(self) -> float | None:
        """The instant budgets are counted at: None, the record's clock (a test's fake one)."""
        return self._clock.shared_time()

    async def charge_booking_change(self, key_id: int, property_id: int) -> None:
        """The booking budgets a change of a booking pays (BOOKING_CHANGE_*); raises the 429
        of the first spent."""
        charges = [self._charge(name, key_id, 1, 1, 1) for name in BOOKING_CHANGE_KEY_BUDGETS]
        charges += [self._charge(name, property_id, 1, 1, 1) for name in BOOKING_CHANGE_PROPERTY_BUDGETS]
        found = refusal(charges, await self._count(charges))
        if found is not None:
            raise found

    async def charge_booking(self, key_id: int, property_id: int, bookings_per_day: int | None) -> None:
        """The three booking budgets of one new booking; raises the 429 of the first spent.
        The owner may raise `property-bookings-day` (never lower it)."""
        charges = [self._charge(name, key_id, 1, 1, 1) for name in BOOKING_KEY_BUDGETS]
        for name in BOOKING_PROPERTY_BUDGETS:
            limit = None
            if name == "property-bookings-day" and bookings_per_day is not None:
                limit = max(self._budgets.get(name).limit, bookings_per_day)
            charges.append(self._charge(name, property_id, 1, 1, 1, limit=limit))
        found = refusal(charges, await self._count(charges))
        if found is not None:
            raise found
