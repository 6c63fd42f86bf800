"""What the front needs from the rest of the service, handed to the app factory, and how
any route of any audience reaches it during a request (`context()`) and learns who is
asking from where (`client_address()`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio
from typing import TYPE_CHECKING

from quart import current_app, g, request
from quart.wrappers import Request

if TYPE_CHECKING:
    from quart.ctx import _AppCtxGlobals

from ..actors.messages.channel_manager import ChannelMessage
from ..actors.messages.property_writer import WriterMessage
from ..actors.wakeups import Wakeups
from ..channel.sandbox.state import SandboxState
from ..domain.addresses import TrustedProxies
from ..budgets.rules import Budgets
from ..domain.retention import Retention
from ..engine import Clock, Down, Mailbox, Registry, Supervisor
from ..storage.database import Database
from ..storage.key_directory import KeyDirectory
from ..budgets.keeper import BudgetKeeper


@dataclass(frozen=True, slots=True)
class Budgeting:
    """The contract's rate budgets: their sizes, and the keeper that counts them in the record."""

    sizes: Budgets
    keeper: BudgetKeeper


@dataclass(frozen=True, slots=True)
class PropertyWork:
    """Where a change to a property goes: its writer (asked within `ask_timeout`), and
    `wakeups`, told what a change made outside the writers committed (a ping, a set-up link)."""

    writers: Registry[int, WriterMessage]
    wakeups: Wakeups
    ask_timeout: float
    # The idempotency keys of ARI writes this process has asked a writer for and not yet
    # answered, with their bodies' hashes: a twin of one hears IDEMPOTENCY_IN_FLIGHT at once
    # rather than wait behind it in the writer's queue (another process's twin hears it
    # from the write's statement: connectapi_write_cells).
    keys_in_flight: dict[tuple[int, str, str], bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChannelAccess:
    """The channel manager as routes reach it: its actor, the in-process sandbox (when no
    real one is configured), the secret its notifications carry, and the test twins'
    sandbox (this process's: test mode's channel manager)."""

    mailbox: Mailbox[ChannelMessage]
    sandbox: SandboxState | None
    sandbox_url: str | None
    notify_secret: str | None
    test_sandbox: SandboxState


@dataclass(frozen=True, slots=True)
class Operation:
    """What the operator's and the owner's interfaces say of the service itself."""

    admin_token: str
    # How integrators reach this service (CONNECTAPI_PUBLIC_URL), for links we hand out;
    # None: the address the caller used (its Host header, which the caller chooses).
    public_url: str | None
    retention: Retention  # how far back what the record prunes reaches (the admin's webhook recover says it)
    webhook_allow_private: bool
    supervisors: tuple[Supervisor, ...]

    def down(self) -> list[Down]:
        """Actors whose crash budget is spent, in every level of the service."""
        return [down for supervisor in self.supervisors for down in supervisor.down.values()]


@dataclass(frozen=True, slots=True)
class FrontContext:
    """What every route may reach, grouped by what it is for: every audience uses the record,
    the clock, the key directory and the trusted proxies; the rest is in the group a route
    needs (budgets, a property's writer, the channel manager, the service's own state)."""

    db: Database
    clock: Clock
    keys: KeyDirectory
    proxies: TrustedProxies
    stopping: trio.Event  # set when the service is told to stop: answers then close their connection
    budgets: Budgeting
    properties: PropertyWork
    channel: ChannelAccess
    operation: Operation


def context() -> FrontContext:
    ctx: FrontContext = current_app.config["CONNECTAPI"]
    return ctx


def current_request() -> Request:
    """The request itself, not werkzeug's proxy of it: code that reads it many times (the
    gates) reads it without a context lookup each time."""
    found: Request = request._get_current_object()  # type: ignore[attr-defined]
    return found


def current_globals() -> _AppCtxGlobals:
    """The request's `g` itself, not its proxy (as `current_request`)."""
    found: _AppCtxGlobals = g._get_current_object()
    return found


def client_address() -> str:
    """The caller's address: the peer, or what a trusted proxy says it forwarded."""
    return address_of(context(), current_request())


def address_of(ctx: FrontContext, req: Request) -> str:
    # Every X-Forwarded-For line, in order, is one list (RFC 9110, 5.3): a proxy that adds a
    # line of its own instead of extending the first would otherwise let the client's own
    # first line name any address it likes.
    forwarded = ", ".join(req.headers.getlist("X-Forwarded-For")) or None
    return ctx.proxies.client_address(req.remote_addr or "", forwarded)
