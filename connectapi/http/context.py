"""What the front needs from the rest of the service, handed to the app factory, and how
any route of any audience reaches it during a request (`context()`) and learns who is
asking from where (`client_address()`)."""

from __future__ import annotations

from dataclasses import dataclass

import trio
from quart import current_app, request

from ..actors.channel_manager import CallCounters
from ..actors.messages.channel_manager import ChannelMessage
from ..actors.messages.property_writer import WriterMessage
from ..actors.messages.reconciler import ReconcilerMessage
from ..actors.push_scheduler import PushScheduler
from ..actors.wakeups import Wakeups
from ..channel.sandbox.state import SandboxState
from ..domain.addresses import TrustedProxies
from ..domain.budgets import Budgets
from ..domain.retention import Retention
from ..engine import Clock, Down, Mailbox, Registry, Supervisor
from ..storage.database import Database
from ..storage.key_directory import KeyDirectory
from .budget_keeper import BudgetKeeper


@dataclass(frozen=True, slots=True)
class FrontContext:
    db: Database
    keys: KeyDirectory
    clock: Clock
    budgets: Budgets
    proxies: TrustedProxies
    budgets_kept: BudgetKeeper
    writers: Registry[int, WriterMessage]
    pushes: PushScheduler
    reconciler: Mailbox[ReconcilerMessage]
    wakeups: Wakeups  # told what a change outside the writers committed (a ping, a set-up link)
    webhook_allow_private: bool
    cm_notify_secret: str | None
    channel: Mailbox[ChannelMessage]
    channel_counters: CallCounters
    sandbox: SandboxState | None  # the in-process sandbox channel manager, when no real one is configured
    sandbox_url: str | None
    admin_token: str
    ask_timeout: float
    # How integrators reach this service (CONNECTAPI_PUBLIC_URL), for links we hand out;
    # None: the address the caller used (its Host header, which the caller chooses).
    public_url: str | None
    retention: Retention  # how far back what the record prunes reaches (the admin's webhook recover says it)
    supervisors: tuple[Supervisor, ...]
    stopping: trio.Event  # set when the service is told to stop: answers then close their connection

    def down(self) -> list[Down]:
        """Actors whose crash budget is spent, in every level of the service."""
        return [down for supervisor in self.supervisors for down in supervisor.down.values()]


def context() -> FrontContext:
    ctx: FrontContext = current_app.config["CONNECTAPI"]
    return ctx


def client_address() -> str:
    """The caller's address: the peer, or what a trusted proxy says it forwarded."""
    # Every X-Forwarded-For line, in order, is one list (RFC 9110, 5.3): a proxy that adds a
    # line of its own instead of extending the first would otherwise let the client's own
    # first line name any address it likes.
    forwarded = ", ".join(request.headers.getlist("X-Forwarded-For")) or None
    return context().proxies.client_address(request.remote_addr or "", forwarded)
