"""Assembling the running service: record, actors, front; and serving it with hypercorn."""

from __future__ import annotations

import logging
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio
import trio_asyncio

from . import stop_signals
from .actors.booking_intake import BookingIntake, TwinsIntake
from .actors.channel_manager import CallCounters, ChannelManagerActor
from .actors.clock_follower import ClockFollower
from .actors.janitors import BudgetJanitor, IdempotencyJanitor, KeyListener, RetentionJanitor
from .actors.messages.channel_manager import ChannelMessage
from .actors.messages.property_writer import WriterMessage
from .actors.messages.reconciler import ReconcilerMessage
from .actors.outbox import LoggingTransport, OutboxSender, SmtpTransport, Transport
from .actors.property_writer import PropertyWriter
from .actors.push_leases import PushLeaseKeeper, PushLeases
from .actors.push_scheduler import PushScheduler, PushSweeper
from .actors.pushers import AriProjector, InventoryDrain
from .actors.reconciler import Reconciler
from .actors.record_watchdog import RecordWatchdog
from .actors.wakeups import Wakeups
from .actors.webhook_sender import Resolver, WebhookSender, open_webhook_client, resolve
from .channel.client import open_channel_manager
from .channel.sandbox.serve import serve_sandbox
from .channel.sandbox.state import SandboxState
from .actors.channel_routes import ChannelRoutes
from .collector import tune_for_serving
from .config import Settings, resolve_admin_token
from .domain.addresses import TrustedProxies
from .domain.mail_settings import SmtpSettings
from .engine import Clock, Mailbox, Registry, RestartPolicy, Supervisor, SystemClock, Wake, open_supervisor
from .http.app import create_app
from .tracing.asgi import traced_app
from .tracing.setup import exporting
from . import __version__
from .budgets.keeper import BudgetKeeper, SliceSource
from .budgets.batcher import BudgetCounter, open_record_counter
from .http.context import Budgeting, ChannelAccess, FrontContext, Operation, PropertyWork
from .http.serving.connections import connection_cap
from .http.serving.server import bound_socket, hypercorn_config, serve_http
from .storage.database import Database, StorageError, open_database
from .storage.embedded import EmbeddedPostgres, ensure_database
from .storage.key_directory import KeyDirectory
from .storage.migrations import migrate

log = logging.getLogger("connectapi")
EMBEDDED_DATABASE = "connectapi"


# Singletons restart slower and give up later than a property's actors: each of them is a
# whole part of the service, and a crash loop there is worth minutes of retrying.
SERVICE_POLICY = RestartPolicy(initial_backoff=1.0, max_backoff=30.0, max_crashes=5, crash_window=300.0)
PROPERTY_POLICY = RestartPolicy()
# Idle budget counters are forgotten this often: a scan from many addresses leaves a row
# per address for at most a window and this long.
BUDGET_PRUNE_EVERY = 60.0
# At a stop, the push leases are given back within this (or left to run out).
LEASES_GIVE_BACK_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class Handles:
    """What the service assembled that no route reaches, for those who drive it from
    outside (the tests): the pushers' scheduler (to hold pushes), the channel-manager
    actor's call counters, the reconciler, and the test twins' channel-manager actor."""

    pushes: PushScheduler
    counters: CallCounters
    reconciler: Mailbox[ReconcilerMessage]
    test_channel: Mailbox[ChannelMessage]


@dataclass(frozen=True, slots=True)
class Assembled:
    front: FrontContext
    handles: Handles


@asynccontextmanager
async def open_front(settings: Settings, db: Database, clock: Clock, admin_token: str,
                     resolver: Resolver = resolve, embedded: EmbeddedPostgres | None = None,
                     budget_counter: BudgetCounter | None = None) -> AsyncIterator[FrontContext]:
    """`open_service`'s front: what the routes reach."""
    async with open_service(settings, db, clock, admin_token, resolver, embedded, budget_counter) as assembled:
        yield assembled.front


@asynccontextmanager
async def open_service(settings: Settings, db: Database, clock: Clock, admin_token: str,
                       resolver: Resolver = resolve, embedded: EmbeddedPostgres | None = None,
                       budget_counter: BudgetCounter | None = None) -> AsyncIterator[Assembled]:
    """The actors the front talks to, for the life of the block. `resolver` answers the
    addresses of a webhook endpoint's host (tests give their own); `embedded` is the
    embedded server to watch and start again if it dies; `budget_counter` replaces the
    record's counts (only `bench.scale` does, to compare them with counts in memory).

    Supervision runs in four levels, each opened by its own `open_*` below and stopped
    inside out, each with what the levels inside it left of the grace: the services
    (sender, outbox, intake, reconciler, sweep) first, then the property actors (writers,
    pushers; then their push leases are given back), then the channel manager and the
    push-lease keeper, and last the watchers (key listener, janitors, record watchdog),
    which have nothing to finish. Whatever commits work for another level tells `Wakeups`,
    made here and handed down: each level attaches its listeners as it starts them.
    """
    stop_by = _StopBy(settings.shutdown_grace_seconds)
    wakeups = Wakeups()
    async with open_watchers(settings, db, clock, embedded) as watchers, \
            open_channel_level(settings, db, clock, wakeups, stop_by) as channel, \
            open_property_actors(settings, db, clock, channel, wakeups, stop_by) as properties, \
            open_services(settings, db, clock, channel, properties, wakeups, resolver, stop_by) as services, \
            _budget_keeper(db, settings, clock, budget_counter) as keeper:
        stopping = trio.Event()
        front = FrontContext(
            db=db,
            clock=clock,
            keys=watchers.keys,
            proxies=TrustedProxies(settings.trusted_proxies),
            stopping=stopping,
            budgets=Budgeting(settings.budgets, keeper),
            properties=PropertyWork(properties.writers, wakeups, settings.ask_timeout_seconds),
            channel=ChannelAccess(channel.channel, channel.sandbox, channel.sandbox_url, settings.cm_notify_secret,
                                  channel.routes.test_sandbox),
            operation=Operation(admin_token, settings.public_url, settings.retention, settings.webhook_allow_private,
                                (watchers.supervisor, channel.supervisor, properties.supervisor,
                                 services.supervisor)),
        )
        yield Assembled(front, Handles(properties.pushes, channel.counters, services.reconciler,
                                       channel.routes.test))
        stopping.set()  # in case the block ended otherwise than by a signal


# Units of budget slices not spent go back to the record within this when the front closes
# (a worker stopped or reloaded leaves nothing counted for a window that it did not admit).
SLICES_BACK_SECONDS = 2.0


@asynccontextmanager
async def _budget_keeper(db: Database, settings: Settings, clock: Clock,
                         given: BudgetCounter | None) -> AsyncIterator[BudgetKeeper]:
    """The budgets as the gates ask them for the life of the front: counted in the record,
    with budget slices asked of it by tasks of their own (docs/decisions/0124-budget-slices.md),
    or by the counter `bench.scale` gives, in memory."""
    if given is not None:
        yield BudgetKeeper(settings.budgets, given, clock)
        return
    async with open_record_counter(db, settings.ask_timeout_seconds) as counter, \
            trio.open_nursery() as slice_asks:
        keeper = BudgetKeeper(settings.budgets, counter, clock, SliceSource(db, slice_asks))
        try:
            yield keeper
        finally:
            slice_asks.cancel_scope.cancel()  # an ask still out is not waited for: its units stay counted
            with trio.move_on_after(SLICES_BACK_SECONDS) as giving_back:
                giving_back.shield = True
                await keeper.give_back_slices()


class _StopBy:
    """One deadline for every level, fixed when the first starts to stop: each level gets
    what the levels inside it left of the grace."""

    def __init__(self, grace: float) -> None:
        self._grace = grace
        self._at: float | None = None

    def __call__(self) -> float:
        if self._at is None:
            self._at = trio.current_time() + self._grace
        return self._at


@dataclass(frozen=True, slots=True)
class Watchers:
    """The outermost level: what keeps the process's caches and the record tidy."""

    supervisor: Supervisor
    keys: KeyDirectory


@asynccontextmanager
async def open_watchers(settings: Settings, db: Database, clock: Clock,
                        embedded: EmbeddedPostgres | None) -> AsyncIterator[Watchers]:
    """The key listener, the janitors and the record watchdog: nothing to finish at a stop."""
    keys = KeyDirectory(db)
    async with open_supervisor(SERVICE_POLICY, shutdown_grace=0) as watchers:
        await watchers.spawn("key-listener", lambda: KeyListener(keys), mailbox_size=1,
                             degraded="API keys are read from the record on every request, uncached")
        await watchers.spawn("idempotency-janitor", lambda: IdempotencyJanitor(db, clock, settings.janitor_every_seconds),
                             mailbox_size=1, degraded="idempotency keys older than 7 days are not purged")
        await watchers.spawn("retention-janitor",
                             lambda: RetentionJanitor(db, clock, settings.retention, settings.janitor_every_seconds),
                             mailbox_size=1, degraded="batches, deliveries, sent e-mails, refusals and settled OTA "
                                                      "revisions past their retention are not pruned: the record grows")
        await watchers.spawn("budget-janitor", lambda: BudgetJanitor(db, clock, BUDGET_PRUNE_EVERY),
                             mailbox_size=1, degraded="idle budget counters are not forgotten: the record grows")
        if isinstance(clock, SystemClock):  # a test's fake clock is its own
            system = clock
            await watchers.spawn("clock-follower", lambda: ClockFollower(db, system), mailbox_size=1,
                                 degraded="this host's clock dates what it records, not the database's")
        if embedded is not None:
            await watchers.spawn("record-watchdog", lambda: RecordWatchdog(embedded, settings.watchdog_seconds),
                                 mailbox_size=1, degraded="a dead embedded PostgreSQL is not started again")
        yield Watchers(watchers, keys)


@dataclass(frozen=True, slots=True)
class ChannelLevel:
    """The channel manager (the configured one, or the sandbox served in this process) and
    this process's push leases on its properties."""

    supervisor: Supervisor
    channel: Mailbox[ChannelMessage]
    counters: CallCounters
    leases: PushLeases
    sandbox: SandboxState | None  # the in-process sandbox, when no channel manager is configured
    sandbox_url: str | None
    # Where each property's pushes go: the test twins' to this process's test sandbox.
    routes: ChannelRoutes


@asynccontextmanager
async def open_channel_level(settings: Settings, db: Database, clock: Clock, wakeups: Wakeups,
                             stop_by: Callable[[], float]) -> AsyncIterator[ChannelLevel]:
    """The channel-manager actor and the push-lease keeper. A push lease given back with
    cells dirty wakes the pushers (through `wakeups`, once the property level attaches them)."""
    async with trio.open_nursery() as background:
        sandbox: SandboxState | None = None
        stop_sandbox = trio.Event()
        if settings.cm_url and settings.cm_key:
            cm_url, cm_key = settings.cm_url, settings.cm_key
        else:
            sandbox, cm_key = SandboxState(), secrets.token_urlsafe(24)
            cm_url = await background.start(serve_sandbox, sandbox, cm_key, clock, "127.0.0.1", 0, stop_sandbox)
        # The test twins' channel manager: always a sandbox of this process's own, whatever
        # channel manager is configured (docs/decisions/0115-test-mode-twins.md).
        test_sandbox, test_key = SandboxState(), secrets.token_urlsafe(24)
        test_url = await background.start(serve_sandbox, test_sandbox, test_key, clock, "127.0.0.1", 0, stop_sandbox)
        async with open_channel_manager(cm_url, cm_key) as client, \
                open_channel_manager(test_url, test_key) as test_client, \
                open_supervisor(SERVICE_POLICY, shutdown_deadline=stop_by) as root:
            counters = CallCounters()
            channel: Mailbox[ChannelMessage] = await root.spawn(
                "channel-manager", lambda: ChannelManagerActor(client, db, clock, counters=counters),
                mailbox_size=1024, degraded="nothing reaches the channel manager: pushes, the booking feed "
                                            "and grid reads wait")
            test_channel: Mailbox[ChannelMessage] = await root.spawn(
                "test-channel-manager", lambda: ChannelManagerActor(test_client, db, clock, mode="test"),
                mailbox_size=1024, degraded="test keys' writes are not pushed to the test sandbox")
            routes = ChannelRoutes(channel, test_channel, test_sandbox)
            leases = PushLeases(db, clock, wakeups.cells_dirty)
            await root.spawn("push-lease-keeper", lambda: PushLeaseKeeper(leases), mailbox_size=1,
                             degraded="push leases are renewed only before each call: a property waiting out "
                                      "a pause or its budget may pass to another process")
            yield ChannelLevel(root, channel, counters, leases, sandbox, cm_url if sandbox is not None else None,
                               routes)
        stop_sandbox.set()
        background.cancel_scope.cancel()


@dataclass(frozen=True, slots=True)
class PropertyActors:
    """Each property's writer and pushers, made when first needed and stopped when idle."""

    supervisor: Supervisor
    writers: Registry[int, WriterMessage]
    pushes: PushScheduler


@asynccontextmanager
async def open_property_actors(settings: Settings, db: Database, clock: Clock, channel: ChannelLevel,
                               wakeups: Wakeups, stop_by: Callable[[], float]) -> AsyncIterator[PropertyActors]:
    """Writers, inventory drains and ARI projectors; once they have stopped, this process's
    push leases are given back."""
    async with _leases_given_back(channel.leases), \
            open_supervisor(PROPERTY_POLICY, shutdown_deadline=stop_by) as supervisor:
        def registry(name: str, factory: Any, degraded: str, mailbox_size: int = 256) -> Registry[int, Any]:
            return Registry(supervisor, factory, name=name, idle_after=settings.actor_idle_seconds,
                            ask_timeout=settings.ask_timeout_seconds, mailbox_size=mailbox_size, degraded=degraded)

        writers: Registry[int, WriterMessage] = registry(
            "writer", lambda pid: PropertyWriter(pid, db, wakeups),
            "the property's writes and bookings answer 503; its OTA revisions wait")
        # One queued wake is as good as many: a mailbox of one.
        drains: Registry[int, Wake] = registry(
            "inventory-drain", lambda pid: InventoryDrain(pid, db, channel.routes, clock, channel.leases,
                                                   settings.cm_gather_seconds, wakeups),
            "the property's availability stays dirty in the record, not pushed", 1)
        projectors: Registry[int, Wake] = registry(
            "ari-projector", lambda pid: AriProjector(pid, db, channel.routes, clock, channel.leases,
                                                 settings.cm_gather_seconds, wakeups),
            "the property's rates and restrictions stay dirty in the record, not pushed", 1)
        scheduler = PushScheduler(drains, projectors, settings.push_paused)
        wakeups.attach(pushes=scheduler)
        yield PropertyActors(supervisor, writers, scheduler)


@dataclass(frozen=True, slots=True)
class Services:
    """The singletons that work from the record: sender, outbox, intake, reconciler, sweep."""

    supervisor: Supervisor
    reconciler: Mailbox[ReconcilerMessage]


@asynccontextmanager
async def open_services(settings: Settings, db: Database, clock: Clock, channel: ChannelLevel,
                        properties: PropertyActors, wakeups: Wakeups, resolver: Resolver,
                        stop_by: Callable[[], float]) -> AsyncIterator[Services]:
    async with open_webhook_client() as webhook_client, \
            open_supervisor(SERVICE_POLICY, shutdown_deadline=stop_by) as services:
        outbox: Mailbox[Wake] = await services.spawn(
            "outbox", lambda: OutboxSender(db, clock, mail_transport(settings), settings.outbox_sweep_seconds),
            mailbox_size=1, degraded="owner e-mails wait in the record, unsent")
        webhooks: Mailbox[Wake] = await services.spawn(
            "webhook-sender", lambda: WebhookSender(db, clock, webhook_client, settings.webhook_allow_private,
                                                    resolver=resolver),
            mailbox_size=1, degraded="webhook deliveries wait in the record, unsent")
        intake: Mailbox[Wake] = await services.spawn(
            "booking-intake", lambda: BookingIntake(db, clock, channel.channel, properties.writers,
                                                    settings.intake_sweep_seconds),
            mailbox_size=1, degraded="OTA bookings wait in the channel manager's feed, unread")
        wakeups.attach(outbox=outbox, webhooks=webhooks, intake=intake)
        test_intake: Mailbox[Wake] = await services.spawn(
            "test-booking-intake", lambda: TwinsIntake(db, clock, channel.routes.test, properties.writers,
                                                       settings.intake_sweep_seconds),
            mailbox_size=1, degraded="test OTA bookings wait in the test sandbox's feed, unread")

        def test_revisions(_: dict[str, str]) -> None:
            test_intake.try_tell(Wake())

        channel.routes.test_sandbox.bookings.listeners.append(test_revisions)
        channel.routes.test_sandbox.bookings.reminder_listeners.append(test_revisions)
        if channel.sandbox is not None:
            # The in-process sandbox's notification: a trigger, as the real one is. Its
            # non_acked_booking reminder (a revision unacknowledged for 30 minutes) is one too.
            def notified(_: dict[str, str]) -> None:
                wakeups.revisions_waiting()

            channel.sandbox.bookings.listeners.append(notified)
            channel.sandbox.bookings.reminder_listeners.append(notified)
        reconciler: Mailbox[ReconcilerMessage] = await services.spawn(
            "reconciler", lambda: Reconciler(db, channel.channel, wakeups, clock,
                                             automatic=settings.reconcile and not settings.push_paused),
            mailbox_size=16, degraded="the channel manager's grid is not compared with the record")
        if not settings.push_paused:
            await services.spawn(
                "push-sweep", lambda: PushSweeper(db, properties.pushes, settings.push_sweep_seconds, clock),
                mailbox_size=1, degraded="dirty cells missed by a wake-up wait for a restart")
        yield Services(services, reconciler)


@asynccontextmanager
async def _leases_given_back(leases: PushLeases) -> AsyncIterator[None]:
    """Once the pushers have stopped, this process's push leases are given back: another
    process takes the properties over at its next look, not when the leases run out."""
    try:
        yield
    finally:
        with trio.move_on_after(LEASES_GIVE_BACK_GRACE) as scope:
            scope.shield = True
            try:
                await leases.give_back_all()
            except StorageError as exc:
                log.warning("push leases not given back (they run out): %s", exc)


def mail_transport(settings: Settings) -> Transport:
    if settings.smtp_url:
        return SmtpTransport(SmtpSettings.from_url(settings.smtp_url, settings.smtp_from))
    return LoggingTransport()


def start_record(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    """The DSN of the record: DATABASE_URL, or the embedded server in the data dir."""
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.data_dir)
    return embedded.start(), embedded


def run_migrate(settings: Settings) -> list[int]:
    dsn, embedded = start_record(settings)

    async def main() -> list[int]:
        async with trio_asyncio.open_loop():
            app_dsn = dsn if embedded is None else await ensure_database(dsn, EMBEDDED_DATABASE)
            async with open_database(app_dsn, min_size=1, max_size=1) as db:
                return await migrate(db)

    try:
        return trio.run(main)
    finally:
        if embedded is not None:
            embedded.stop()


def run_serve(settings: Settings) -> None:
    token, generated = resolve_admin_token(settings)
    with bound_socket(f"{settings.host}:{settings.port}") as listener:
        dsn, embedded = start_record(settings)
        try:
            trio.run(_serve, settings, dsn, embedded, token, generated, listener)
        finally:
            if embedded is not None:
                embedded.stop()


async def _serve(settings: Settings, dsn: str, embedded: EmbeddedPostgres | None, token: str,
                 generated: bool, listener: socket.socket) -> None:
    async with trio_asyncio.open_loop():
        app_dsn = await ensure_database(dsn, EMBEDDED_DATABASE) if embedded is not None else dsn
        async with open_database(app_dsn) as db:
            applied = await migrate(db)
            if applied:
                log.info("applied migrations %s", applied)

            async def serving(binds: list[str]) -> None:
                announce(binds, settings, token, generated)

            await _run_front(settings, db, token, embedded, listener, serving)
        log.info("stopped")


# A worker stopping keeps an idle keep-alive connection this long for a request already on
# its way (http/serving/connections.py); its successor answers the client's next connection.
WORKER_IDLE_DRAIN = 1.0
WORKER_READY = b"ready\n"


def run_worker(settings: Settings, listen_fd: int, parent_fd: int, apply_migrations: bool) -> None:
    """One of `serve --workers N`'s processes (connectapi/workers.py): the record is the
    parent's (migrated, in DATABASE_URL; an embedded server is the parent's to watch), and
    so are the listening socket (`listen_fd`) and the operator token (in the environment).
    `parent_fd` is this worker's end of a socket pair with the parent: it says `ready` there
    once it serves, and stops when the parent's end closes (the parent is gone).
    `apply_migrations`: the first worker of a reload applies what an upgrade brought."""
    assert settings.database_url is not None and settings.admin_token is not None, "set by the parent"
    parent = socket.socket(fileno=parent_fd)
    trio.run(_serve_worker, settings, settings.database_url, settings.admin_token, listen_fd, parent,
             apply_migrations)


async def _serve_worker(settings: Settings, dsn: str, token: str, listen_fd: int, parent: socket.socket,
                        apply_migrations: bool) -> None:
    channel = trio.socket.from_stdlib_socket(parent)
    async with trio_asyncio.open_loop():
        async with open_database(dsn) as db:
            if apply_migrations:
                applied = await migrate(db)
                if applied:
                    log.info("applied migrations %s", applied)

            async def serving(binds: list[str]) -> None:
                try:
                    await channel.send(WORKER_READY)
                except OSError as exc:  # the parent is gone: _wait_for_parent stops this worker
                    log.error("could not tell the parent this worker is ready: %s", exc)

            await _run_front(settings, db, token, None, f"fd://{listen_fd}", serving, idle_drain=WORKER_IDLE_DRAIN,
                             parent=channel)
        log.info("stopped")


async def _run_front(settings: Settings, db: Database, token: str, embedded: EmbeddedPostgres | None,
                     bind: str | socket.socket,
                     serving: Callable[[list[str]], Awaitable[None]], *, idle_drain: float = 0.0,
                     parent: trio.socket.SocketType | None = None) -> None:
    """The actors and hypercorn on `bind`, until SIGINT or SIGTERM (or the parent's end of
    `parent` closes); `serving` hears the binds once requests are answered."""
    # Each process exports its own spans (off unless an OTLP endpoint is set).
    with exporting(__version__):
        async with open_front(settings, db, SystemClock(), token, embedded=embedded) as ctx:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_wait_for_stop, ctx.stopping, parent)
                binds = await nursery.start(serve_http, traced_app(create_app(ctx)),
                                            hypercorn_config(
                                                bind,
                                                max_connections=connection_cap(settings.max_connections),
                                                is_proxy=ctx.proxies.is_proxy,
                                                idle_drain=idle_drain),
                                            ctx.stopping)
                tune_for_serving()
                await serving(binds)
                await ctx.stopping.wait()
                log.info("stopping: finishing the requests in flight")
            log.info("stopping: the actors finish their work or leave it in the record")


async def _wait_for_stop(stop: trio.Event, parent: trio.socket.SocketType | None) -> None:
    """Set `stop` on SIGINT or SIGTERM, or once the parent's end of `parent` is closed;
    returns when `stop` is set, whoever set it."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_wait_for_signal, stop)
        if parent is not None:
            nursery.start_soon(_wait_for_parent, parent, stop)
        await stop.wait()
        nursery.cancel_scope.cancel()


async def _wait_for_signal(stop: trio.Event) -> None:
    # SIGHUP is `serve --workers N`'s reload (workers.py); a single process has nothing to
    # reload it with, and SIGHUP's default, dying undrained, is the worst answer to a
    # `systemctl reload` sent to a one-core host's `--workers auto`.
    with stop_signals.receiving(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            if signum == signal.SIGHUP:
                log.warning("SIGHUP: a single process does not reload; restart it to run a new version, or serve "
                            "with --workers N (2 or more) to reload without a stop")
                continue
            stop.set()
            return


async def _wait_for_parent(parent: trio.socket.SocketType, stop: trio.Event) -> None:
    """The parent never writes: its end closes when it exits, however it exits."""
    try:
        while await parent.recv(64):
            pass
    except OSError:
        pass
    log.error("the parent process is gone: stopping")
    stop.set()


def announce(binds: list[str], settings: Settings, token: str, generated: bool) -> None:
    url = binds[0] if binds else f"http://{settings.host}:{settings.port}"
    print(f"connectapi listening on {url}", file=sys.stderr)
    print(f"  Connect API: {url}/api/v1/connect-api/v1   admin: {url}/api/v1/admin", file=sys.stderr)
    if generated:
        # Shown this once; it is kept in the data dir for the CLI.
        print(f"  operator token (generated, shown once): {token}", file=sys.stderr)
    elif settings.admin_token is None:
        print(f"  operator token: in {settings.data_dir / 'admin-token'}", file=sys.stderr)
    sys.stderr.flush()
