"""The front door: budgets kept per address and for the whole API, checked before any key is read."""

from __future__ import annotations

from ..domain.budgets import Budgets
from ..domain.errors import ApiError
from ..domain.sliding_window import WindowState, whole_seconds
from ..engine import Actor, Clock
from ._budget_book import BudgetBook
from .messages.front_door import Admit, AuthFailed, Entry, FrontDoorMessage, MayAuthenticate



# Sweep idle windows after this many admits, so a scan from many addresses cannot grow memory.
_SWEEP_EVERY = 10_000


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
                return self._admit(now, address, needs_key)
            case MayAuthenticate(address):
                return self._auth_refusal(now, address)
            case AuthFailed(address):
                self._book.window("ip-auth", address).charge(now)
                return None

    def _admit(self, now: float, address: str, needs_key: bool) -> Entry:
        self._since_sweep += 1
        if self._since_sweep >= _SWEEP_EVERY:
            self._since_sweep = 0
            self._book.sweep(now)
        ip = self._book.window("ip", address)
        try:
            self._book.charge_all(now, [(ip, "ip", 1), (self._book.window("global", None), "global", 1)])
        except ApiError as refusal:
            return Entry(ip.state(now), refusal)
        return Entry(ip.state(now), self._auth_refusal(now, address) if needs_key else None)

    def _auth_refusal(self, now: float, address: str) -> ApiError | None:
        failures = self._book.window("ip-auth", address)
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
