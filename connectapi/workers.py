"""`connectapi serve --workers N`: N worker processes on one port, and the parent that
keeps them.

The parent does once what a single process does for itself before it serves: the
operator token, the embedded PostgreSQL (which it alone owns and watches), the
application database and its migrations, and the listening socket. Each worker is a
fresh interpreter (`python -m connectapi serve --listen-fd … --parent-fd …`, never a
fork of a process running a Trio loop) running the whole service, actors and hypercorn,
on that one inherited socket, with the record's DSN and the token in its environment.

The parent restarts a worker that dies (after a backoff, domain/worker_pool.py), and on
SIGHUP replaces them one at a time: for each worker a new one is started (the first of
them applies an upgrade's new migrations, with the code now installed), awaited until
it serves, and only then is the old one told to stop (SIGTERM: it drains, its keep-alive
clients are told `Connection: close` and reconnect to the shared socket). SIGINT or
SIGTERM stops every worker the same way, then the embedded server; exit 0.

Workers run in their own process group, so a Ctrl-C at the terminal reaches the parent
alone, which stops them in order. A worker learns that its parent is gone when the
parent's end of their socket pair closes (the parent never writes on it), whatever
killed the parent.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field

import trio
import trio_asyncio

from . import stop_signals
from .actors.record_watchdog import RecordWatchdog
from .bundle import own_command, own_environment
from .config import Settings, resolve_admin_token
from .domain.worker_pool import RestartBackoff, describe_exit
from .engine import open_supervisor
from .http.serving.server import bound_socket, socket_url
from .service import EMBEDDED_DATABASE, SERVICE_POLICY, WORKER_READY, announce, start_record
from .storage.database import open_database
from .storage.embedded import EmbeddedPostgres, ensure_database
from .storage.migrations import migrate

log = logging.getLogger("connectapi.workers")

# A new worker not serving by then is stopped (at start: the service stops; in a reload:
# the reload is abandoned and the old worker keeps serving).
READY_WITHIN = 120.0
# A worker told to stop drains in about 13 s at worst (operations.md): killed after this.
STOP_WITHIN = 30.0


def run_workers(settings: Settings, count: int) -> int:
    """Serve with `count` worker processes until SIGINT or SIGTERM; the exit status (1 when
    a worker ended before it ever served, at start)."""
    token, generated = resolve_admin_token(settings)
    with bound_socket(f"{settings.host}:{settings.port}") as listener:
        dsn, embedded = start_record(settings)
        try:
            return trio.run(_supervise, settings, count, dsn, embedded, token, generated, listener)
        finally:
            if embedded is not None:
                embedded.stop()


async def _supervise(settings: Settings, count: int, dsn: str, embedded: EmbeddedPostgres | None, token: str,
                     generated: bool, listener: socket.socket) -> int:
    with stop_signals.receiving(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        app_dsn = await _prepare_record(dsn, embedded)
        if not settings.cm_url:
            log.warning("no CONNECTAPI_CM_URL: each of the %d workers runs its own in-process sandbox channel "
                        "manager; for one shared channel manager set CONNECTAPI_CM_URL (connectapi sandbox-cm "
                        "serves one)", count)
        env = {**os.environ, "DATABASE_URL": app_dsn, "CONNECTAPI_ADMIN_TOKEN": token}
        async with open_supervisor(SERVICE_POLICY, shutdown_grace=0) as watchers:
            if embedded is not None:
                # Here alone: workers are given the record by its DSN and never start it.
                await watchers.spawn("record-watchdog",
                                     lambda: RecordWatchdog(embedded, settings.watchdog_seconds), mailbox_size=1,
                                     degraded="a dead embedded PostgreSQL is not started again")
            async with trio.open_nursery() as watching:
                pool = WorkerPool(watching, listener.fileno(), env, count)
                stop = trio.Event()
                failed = False
                reloads_send, reloads = trio.open_memory_channel[None](1)

                async def start_then_keep() -> None:
                    nonlocal failed
                    if not await pool.start_all():
                        failed = True
                        stop.set()
                        return
                    announce([socket_url(listener)], settings, token, generated)
                    log.info("serving with %d workers: %s", count, pool.pids(), extra={"workers": pool.pids()})
                    keeping.start_soon(pool.keep)
                    keeping.start_soon(pool.serve_reloads, reloads)

                async with trio.open_nursery() as keeping:
                    keeping.start_soon(_on_signals, signals, stop, reloads_send)
                    keeping.start_soon(start_then_keep)
                    await stop.wait()
                    keeping.cancel_scope.cancel()
                # No worker starts from here: the parent's copy of the socket goes, so that
                # once the workers have drained theirs, connections are refused, not queued.
                listener.close()
                await pool.stop()
        log.info("stopped")
        return 1 if failed else 0


async def _prepare_record(dsn: str, embedded: EmbeddedPostgres | None) -> str:
    """The application database made and migrated, once for every worker; its DSN."""
    async with trio_asyncio.open_loop():
        app_dsn = await ensure_database(dsn, EMBEDDED_DATABASE) if embedded is not None else dsn
        async with open_database(app_dsn, min_size=1, max_size=1) as db:
            applied = await migrate(db)
    if applied:
        log.info("applied migrations %s", applied)
    return app_dsn


async def _on_signals(signals: AsyncIterator[int], stop: trio.Event,
                      reloads: trio.MemorySendChannel[None]) -> None:
    async for signum in signals:
        if signum != signal.SIGHUP:
            log.info("%s: stopping the workers", signal.Signals(signum).name)
            stop.set()
            return
        try:
            reloads.send_nowait(None)
        except trio.WouldBlock:
            log.info("SIGHUP: a reload is already waiting to run")


@dataclass(eq=False)
class Worker:
    slot: int
    process: trio.Process
    parent_end: trio.socket.SocketType
    started_at: float
    ready: trio.Event = field(default_factory=trio.Event)
    exited: trio.Event = field(default_factory=trio.Event)
    retiring: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid


class WorkerPool:
    """`count` slots, each with its current worker. A slot's lock is held while its worker
    is changed, by a restart or a reload, so a slot never gets two."""

    def __init__(self, watching: trio.Nursery, listen_fd: int, env: Mapping[str, str], count: int,
                 backoff: RestartBackoff = RestartBackoff()) -> None:
        self._watching = watching
        self._listen_fd = listen_fd
        self._env = own_environment(env)
        self._backoff = backoff
        self._slots: list[Worker | None] = [None] * count
        self._locks = [trio.Lock() for _ in range(count)]
        self._live: set[Worker] = set()

    def pids(self) -> list[int]:
        return [w.pid for w in self._slots if w is not None]

    async def start_all(self) -> bool:
        """Every slot's first worker, started together; whether all of them serve."""
        async with trio.open_nursery() as nursery:
            for slot in range(len(self._slots)):
                nursery.start_soon(self._first, slot)
        if all(w is not None and w.ready.is_set() and not w.exited.is_set() for w in self._slots):
            return True
        log.error("a worker did not come up: stopping")
        return False

    async def _first(self, slot: int) -> None:
        worker = self._slots[slot] = await self._start(slot)
        await _ready_or_ended(worker, READY_WITHIN)

    async def keep(self) -> None:
        """Start a worker again when one dies on its own, each slot with its backoff."""
        async with trio.open_nursery() as nursery:
            for slot in range(len(self._slots)):
                nursery.start_soon(self._keep, slot)

    async def _keep(self, slot: int) -> None:
        delay: float | None = None
        while True:
            worker = self._slots[slot]
            assert worker is not None
            await worker.exited.wait()
            async with self._locks[slot]:
                if self._slots[slot] is not worker:
                    continue  # replaced by a reload meanwhile
                delay = self._backoff.next_delay(delay, trio.current_time() - worker.started_at)
                log.warning("starting a worker in slot %d again in %.1fs", slot, delay,
                            extra={"slot": slot, "delaySeconds": delay})
                await trio.sleep(delay)
                new = self._slots[slot] = await self._start(slot)
            if await _ready_or_ended(new, READY_WITHIN):
                log.info("worker %d restarted in slot %d", new.pid, slot, extra={"worker": new.pid, "slot": slot})
            elif not new.exited.is_set():
                await self._retire(new)  # it hangs: stopped, and this slot starts another after the backoff

    async def serve_reloads(self, requests: trio.MemoryReceiveChannel[None]) -> None:
        async for _ in requests:
            await self.reload()

    async def reload(self) -> None:
        """Each worker replaced in turn: the new one serves before the old one is told to
        stop, and the old one has exited before the next slot's turn. The first new one
        applies new migrations before it serves; if it fails, nothing is replaced."""
        started = trio.current_time()
        log.info("SIGHUP: reloading %d workers one at a time", len(self._slots))
        for slot in range(len(self._slots)):
            async with self._locks[slot]:
                old = self._slots[slot]
                # The first applies what migrations the code now installed brings (an upgrade).
                new = await self._start(slot, migrate=slot == 0)
                if not await _ready_or_ended(new, READY_WITHIN):
                    log.error("reload abandoned: the new worker %d did not come up; worker %s keeps serving in "
                              "slot %d", new.pid, old.pid if old else None, slot, extra={"worker": new.pid})
                    await self._retire(new)
                    return
                self._slots[slot] = new
            if old is not None:
                await self._retire(old)
            log.info("reload: worker %s replaced by %d in slot %d", old.pid if old else None, new.pid, slot,
                     extra={"worker": new.pid, "slot": slot, "replaced": old.pid if old else None})
        took = trio.current_time() - started
        log.info("reload finished in %.1fs: workers %s", took, self.pids(),
                 extra={"workers": self.pids(), "durationSeconds": round(took, 2)})

    async def stop(self) -> None:
        """Every worker told to stop at once; returns when all have exited."""
        workers = list(self._live)
        log.info("stopping workers %s", sorted(w.pid for w in workers))
        async with trio.open_nursery() as nursery:
            for worker in workers:
                nursery.start_soon(self._retire, worker)

    async def _start(self, slot: int, migrate: bool = False) -> Worker:
        parent_end, worker_end = socket.socketpair()
        with worker_end:
            command = [*own_command(), "serve", "--listen-fd", str(self._listen_fd),
                       "--parent-fd", str(worker_end.fileno()), *(["--migrate"] if migrate else [])]
            # Shielded: a process started is always one the pool knows of, and stops.
            with trio.CancelScope(shield=True):
                process = await trio.lowlevel.open_process(
                    command, env=self._env, stdin=subprocess.DEVNULL, process_group=0,
                    pass_fds=(self._listen_fd, worker_end.fileno()))
        worker = Worker(slot, process, trio.socket.from_stdlib_socket(parent_end), trio.current_time())
        self._live.add(worker)
        self._watching.start_soon(self._watch, worker)
        log.info("worker %d started in slot %d", worker.pid, slot, extra={"worker": worker.pid, "slot": slot})
        return worker

    async def _watch(self, worker: Worker) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_hear_ready, worker)
            code = await worker.process.wait()
            nursery.cancel_scope.cancel()
        worker.parent_end.close()
        self._live.discard(worker)
        worker.exited.set()
        level = logging.INFO if worker.retiring and code == 0 else logging.ERROR
        log.log(level, "worker %d in slot %d %s", worker.pid, worker.slot, describe_exit(code),
                extra={"worker": worker.pid, "slot": worker.slot, "returncode": code})

    async def _retire(self, worker: Worker) -> None:
        """SIGTERM (it drains and exits), or SIGKILL past STOP_WITHIN; returns once it exited."""
        worker.retiring = True
        if worker.exited.is_set():
            return
        with suppress(ProcessLookupError):
            worker.process.terminate()
        with trio.move_on_after(STOP_WITHIN):
            await worker.exited.wait()
            return
        log.error("worker %d did not stop within %ss: killed", worker.pid, STOP_WITHIN, extra={"worker": worker.pid})
        with suppress(ProcessLookupError):
            worker.process.kill()
        await worker.exited.wait()


async def _hear_ready(worker: Worker) -> None:
    heard = b""
    while WORKER_READY not in heard:
        data = await worker.parent_end.recv(64)
        if not data:
            return
        heard += data
    worker.ready.set()
    log.info("worker %d ready in slot %d (%.1fs)", worker.pid, worker.slot,
             trio.current_time() - worker.started_at, extra={"worker": worker.pid, "slot": worker.slot})


async def _ready_or_ended(worker: Worker, within: float) -> bool:
    """Whether `worker` serves within `within` seconds (False: it ended first, or is late)."""
    with trio.move_on_after(within):
        async with trio.open_nursery() as nursery:
            async def first(event: trio.Event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(first, worker.ready)
            nursery.start_soon(first, worker.exited)
    return worker.ready.is_set() and not worker.exited.is_set()
