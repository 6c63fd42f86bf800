"""What one request asks of its budgets, and what the answer means.

A request's budgets are checked and charged together (record.py, in one statement
shared by every process). Each `Charge` names a window (`requests` of key 12, `ip` of an
address, `global`) and belongs to a stage: a stage whose charges all fit is counted, and
the first charge that does not fit refuses the request with nothing of its stage or the
later ones counted. Earlier stages stay counted, as the contract's order of gates says:
`ip` counts a request that `requests` then refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from ..domain.errors import ApiError
from .window import WindowState, whole_seconds


@dataclass(frozen=True, slots=True)
class Charge:
    name: str  # the budget: the `data.scope` of its 429
    whose: str  # the subject within it: an address, a key id, a property id; "" for `global`
    stage: int
    limit: int
    window: float
    need: int | None  # what must fit; None: not checked (a failure is counted whatever)
    amount: int  # what is counted when the stage fits
    # A smaller need that, when met though `need` is not, lets the request go on with this
    # charge left for later (the share of `global` kept for good keys).
    fallback: int | None = None
    # The window's name in the record: `name:whose`, or `name` alone. Made once, with the
    # charge: a known key's charges are kept and asked for on every request.
    subject: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "subject", f"{self.name}:{self.whose}" if self.whose else self.name)


class Verdict(Enum):
    CHARGED = "charged"
    DEFERRED = "deferred"
    REFUSED = "refused"
    UNCHECKED = "unchecked"  # its stage was not reached, or an earlier charge of it refused


@dataclass(frozen=True, slots=True)
class Counted:
    """One charge's outcome, with its window as every process counts it after the call."""

    verdict: Verdict
    state: WindowState
    wait: float | None  # a refusal: seconds until `need` would fit


def refusal(charges: Sequence[Charge], counted: Sequence[Counted]) -> ApiError | None:
    """The 429 of the first charge refused, or None."""
    for charge, outcome in zip(charges, counted, strict=True):
        if outcome.verdict is Verdict.REFUSED:
            seconds = whole_seconds(outcome.wait if outcome.wait is not None else charge.window)
            if charge.name == "ip-auth":
                message = f"too many failed authentications from this address; retry in {seconds}s"
            else:
                message = f"the {charge.name} budget is used up; retry in {seconds}s"
            return ApiError("RATE_LIMITED", message, scope=charge.name, retry_after_seconds=seconds)
    return None


def state_of(name: str, charges: Sequence[Charge], counted: Sequence[Counted]) -> WindowState:
    for charge, outcome in zip(charges, counted, strict=True):
        if charge.name == name:
            return outcome.state
    raise KeyError(name)
