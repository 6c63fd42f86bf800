"""Budget slices (docs/decisions/0124-budget-slices.md): the units of a busy budget a
process took from the record ahead, spent on its next requests without a statement each.

A request whose budgets are known (a good key from the process's cache) is admitted here
when every subject it is charged to has a live slice with a unit left, and every subject
it is only checked against (`ip-auth`) was found clear by the record within a slice's
life. Otherwise it goes to the record, as every request did before; and when all its
subjects are busy (`HOT` asks in the last `LEASE`), slices of them are asked of the record.

Why this stays exact (admitted <= limit in every window, on every process together): the
record counts a slice's units when it grants them, and counts them as spent at the end of
the slice's life (`LEASE` after the grant, on the record's clock); a process spends them
only until `SPEND_SHARE` of that, counted from before it asked, on its own clock. So every
window that holds a request admitted here counts its unit, even if the process dies with
units unspent. A window counts more than was admitted (units unspent, until given back or
until their window passes, and units stamped ahead), never less: a request can be refused
early, by at most what was granted, which is never past half a limit (`SHARE`).

Times here are the process's monotonic seconds (the engine's clock); the record's
instants (`at`) are only carried back to it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from .charges import Charge
from .window import WindowState

LEASE = 0.5  # seconds: a slice's life in the record
SPEND_SHARE = 0.9  # of LEASE, from before the ask: when this process stops spending a slice
HOT = 16  # asks of a subject within one LEASE that make it worth a slice
SHARE = 0.5  # no slice is granted past this share of a budget's limit
MOST_OF_LIMIT = 16  # a slice is at most limit / this
MOST_SUBJECTS = 10_000  # a bound on memory: past it, subjects without a slice are forgotten
# After an ask the record refused (a window past its share, a check with no room) or did
# not answer, its subjects are not asked for again for this long: their requests are
# counted one by one meanwhile, as they would be anyway.
QUIET_AFTER_REFUSAL = LEASE
QUIET_AFTER_FAILURE = 4 * LEASE
# A slice in the last quarter of its life here, or of its units, is worth following with
# the next (as `Slices.wanted` judges "enough").
RENEW_LIFE = LEASE * SPEND_SHARE / 4
RENEW_SHARE = 4


class Taken(IntEnum):
    """What `Slices.take` did. MISSED is falsy: the request goes to the record."""

    MISSED = 0
    TAKEN = 1
    # Taken, and a slice it spent from is the newest of its subject and in the last quarter
    # of its life or units: the next is worth asking for now, before requests miss.
    RENEW = 2


@dataclass(frozen=True, slots=True)
class Want:
    """Units of one subject asked of the record (`tokens` 0: its window only, a check)."""

    subject: str
    limit: int
    window: float
    tokens: int
    cap: int  # granted only if the window, with them, stays within this
    generation: int = 0  # the subject's when asked (`Slices.forget`)


@dataclass(frozen=True, slots=True)
class GiveBack:
    """Units of a slice not spent, given back to the record's event at `at`."""

    subject: str
    at: float
    tokens: int


@dataclass(frozen=True, slots=True)
class Grant:
    """The record's answer to a `Want`."""

    subject: str
    tokens: int
    at: float  # the instant its units are counted at, on the record's clock
    used: int  # what the window counts after the call
    reset_after: float


@dataclass(slots=True)
class _Slice:
    tokens: int  # left to spend; for a check, 0
    at: float  # its instant in the record (a give-back names it)
    until: float  # spent here until then (the process's clock)
    limit: int
    window: float
    renew_below: int = 0  # units left under which the next slice is worth asking for
    over: bool = False  # ended or dropped: its unspent units were given back


@dataclass(slots=True)
class _Subject:
    slices: list[_Slice] = field(default_factory=list)
    asks: int = 0  # within the current period
    last_asks: int = 0  # within the period before
    period_start: float = float("-inf")
    reserving: bool = False
    # Bumped by `forget`: an answer to an ask sent before it is not trusted (the record
    # read the window before the failure this process has just counted).
    generation: int = 0
    # The window's count as the record last answered it (a grant, or a request counted
    # there), units of slices included, and when its oldest event leaves (process time).
    known_used: int = 0
    known_resets_at: float = 0.0
    known_ticket: int = -1  # when that answer arrived (`Slices.ticket`)
    quiet_until: float = float("-inf")  # not asked for before then (QUIET_AFTER_*)


def _quiet_after_refusal(subject: _Subject, asked_at: float) -> float:
    """Until when a subject whose ask the record refused is not asked for again. An ask
    made while a slice was still held (`Taken.RENEW`) had that slice's unspent units counted
    against the share too: near the share it is refused where it would be granted once they
    are given back. So quiet only until that slice ends, when the first request to miss asks
    again with them given back; a whole QUIET_AFTER_REFUSAL after it sent every request to
    the record, one statement each (found by an independent review)."""
    held = [s.until for s in subject.slices if s.until > asked_at and not s.over]
    return min(asked_at + QUIET_AFTER_REFUSAL, max(held)) if held else asked_at + QUIET_AFTER_REFUSAL


class Slices:
    def __init__(self) -> None:
        self._subjects: dict[str, _Subject] = {}
        self._give_backs: list[GiveBack] = []
        # Every live slice by when its life here ends: ended ones are found without a scan.
        self._ending: list[tuple[float, int, str, _Slice]] = []
        self._order = itertools.count()
        self._tickets = itertools.count()

    def ticket(self) -> int:
        """Taken when an ask leaves for the record and when an answer arrives: orders them."""
        return next(self._tickets)

    def _counted(self, name: str, now: float) -> _Subject:
        """One more ask of a subject (how busy it is)."""
        subject = self._subjects.get(name)
        if subject is None:
            if len(self._subjects) >= MOST_SUBJECTS:
                self._forget_idle()
            subject = self._subjects[name] = _Subject()
        if now >= subject.period_start + LEASE:
            subject.last_asks = subject.asks if now < subject.period_start + 2 * LEASE else 0
            subject.asks = 0
            subject.period_start = now
        subject.asks += 1
        return subject

    def take(self, charges: Sequence[Charge], now: float) -> Taken:
        """One more ask of each of the charges' subjects; and when their slices admit the
        request, a unit spent of each charged subject's (all or none)."""
        lives: list[_Slice] | None = []
        renew = False
        for charge in charges:
            subject = self._counted(charge.subject, now)  # every subject, admitted or not
            if lives is not None:
                live = self._live(subject, now, charge)
                if live is None:
                    lives = None
                else:
                    lives.append(live)
                    # Only the newest slice of a subject asks for the next: an older one
                    # ending is followed already.
                    renew = renew or (live is subject.slices[-1] and (
                        live.until - now < RENEW_LIFE or live.tokens - charge.amount < live.renew_below))
        if lives is None:
            return Taken.MISSED
        for charge, live in zip(charges, lives):
            live.tokens -= charge.amount
        return Taken.RENEW if renew else Taken.TAKEN

    def state(self, charge: Charge, now: float) -> WindowState:
        """A charge's window after a request `take` admitted, as `shown` says."""
        subject = self._subjects[charge.subject]
        return self._shown(subject, charge.limit, charge.window, now)

    def shown(self, charge: Charge, state: WindowState, now: float, sent: int) -> WindowState:
        """A window as the record counted it for a request (asked at ticket `sent`), as
        this process shows it: less the units its live slices hold unspent (what it may
        still admit with them), as a request admitted from a slice shows it, so the two
        agree."""
        subject = self._subjects.get(charge.subject)
        if subject is None:
            return state
        self._know(subject, state.used, now + state.reset_after, sent)
        if not subject.slices:
            return state
        return self._shown(subject, state.limit, state.window, now)

    def _know(self, subject: _Subject, used: int, resets_at: float, sent: int) -> None:
        """The record's latest count of a subject. An answer to an ask that was out when
        the one known arrived may have been counted before or after it: the larger count
        has both (counts drop only as time passes or units are given back, and then the
        next answer tells)."""
        if sent < subject.known_ticket:
            used = max(used, subject.known_used)
        subject.known_used, subject.known_resets_at = used, resets_at
        subject.known_ticket = self.ticket()

    @staticmethod
    def _shown(subject: _Subject, limit: int, window: float, now: float) -> WindowState:
        unspent = sum(s.tokens for s in subject.slices if s.until > now and not s.over)
        return WindowState(limit, window, max(0, subject.known_used - unspent),
                           max(0.0, subject.known_resets_at - now))

    def wanted(self, charges: Sequence[Charge], now: float) -> list[Want]:
        """Slices worth asking for the charges' subjects: only when every one of them is
        busy (a slice of one alone admits nothing here) and none was refused lately, and
        for each whose slice is missing, running low or ending, and not asked already.
        Marks them asked until `settled`."""
        wants = []
        for charge in charges:
            if not self._sliceable(charge):
                return []
            subject = self._subjects.get(charge.subject)
            if subject is None or max(subject.asks, subject.last_asks) < HOT or subject.quiet_until > now:
                return []
            tokens = 0
            if charge.amount > 0:
                tokens = min(2 * max(subject.asks, subject.last_asks), charge.limit // MOST_OF_LIMIT)
                if tokens < HOT:
                    return []
            if subject.reserving or self._enough(subject, now, tokens):
                continue
            wants.append(Want(charge.subject, charge.limit, charge.window, tokens, int(charge.limit * SHARE),
                              subject.generation))
        for want in wants:
            self._subjects[want.subject].reserving = True
        return wants

    def granted(self, wants: Sequence[Want], grants: Sequence[Grant], asked_at: float, sent: int) -> bool:
        """The record's answers, for asks sent at `asked_at` (read before sending), ticket
        `sent`; False when it refused them."""
        # The record grants the slices of one ask all together or none: one refused (near
        # a limit, where requests are counted one by one) refuses them all.
        refused = any((want.tokens > 0 and grant.tokens == 0) or (want.tokens == 0 and grant.used + 1 > want.limit)
                      for want, grant in zip(wants, grants, strict=True))
        if refused:
            for want in wants:
                if (subject := self._subjects.get(want.subject)) is not None:
                    subject.quiet_until = _quiet_after_refusal(subject, asked_at)
        for want, grant in zip(wants, grants, strict=True):
            subject = self._subjects.get(want.subject)
            if subject is None or subject.generation != want.generation or refused:
                if grant.tokens > 0:  # granted for nothing: back to the record
                    self._give_backs.append(GiveBack(want.subject, grant.at, grant.tokens))
                continue
            made = _Slice(grant.tokens, grant.at, asked_at + LEASE * SPEND_SHARE, want.limit, want.window,
                          grant.tokens // RENEW_SHARE)
            subject.slices.append(made)
            self._know(subject, grant.used, asked_at + grant.reset_after, sent)
            heapq.heappush(self._ending, (made.until, next(self._order), want.subject, made))
        return not refused

    def failed(self, wants: Sequence[Want], now: float, quiet: float = QUIET_AFTER_FAILURE) -> None:
        """The ask was refused, or got no answer: its subjects are not asked for again
        for `quiet` seconds."""
        for want in wants:
            if (subject := self._subjects.get(want.subject)) is not None:
                subject.quiet_until = now + quiet

    def settled(self, wants: Sequence[Want]) -> None:
        """The ask is over, answered or not: its subjects may be asked for again. (When
        the answer was lost, what the record may have granted stays counted until its
        window passes.)"""
        for want in wants:
            if (subject := self._subjects.get(want.subject)) is not None:
                subject.reserving = False

    def forget(self, subject_name: str) -> None:
        """A subject's slices no longer to be trusted (this process counted a failed
        authentication against the address): its unspent units are given back, and an
        answer to an ask already out is not taken."""
        subject = self._subjects.get(subject_name)
        if subject is None:
            return
        subject.generation += 1
        for dropped in subject.slices:
            self._end(subject_name, dropped)
        subject.slices.clear()

    def give_backs(self, now: float) -> list[GiveBack]:
        """Unspent units of the slices whose life here is over, taken out of here: the
        caller sends them to the record, once (sent again after a lost answer, they could
        be taken off twice). A give-back lost leaves them counted until their window
        passes: early refusals, never late ones."""
        while self._ending and self._ending[0][0] <= now:
            _, _, name, ended = heapq.heappop(self._ending)
            if ended.over:
                continue
            self._end(name, ended)
            if (subject := self._subjects.get(name)) is not None:
                subject.slices = [s for s in subject.slices if not s.over]
        found, self._give_backs = self._give_backs, []
        return found

    def give_back_all(self) -> list[GiveBack]:
        """Every slice ended here (the front closes): their unspent units, to send back."""
        for name, subject in self._subjects.items():
            for ended in subject.slices:
                if not ended.over:
                    self._end(name, ended)
            subject.slices.clear()
        self._ending.clear()
        found, self._give_backs = self._give_backs, []
        return found

    def _end(self, name: str, ended: _Slice) -> None:
        ended.over = True
        if ended.tokens > 0:
            self._give_backs.append(GiveBack(name, ended.at, ended.tokens))

    @staticmethod
    def _sliceable(charge: Charge) -> bool:
        """A charge of one unit that must fit (the requests' own budgets), or a check."""
        return charge.fallback is None and charge.need == 1 and charge.amount in (0, 1)

    @staticmethod
    def _live(subject: _Subject, now: float, charge: Charge) -> _Slice | None:
        for live in subject.slices:
            if live.until > now and live.limit == charge.limit and live.window == charge.window \
                    and (charge.amount == 0 or live.tokens >= charge.amount):
                return live
        return None

    @staticmethod
    def _enough(subject: _Subject, now: float, tokens: int) -> bool:
        """A live slice with a quarter of what is wanted left, and a quarter of its life."""
        for live in subject.slices:
            if live.until - now >= RENEW_LIFE and (tokens == 0 or live.tokens >= tokens / RENEW_SHARE):
                return True
        return False

    def _forget_idle(self) -> None:
        """Subjects with no slice and no ask out (their busy counts start again)."""
        for name in [n for n, s in self._subjects.items() if not s.slices and not s.reserving]:
            del self._subjects[name]
