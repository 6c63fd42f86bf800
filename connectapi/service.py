"""Assembling the running service: record, actors, front; and serving it with hypercorn."""

from __future__ import annotations

import logging
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import trio
import trio_asyncio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from .actors.front_door import FrontDoor
from .actors.outbox import LoggingTransport, OutboxSender, SmtpTransport, Transport
from .actors.booking_intake import BookingIntake, Round
from .actors.webhook_sender import Resolver, WebhookSender, open_webhook_client, resolve
from .actors.property_actor import PropertyActor, PropertyMessage
from .actors.channel_manager import ChannelManagerActor
from .actors.property_writer import PropertyWriter, WriterMessage
from .actors.push_scheduler import PushScheduler
from .actors.pushers import AriProjector, InventoryDrain, Wake
from .actors.reconciler import Reconciler
from .channel.client import open_channel_manager
from .channel.sandbox.serve import serve_sandbox
from .channel.sandbox.state import SandboxState
from .config import Settings, resolve_admin_token
from .domain.addresses import TrustedProxies
from .domain.mail_settings import SmtpSettings
from .engine import Clock, Registry, SystemClock, open_supervisor
from .http.app import create_app
from .http.context import FrontContext
from .domain import idempotency as idem
from .storage import idempotency
from .storage.database import Database, StorageUnavailable, open_database
from .storage.embedded import EmbeddedPostgres, dsn_for_database
from .storage.key_directory import KeyDirectory
from .storage.migrations import migrate

log = logging.getLogger("connectapi")
EMBEDDED_DATABASE = "connectapi"


@asynccontextmanager
async def open_front(settings: Settings, db: Database, clock: Clock, admin_token: str,
                     resolver: Resolver = resolve) -> AsyncIterator[FrontContext]:
    """The actors the front talks to, for the life of the block. `resolver` answers the
    addresses of a webhook endpoint's host (tests give their own).

    Shutdown runs inside out: property actors drain and stop first, the front door last.
    """
    grace = settings.shutdown_grace_seconds
    keys = KeyDirectory(db)
    async with trio.open_nursery() as background:
        await background.start(keys.listen)
        background.start_soon(purge_idempotency_keys, db, clock, settings.janitor_every_seconds)
        sandbox: SandboxState | None = None
        stop_sandbox = trio.Event()
        if settings.cm_url and settings.cm_key:
            cm_url, cm_key = settings.cm_url, settings.cm_key
        else:
            sandbox, cm_key = SandboxState(), secrets.token_urlsafe(24)
            cm_url = await background.start(serve_sandbox, sandbox, cm_key, clock, "127.0.0.1", 0, stop_sandbox)
        async with open_channel_manager(cm_url, cm_key) as client, open_webhook_client() as webhook_client:
            channel = ChannelManagerActor(client, clock)
            async with open_supervisor(shutdown_grace=grace) as root:
                front_door = await root.spawn(
                    "front-door", lambda: FrontDoor(settings.budgets, clock), mailbox_size=1024
                )
                async with open_supervisor(shutdown_grace=grace) as property_supervisor:
                    def registry(name: str, factory: Any, mailbox_size: int = 256) -> Registry[int, Any]:
                        return Registry(property_supervisor, factory, name=name, idle_after=settings.actor_idle_seconds,
                                        ask_timeout=settings.ask_timeout_seconds, mailbox_size=mailbox_size)

                    budgets: Registry[int, PropertyMessage] = registry(
                        "property", lambda pid: PropertyActor(pid, settings.budgets, clock))
                    writers: Registry[int, WriterMessage] = registry("writer", lambda pid: PropertyWriter(pid, db))
                    # One queued wake is as good as many: a mailbox of one.
                    drains: Registry[int, Wake] = registry(
                        "inventory-drain", lambda pid: InventoryDrain(pid, db, channel, clock), 1)
                    projectors: Registry[int, Wake] = registry(
                        "ari-projector", lambda pid: AriProjector(pid, db, channel, clock), 1)
                    scheduler = PushScheduler(drains, projectors, settings.push_paused)
                    async with trio.open_nursery() as sweeps:
                        reconciler = Reconciler(db, channel, scheduler, clock)
                        outbox = OutboxSender(db, clock, mail_transport(settings), settings.outbox_sweep_seconds)
                        sweeps.start_soon(outbox.run_forever)
                        webhook_sender = WebhookSender(db, clock, webhook_client, settings.webhook_allow_private,
                                                       resolver=resolver)
                        sweeps.start_soon(webhook_sender.run_forever)

                        async def intake_settled(done: Round) -> None:
                            for property_id in sorted(done.inventory_moved):
                                await scheduler.wake(property_id, True, False)
                            if done.events:
                                webhook_sender.wake()
                            if done.mails:
                                outbox.wake()

                        intake = BookingIntake(db, clock, client, intake_settled, settings.intake_sweep_seconds)
                        if sandbox is not None:
                            # The in-process sandbox's notification: a trigger, as the real one is.
                            sandbox.bookings.listeners.append(lambda _: intake.wake())
                        sweeps.start_soon(intake.run_forever)
                        if not settings.push_paused:
                            sweeps.start_soon(scheduler.sweep_forever, db, settings.push_sweep_seconds)
                            if settings.reconcile:
                                sweeps.start_soon(reconciler.run_forever)
                        yield FrontContext(
                            db=db,
                            keys=keys,
                            clock=clock,
                            budgets=settings.budgets,
                            proxies=TrustedProxies(settings.trusted_proxies),
                            front_door=front_door,
                            properties=budgets,
                            writers=writers,
                            pushes=scheduler,
                            reconciler=reconciler,
                            outbox=outbox,
                            webhooks=webhook_sender,
                            webhook_allow_private=settings.webhook_allow_private,
                            intake=intake,
                            cm_notify_secret=settings.cm_notify_secret,
                            channel=channel,
                            sandbox=sandbox,
                            sandbox_url=cm_url if sandbox is not None else None,
                            admin_token=admin_token,
                            ask_timeout=settings.ask_timeout_seconds,
                        )
                        sweeps.cancel_scope.cancel()
        stop_sandbox.set()
        background.cancel_scope.cancel()


def mail_transport(settings: Settings) -> Transport:
    if settings.smtp_url:
        return SmtpTransport(SmtpSettings.from_url(settings.smtp_url, settings.smtp_from))
    return LoggingTransport()


async def purge_idempotency_keys(db: Database, clock: Clock, every: float) -> None:
    """Idempotency keys are kept 7 days; forget older ones, now and then on."""
    while True:
        try:
            purged = await idempotency.purge(db, clock.now() - idem.RETENTION)
        except StorageUnavailable as exc:
            log.warning("could not purge idempotency keys: %s", exc)
        else:
            if purged:
                log.info("purged %d idempotency keys older than %s", purged, idem.RETENTION)
        await trio.sleep(every)


def start_record(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    """The DSN of the record: DATABASE_URL, or the embedded server in the data dir."""
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.data_dir)
    return embedded.start(), embedded


async def ensure_database(server_dsn: str, name: str) -> str:
    """Create the embedded server's application database once; return its DSN."""

    async def work() -> None:
        conn = await asyncpg.connect(server_dsn)
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
            if not exists:
                await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    await trio_asyncio.aio_as_trio(work)()
    return dsn_for_database(server_dsn, name)


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
    dsn, embedded = start_record(settings)
    try:
        trio.run(_serve, settings, dsn, embedded is not None, token, generated)
    finally:
        if embedded is not None:
            embedded.stop()


async def _serve(settings: Settings, dsn: str, embedded: bool, token: str, generated: bool) -> None:
    async with trio_asyncio.open_loop():
        app_dsn = await ensure_database(dsn, EMBEDDED_DATABASE) if embedded else dsn
        async with open_database(app_dsn) as db:
            applied = await migrate(db)
            if applied:
                log.info("applied migrations %s", applied)
            async with open_front(settings, db, SystemClock(), token) as ctx:
                config = HypercornConfig()
                config.bind = [f"{settings.host}:{settings.port}"]
                config.accesslog = None
                config.graceful_timeout = settings.shutdown_grace_seconds
                async with trio.open_nursery() as nursery:
                    stop = trio.Event()
                    nursery.start_soon(_wait_for_signal, stop)
                    binds = await nursery.start(_serve_http, create_app(ctx), config, stop)
                    _announce(binds, settings, token, generated)
                    await stop.wait()
                    log.info("stopping")


async def _serve_http(app: object, config: HypercornConfig, stop: trio.Event,
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    await hypercorn_serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)  # type: ignore[arg-type]


async def _wait_for_signal(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            stop.set()
            return


def _announce(binds: list[str], settings: Settings, token: str, generated: bool) -> None:
    url = binds[0] if binds else f"http://{settings.host}:{settings.port}"
    print(f"connectapi listening on {url}", file=sys.stderr)
    print(f"  Connect API: {url}/api/v1/connect-api/v1   admin: {url}/api/v1/admin", file=sys.stderr)
    if generated:
        # Shown this once; it is kept in the data dir for the CLI.
        print(f"  operator token (generated, shown once): {token}", file=sys.stderr)
    elif settings.admin_token is None:
        print(f"  operator token: in {settings.data_dir / 'admin-token'}", file=sys.stderr)
    sys.stderr.flush()
