"""The FrontDoor's protocol: the budgets of an address and of the whole API."""

from __future__ import annotations

from dataclasses import dataclass

from ...domain.errors import ApiError
from ...domain.sliding_window import WindowState
from ...engine import Ask


@dataclass(frozen=True, slots=True)
class Entry:
    """The address's `ip` window after this request, and the refusal if there is one.

    `global_deferred`: the share of `global` open to requests without a known key is spent;
    the request goes on to its key, and is charged to `global` (ChargeGlobal) only once the
    key is found good.
    """

    ip: WindowState
    refusal: ApiError | None
    global_deferred: bool = False


@dataclass(frozen=True, slots=True)
class Admit(Ask[Entry]):
    """A request arrived from `address`; `needs_key` when it will go on to a key lookup."""

    address: str
    needs_key: bool


@dataclass(frozen=True, slots=True)
class MayAuthenticate(Ask[ApiError | None]):
    """May `address` present a secret (the operator token)? Its `ip-auth` budget alone is
    asked: the admin routes are not held to `ip` or `global`. Answers the 429 or None."""

    address: str


@dataclass(frozen=True, slots=True)
class AuthFailed:
    """An answer of 401 (or an allowlist refusal) was given to `address` (told, not asked)."""

    address: str


@dataclass(frozen=True, slots=True)
class ChargeGlobal(Ask["ApiError | None"]):
    """A deferred request's key was looked up: if good, charge it to the whole of `global`;
    if not, to the open share only (usually spent: the refusal is the answer)."""

    key_good: bool


FrontDoorMessage = Admit | MayAuthenticate | AuthFailed | ChargeGlobal
