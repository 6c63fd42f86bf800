"""Budget slices (docs/decisions/0124-budget-slices.md): the units of a busy budget a
process took from the record ahead, spent on its next requests without a statement each.

A request whose budgets are known (a good key from the process's cache) is admitted here
when every subject it is charged to has a live slice with a unit left, and every subject
it is only checked against (`ip-auth`) was found clear by the record within a slice's
life. Otherwise it goes to the record, as every request did before; and when all its
subjects are busy (`HOT` asks in the last `LEASE`), it then asks the record for slices.

Why this stays exact (admitted <= limit in every window, on every process together): the
record counts a slice's units when it grants them, and counts them as spent at the end of
the slice's life (`LEASE` after the grant, on the record's clock); a process spends them
only until `SPEND_SHARE` of that, counted from before it asked, on its own clock. So every
window that holds a request admitted here counts its unit, even if the process dies with
units unspent. A window counts more than was admitted (units unspent, until given back,
and units stamped ahead), never less: a request can be refused a little early, and only
when a budget runs from half its limit (`SHARE`, past which no slice is granted) to full
within one slice's life.

Times here are the process's monotonic seconds (the engine's clock); the record's
instants (`at`) are only carried back to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .budget_charges import Charge
from .sliding_window import WindowState

LEASE = 0.5  # seconds: a slice's life in the record
SPEND_SHARE = 0.9  # of LEASE, from before the ask: when this process stops spending a slice
HOT = 16  # asks of a subject within one LEASE that make it worth a slice
SHARE = 0.5  # no slice is granted past this share of a budget's limit
MOST_OF_LIMIT = 16  # a slice is at most limit / this
MOST_SUBJECTS = 10_000  # a bound on memory: past it, subjects without a slice are forgotten


@dataclass(frozen=True, slots=True)
class Want:
    """Units of one subject asked of the record (`tokens` 0: its window only, a check)."""

    subject: str
    limit: int
    window: float
    tokens: int
    cap: int  # granted only if the window, with them, stays within this


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
    granted: int
    at: float
    until: float
    used: int  # the window's count when granted, the slice's units included
    resets_at: float  # when the window's oldest event leaves, on the process's clock
    limit: int
    window: float


@dataclass(slots=True)
class _Subject:
    slices: list[_Slice] = field(default_factory=list)
    asks: int = 0  # within the current period
    last_asks: int = 0  # within the period before
    period_start: float = float("-inf")
    reserving: bool = False


class Slices:
    def __init__(self) -> None:
        self._subjects: dict[str, _Subject] = {}
        self._give_backs: list[GiveBack] = []

    def count(self, charges: Sequence[Charge], now: float) -> None:
        """One more ask of each of the charges' subjects (how busy they are)."""
        for charge in charges:
            subject = self._subjects.get(charge.subject)
            if subject is None:
                if len(self._subjects) >= MOST_SUBJECTS:
                    self._forget_idle()
                subject = self._subjects[charge.subject] = _Subject()
            if now >= subject.period_start + LEASE:
                subject.last_asks = subject.asks if now < subject.period_start + 2 * LEASE else 0
                subject.asks = 0
                subject.period_start = now
            subject.asks += 1

    def spend(self, charges: Sequence[Charge], now: float) -> tuple[WindowState, ...] | None:
        """Each charge's window after this request, when its slices admit it (a unit
        spent of each charged subject's); None, with nothing spent, when one cannot."""
        found: list[_Slice] = []
        for charge in charges:
            subject = self._subjects.get(charge.subject)
            live = self._live(subject, now, charge) if subject is not None else None
            if live is None:
                return None
            found.append(live)
        states = []
        for charge, live in zip(charges, found, strict=True):
            if charge.amount > 0:
                live.tokens -= charge.amount
            states.append(WindowState(live.limit, live.window, live.used - live.tokens,
                                      max(0.0, live.resets_at - now)))
        return tuple(states)

    def wanted(self, charges: Sequence[Charge], now: float) -> list[Want]:
        """Slices worth asking for the charges' subjects: only when every one of them is
        busy (a slice of one alone admits nothing here), and for each whose slice is
        missing, running low or ending. Marks them asked until `granted` or `failed`."""
        wants = []
        for charge in charges:
            if not self._sliceable(charge):
                return []
            subject = self._subjects.get(charge.subject)
            if subject is None or max(subject.asks, subject.last_asks) < HOT:
                return []
            if subject.reserving:
                return []
            tokens = 0
            if charge.amount > 0:
                tokens = min(2 * max(subject.asks, subject.last_asks), charge.limit // MOST_OF_LIMIT)
                if tokens < HOT:
                    return []
            if self._enough(subject, now, tokens):
                continue
            wants.append(Want(charge.subject, charge.limit, charge.window, tokens, int(charge.limit * SHARE)))
        for want in wants:
            self._subjects[want.subject].reserving = True
        return wants

    def granted(self, wants: Sequence[Want], grants: Sequence[Grant], asked_at: float) -> None:
        """The record's answers, for asks sent at `asked_at` (read before sending)."""
        for want, grant in zip(wants, grants, strict=True):
            subject = self._subjects.get(want.subject)
            if subject is None:
                continue
            subject.reserving = False
            if want.tokens > 0 and grant.tokens == 0:
                continue  # near its limit: counted request by request
            if want.tokens == 0 and grant.used + 1 > want.limit:
                continue  # a check that does not pass: the record refuses, request by request
            subject.slices.append(_Slice(grant.tokens, grant.tokens, grant.at, asked_at + LEASE * SPEND_SHARE,
                                         grant.used, asked_at + grant.reset_after, want.limit, want.window))

    def failed(self, wants: Sequence[Want]) -> None:
        """The ask did not reach the record, or its answer was lost: nothing granted here
        (what the record may have granted stays counted, until its window passes)."""
        for want in wants:
            if (subject := self._subjects.get(want.subject)) is not None:
                subject.reserving = False

    def forget(self, subject_name: str) -> None:
        """A subject's slices no longer to be trusted (this process counted a failed
        authentication against the address): its unspent units are given back."""
        subject = self._subjects.get(subject_name)
        if subject is None:
            return
        for dropped in subject.slices:
            self._give_back(subject_name, dropped)
        subject.slices.clear()

    def give_backs(self, now: float) -> list[GiveBack]:
        """Unspent units of the slices whose life is over, taken out of here: the caller
        sends them to the record (a give-back lost leaves them counted a window: early
        refusals, never late ones)."""
        for name, subject in self._subjects.items():
            if subject.slices and subject.slices[0].until <= now:
                for ended in [s for s in subject.slices if s.until <= now]:
                    self._give_back(name, ended)
                subject.slices = [s for s in subject.slices if s.until > now]
        found, self._give_backs = self._give_backs, []
        return found

    def _give_back(self, name: str, ended: _Slice) -> None:
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
            if live.until - now >= LEASE * SPEND_SHARE / 4 and (tokens == 0 or live.tokens >= tokens / 4):
                return True
        return False

    def _forget_idle(self) -> None:
        for name in [n for n, s in self._subjects.items() if not s.slices and not s.reserving]:
            del self._subjects[name]
