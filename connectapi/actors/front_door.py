"""The front door: budgets kept per address and for the whole API, checked before any key is read."""

from __future__ import annotations

from ..domain.budget_subjects import budget_subject
from ..domain.budgets import Budgets
from ..domain.errors import ApiError
from ..domain.sliding_window import SlidingWindow, whole_seconds
from ..engine import Actor, Clock
from ._budget_book import BudgetBook
from .messages.front_door import Admit, AuthFailed, ChargeGlobal, Entry, FrontDoorMessage, MayAuthenticate

# Sweep idle windows after this many admits, so a scan from many addresses cannot grow memory.
_SWEEP_EVERY = 10_000
# The part of `global` that requests without a known key cannot take: a flood of requests
# with no key or a wrong one (from many addresses) leaves this much to integrators whose
# keys are good (docs/decisions.md, "The global budget").
GLOBAL_KEPT_FOR_KEYS = 0.2


class FrontDoor(Actor[FrontDoorMessage]):
    replied_errors = (ApiError,)

    def __init__(self, budgets: Budgets, clock: Clock) -> None:
        self._book = BudgetBook(budgets)
        self._clock = clock
        self._since_sweep = 0

    async def handle(self, message: FrontDoorMessage) -> Entry | ApiError | None:
        now = self._clock.monotonic()
        match message:
            case Admit(address, needs_key):
                return self._admit(now, budget_subject(address), needs_key)
            case MayAuthenticate(address):
                return self._auth_refusal(now, budget_subject(address))
            case AuthFailed(address):
                self._book.window("ip-auth", budget_subject(address)).charge(now)
                return None
            case ChargeGlobal(key_good):
                whole = self._book.window("global", None)
                kept = 0 if key_good else self._kept(whole.limit)
                if whole.wait_for(now, 1 + kept) is not None:
                    return self._refusal(whole, now, 1 + kept)
                whole.charge(now)
                return None

    @staticmethod
    def _kept(limit: int) -> int:
        return int(limit * GLOBAL_KEPT_FOR_KEYS)

    def _refusal(self, window: SlidingWindow, now: float, amount: int) -> ApiError:
        seconds = whole_seconds(window.wait_for(now, amount) or 1.0)
        return ApiError("RATE_LIMITED", f"the global budget is used up; retry in {seconds}s", scope="global",
                        retry_after_seconds=seconds)

    def _admit(self, now: float, subject: str, needs_key: bool) -> Entry:
        self._since_sweep += 1
        if self._since_sweep >= _SWEEP_EVERY:
            self._since_sweep = 0
            self._book.sweep(now)
        ip = self._book.window("ip", subject)
        whole = self._book.window("global", None)
        kept = self._kept(whole.limit)
        deferred = False
        if whole.wait_for(now, 1 + kept) is None:  # the open share has room
            charges = [(ip, "ip", 1), (whole, "global", 1)]
        elif needs_key and whole.wait_for(now, 1) is None:
            # Only the kept part is left: the request may have it once its key is found good.
            charges, deferred = [(ip, "ip", 1)], True
        else:
            # Nothing left for it: refused by `global` (which does not fit, so nothing is
            # charged), with the wait until the open share has room again.
            charges = [(ip, "ip", 1), (whole, "global", 1 + kept)]
        try:
            self._book.charge_all(now, charges)
        except ApiError as refusal:
            return Entry(ip.state(now), refusal)
        blocked = self._auth_refusal(now, subject) if needs_key else None
        if blocked is not None:
            return Entry(ip.state(now), blocked)
        return Entry(ip.state(now), None, global_deferred=deferred)

    def _auth_refusal(self, now: float, subject: str) -> ApiError | None:
        failures = self._book.window("ip-auth", subject)
        # ip-auth counts answers already given: refuse once the count has reached the limit.
        wait = failures.wait_for(now, 1)
        if wait is None:
            return None
        seconds = whole_seconds(wait)
        return ApiError(
            "RATE_LIMITED",
            f"too many failed authentications from this address; retry in {seconds}s",
            scope="ip-auth",
            retry_after_seconds=seconds,
        )
