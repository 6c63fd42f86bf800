"""Several hosts on one machine, as real as it allows: each host a network namespace on one
private bridge, with its own address, processes and routes, made and removed here.

    db1   PostgreSQL primary (Debian's), synchronous replication to db2
    db2   PostgreSQL streaming replica, promotable
    svc1… `connectapi serve --workers 2`, DATABASE_URL naming db1 and db2 (read-write only)
    lb    HAProxy in front of the service hosts, health checks on /readyz
    cm    the sandbox channel manager (`connectapi sandbox-cm`)
    hook  a webhook receiver
    client the load (the test's own thread enters it: `with topo.inside("client")`)

Everything is torn down on exit, also on failure: processes killed, namespaces deleted
(their veths with them), data directories removed. Needs root and iproute2; PostgreSQL 15
and HAProxy from Debian (`make test` installs haproxy and faketime as root).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PG_BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = Path(__file__).parents[2]
TOKEN = "many-machines-operator-token-000000000001"
CM_KEY = "many-machines-sandbox-key-0001"
NOTIFY_SECRET = "many-machines-notify-secret-0001"
SERVICE_PORT = 8080
PG_PORT = 5432
CM_PORT = 9000
CALL_MS = 300  # how long the channel manager takes over each ARI call
HOOK_PORT = 9100
CLIENT_ADDRESSES = 32
_CLONE_NEWNET = 0x40000000


def missing() -> str | None:
    """Why this machine cannot build the topology, or None."""
    if os.geteuid() != 0:
        return "the hosts are network namespaces: root is needed (CI runs as root)"
    for tool in ("ip", "haproxy"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (make test installs it as root: apt-get install iproute2 haproxy faketime)"
    if _libfaketime() is None:
        return "libfaketime is missing (make test installs it as root: apt-get install faketime)"
    if not (PG_BIN / "postgres").exists():
        return f"PostgreSQL 15 is missing at {PG_BIN} (apt-get install postgresql-15)"
    return None


def _libfaketime() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1") + glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    return found[0] if found else None


def sh(*args: str, check: bool = True, timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=timeout, input=input)


@dataclass
class Host:
    name: str
    ns: str
    address: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)


class Topology:
    """Build with `with Topology.built(tmp) as topo:`."""

    def __init__(self, workdir: Path, service_hosts: int = 3, skewed: str | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.extra_env = extra_env or {}
        self.run = secrets.token_hex(2)
        self.workdir = workdir
        self.subnet = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}"
        self.hosts: dict[str, Host] = {}
        self.service_names = [f"svc{n}" for n in range(1, service_hosts + 1)]
        self.skewed = skewed  # a service host whose wall clock runs 10 minutes ahead (faketime)
        self._switch = f"cx{self.run}sw"
        self._pgdirs: dict[str, Path] = {}
        self.primary = "db1"

    # ---- building ---------------------------------------------------------------------

    @classmethod
    @contextmanager
    def built(cls, workdir: Path, service_hosts: int = 3, skewed: str | None = None,
              extra_env: dict[str, str] | None = None) -> Iterator[Topology]:
        topo = cls(workdir, service_hosts, skewed, extra_env)
        with ExitStack() as stack:
            stack.callback(topo.teardown)
            topo._network()
            topo._databases()
            topo._channel_manager()
            topo._receiver()
            for name in topo.service_names:
                topo.start_service(name)
            topo._balancer()
            yield topo

    def _network(self) -> None:
        sh("ip", "netns", "add", self._switch)
        self._in(self._switch, "ip", "link", "add", "br0", "type", "bridge")
        self._in(self._switch, "ip", "link", "set", "br0", "up")
        names = ["db1", "db2", *self.service_names, "lb", "cm", "hook", "client"]
        for n, name in enumerate(names, start=10):
            ns = f"cx{self.run}{name}"
            host = self.hosts[name] = Host(name, ns, f"{self.subnet}.{n}")
            sh("ip", "netns", "add", ns)
            inside, outside = f"cx{self.run}{n}a", f"cx{self.run}{n}b"
            sh("ip", "link", "add", inside, "type", "veth", "peer", "name", outside)
            sh("ip", "link", "set", inside, "netns", ns)
            sh("ip", "link", "set", outside, "netns", self._switch)
            self._in(self._switch, "ip", "link", "set", outside, "master", "br0")
            self._in(self._switch, "ip", "link", "set", outside, "up")
            self._in(ns, "ip", "link", "set", "lo", "up")
            self._in(ns, "ip", "link", "set", inside, "name", "eth0")
            self._in(ns, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
            self._in(ns, "ip", "link", "set", "eth0", "up")
        # The client host speaks for many integrators, each from an address of its own, as
        # the `ip` budgets expect: `client_address(n)`.
        sh("ip", "-n", self.hosts["client"].ns, "-batch", "-",
           input="".join(f"addr add {self.client_address(n)}/24 dev eth0\n" for n in range(CLIENT_ADDRESSES)))

    def client_address(self, n: int) -> str:
        return f"{self.subnet}.{100 + n}"

    def _in(self, ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", ns, *args, check=check)

    def spawn(self, host: str, args: list[str], env: dict[str, str] | None = None,
              label: str = "proc") -> subprocess.Popen[bytes]:
        """A process on `host`, its output in a log file of the work dir."""
        h = self.hosts[host]
        log = self.workdir / f"{host}-{label}.log"
        h.logs.append(log)
        proc = subprocess.Popen(["ip", "netns", "exec", h.ns, *args], env=env, stdout=log.open("ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        h.procs.append(proc)
        return proc

    def _pg(self, *args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", str(PG_BIN / args[0]), *args[1:]]

    def _databases(self) -> None:
        base = Path(tempfile.mkdtemp(prefix=f"cx{self.run}-pg-"))
        base.chmod(0o755)
        shutil.chown(base, "postgres", "postgres")
        self._pgbase = base
        primary = base / "db1"
        self._pgdirs["db1"] = primary
        sh(*self._pg("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                     "--locale=C.UTF-8"), timeout=120)
        (primary / "postgresql.auto.conf").write_text(
            f"listen_addresses = '{self.hosts['db1'].address}'\nport = {PG_PORT}\nwal_level = replica\n"
            "max_wal_senders = 5\nwal_keep_size = '256MB'\nsynchronous_commit = on\nmax_connections = 200\nunix_socket_directories = ''\n"
            "shared_buffers = '64MB'\nfsync = on\n")
        with (primary / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.subnet}.0/24 trust\nhost replication all {self.subnet}.0/24 trust\n")
        self.start_database("db1")
        self._wait_database("db1")
        self.psql("db1", "CREATE DATABASE connectapi")
        replica = base / "db2"
        self._pgdirs["db2"] = replica
        self._in(self.hosts["db2"].ns, *self._pg("pg_basebackup", "-h", self.hosts["db1"].address, "-p",
                                                   str(PG_PORT), "-U", "postgres", "-D", str(replica), "-R",
                                                   "-X", "stream", "-c", "fast"))
        with (replica / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"listen_addresses = '{self.hosts['db2'].address}'\nsynchronous_standby_names = ''\n"
                       f"primary_conninfo = 'host={self.hosts['db1'].address} port={PG_PORT} user=postgres "
                       "application_name=db2'\n")
        self.start_database("db2")
        self._wait_database("db2")
        # Synchronous once the standby streams (before, every commit would wait for it).
        self.psql("db1", "ALTER SYSTEM SET synchronous_standby_names = 'db2'")
        self.psql("db1", "SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while self.psql("db1", "SELECT sync_state FROM pg_stat_replication").strip() != "sync":
            assert time.monotonic() < deadline, "db2 never became db1's synchronous standby"
            time.sleep(0.2)

    def start_database(self, host: str) -> None:
        self.spawn(host, self._pg("postgres", "-D", str(self._pgdirs[host])), label="postgres")

    def _wait_database(self, host: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self._in(self.hosts[host].ns, str(PG_BIN / "pg_isready"), "-h", self.hosts[host].address, "-p",
                       str(PG_PORT), check=False).returncode != 0:
            assert time.monotonic() < deadline, f"PostgreSQL on {host} did not start"
            time.sleep(0.2)

    def psql(self, host: str, sql: str, db: str = "postgres") -> str:
        done = self._in(self.hosts[host].ns, *self._pg("psql", "-h", self.hosts[host].address, "-p",
                                                         str(PG_PORT), "-d", db, "-AtX", "-c", sql))
        return done.stdout

    @property
    def database_url(self) -> str:
        hosts = ",".join(f"{self.hosts[h].address}:{PG_PORT}" for h in ("db1", "db2"))
        return f"postgresql://postgres@{hosts}/connectapi?target_session_attrs=read-write"

    def _channel_manager(self) -> None:
        """Its booking notifications go to the balancer, as Channex's webhook would: any
        service host may take them."""
        env = {**_clean_env(), "CONNECTAPI_CM_KEY": CM_KEY, "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET}
        self.spawn("cm", [sys.executable, "-m", "connectapi", "sandbox-cm", "--host", self.hosts["cm"].address,
                          "--port", str(CM_PORT), "--call-ms", str(CALL_MS),
                          "--notify-url", f"{self.url}/api/v1/channel-manager/notify"], env, label="sandbox")
        self.wait_http("cm", f"http://{self.hosts['cm'].address}:{CM_PORT}/_sandbox/stats",
                       headers={"user-api-key": CM_KEY})

    def _receiver(self) -> None:
        script = ROOT / "tests" / "hosts" / "receiver.py"
        self.spawn("hook", [sys.executable, str(script), self.hosts["hook"].address, str(HOOK_PORT),
                            str(self.workdir / "deliveries.jsonl")], label="receiver")

    def service_env(self, host: str) -> dict[str, str]:
        return {**_clean_env(), "DATABASE_URL": self.database_url, "CONNECTAPI_ADMIN_TOKEN": TOKEN,
                "CONNECTAPI_CM_URL": f"http://{self.hosts['cm'].address}:{CM_PORT}", "CONNECTAPI_CM_KEY": CM_KEY,
                "CONNECTAPI_CM_NOTIFY_SECRET": NOTIFY_SECRET,
                "CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1", "CONNECTAPI_DATA_DIR": str(self.workdir / host),
                "CONNECTAPI_TRUSTED_PROXIES": self.hosts["lb"].address, **self.extra_env}

    def start_service(self, host: str) -> None:
        args = [sys.executable, "-m", "connectapi", "serve", "--host", self.hosts[host].address, "--port",
                str(SERVICE_PORT), "--workers", "2"]
        env = self.service_env(host)
        if host == self.skewed:
            # libfaketime preloaded, not the `faketime` wrapper: the wrapper makes a semaphore
            # and a shared-memory segment named by its pid and leaves them when killed, so a
            # later run given the same pid failed to start ("sem_open: File exists"). A fixed
            # offset needs no state shared between the service's processes.
            env = {**env, "LD_PRELOAD": str(_libfaketime()), "FAKETIME": "+10m"}
        self.spawn(host, args, env, label="serve")
        self.wait_http(host, f"http://{self.hosts[host].address}:{SERVICE_PORT}/readyz", timeout=120)

    def restart_service(self, host: str) -> None:
        """The host's service stopped (SIGTERM, as a deploy does) and started again."""
        for proc in [p for p in self.hosts[host].procs if p.poll() is None]:
            _kill_group(proc, signal.SIGTERM)
            proc.wait(30)
        self.start_service(host)

    def _balancer(self) -> None:
        # Each host twice: checked on /readyz, and as an unchecked backup, used only when no
        # host is ready (no primary database: every host answers the contract's 503 with
        # Retry-After, where HAProxy's own page has neither; and the first request after a
        # promotion is served, without waiting for the checks to rise again).
        servers = "\n".join(f"    server {name} {self.hosts[name].address}:{SERVICE_PORT} check inter 1s fall 2 "
                            "rise 2" for name in self.service_names) + "\n" + "\n".join(
            f"    server {name}-unready {self.hosts[name].address}:{SERVICE_PORT} backup"
            for name in self.service_names)
        config = self.workdir / "haproxy.cfg"
        # Each request logged (its accept time, idle ms before it on a kept-alive connection,
        # total ms, ms the server took to answer or -1, server, status, termination state,
        # client, request line): a failing scenario says where its slow requests went.
        config.write_text(f"""global
    maxconn 2000
    log stdout format raw local0
defaults
    mode http
    log global
    log-format "%Ts.%ms %Ti %Ta %Tr %s %ST %tsc %ci %{{+Q}}r"
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    option forwardfor
    retries 2
    option redispatch
frontend api
    bind {self.hosts['lb'].address}:{SERVICE_PORT}
    default_backend services
backend services
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    option allbackups
{servers}
""")
        self.spawn("lb", ["haproxy", "-f", str(config), "-db"], label="haproxy")
        self.wait_http("lb", f"{self.url}/healthz")

    def slow_requests(self, since: float, over_ms: int, most: int = 20) -> list[str]:
        """The balancer's log lines of requests that came after `since` (wall clock) and took
        over `over_ms`, got no answer from a server, or ended abnormally (a client that gave
        up, a server that closed): "seconds-from-since total-ms server-ms server status
        state client request"."""
        log = self.workdir / "lb-haproxy.log"
        slow = []
        for line in (log.read_text(errors="replace").splitlines() if log.exists() else []):
            fields = line.split(" ", 5)
            try:
                accepted, idle, took, answered = float(fields[0]), int(fields[1]), int(fields[2]), int(fields[3])
                state = fields[5].split(" ", 2)[1]
            except (ValueError, IndexError):
                continue  # HAProxy's own notices
            at = accepted + max(idle, 0) / 1000  # the accept date of a kept-alive request is its idle start
            if at >= since and (took > over_ms or answered < 0 or not state.startswith("--")):
                slow.append(f"{at - since:.2f} {took} {answered} {fields[4]} {fields[5]}")
        return slow[:most]

    @property
    def url(self) -> str:
        return f"http://{self.hosts['lb'].address}:{SERVICE_PORT}"

    def url_of(self, host: str) -> str:
        return f"http://{self.hosts[host].address}:{SERVICE_PORT}"

    @property
    def cm_url(self) -> str:
        return f"http://{self.hosts['cm'].address}:{CM_PORT}"

    def wait_http(self, host: str, url: str, timeout: float = 60, headers: dict[str, str] | None = None) -> None:
        """Until `url` answers 200, asked from inside `host`."""
        deadline = time.monotonic() + timeout
        with self.inside(host):
            while True:
                try:
                    if httpx.get(url, timeout=2, headers=headers).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    tail = "".join(log.read_text()[-3000:] for log in self.hosts[host].logs if log.exists())
                    raise AssertionError(f"{url} never answered 200 on {host}:\n{tail}")
                time.sleep(0.2)

    # ---- the test's own thread on a host -------------------------------------------------

    @contextmanager
    def inside(self, host: str) -> Iterator[None]:
        """This thread's sockets are made in `host`'s network namespace meanwhile (setns is
        per thread); the thread goes back to where it was after."""
        libc = ctypes.CDLL(None, use_errno=True)
        back = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        there = os.open(f"/run/netns/{self.hosts[host].ns}", os.O_RDONLY)
        try:
            if libc.setns(there, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {host}")
            try:
                yield
            finally:
                if libc.setns(back, _CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(there)
            os.close(back)

    # ---- faults --------------------------------------------------------------------------

    def cut_from_databases(self, host: str) -> None:
        """`host` loses its network to both database hosts, and keeps it to everyone else."""
        ns, (db1, db2) = self.hosts[host].ns, (self.hosts["db1"].address, self.hosts["db2"].address)
        # Two commands in all, quickly: a test cuts while a call is under way.
        sh("ip", "-n", ns, "-batch", "-", input=f"route add blackhole {db1}/32\nroute add blackhole {db2}/32\n")
        # Established connections die at once (as on a real cut, the packets go nowhere).
        self._in(ns, "ss", "-K", f"( dst {db1} or dst {db2} )", check=False)

    def heal(self, host: str) -> None:
        for db in ("db1", "db2"):
            self._in(self.hosts[host].ns, "ip", "route", "del", "blackhole", f"{self.hosts[db].address}/32",
                     check=False)

    def kill_host(self, host: str) -> None:
        """Power off: every process of the host killed at once."""
        for proc in self.hosts[host].procs:
            _kill_group(proc, signal.SIGKILL)
        pids = self._in(self.hosts[host].ns, "ip", "netns", "pids", self.hosts[host].ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def kill_primary(self) -> None:
        self.kill_host(self.primary)

    def promote(self, host: str = "db2") -> None:
        sh(*self._pg("pg_ctl", "promote", "-D", str(self._pgdirs[host]), "-w"), timeout=60)
        self.primary = host

    def restart_stale(self, host: str = "db1") -> None:
        """The old primary comes back as it was: a primary of a timeline the cluster left."""
        self.start_database(host)
        self._wait_database(host)

    def pids(self, host: str) -> set[int]:
        return {int(p) for p in sh("ip", "netns", "pids", self.hosts[host].ns, check=False).stdout.split()}

    def holder_host(self, holder: str) -> str | None:
        """The service host whose process a lease holder (`hostname:pid:random`) is."""
        pid = int(holder.split(":")[1])
        return next((name for name in self.service_names if pid in self.pids(name)), None)

    @property
    def hook_url(self) -> str:
        return f"http://{self.hosts['hook'].address}:{HOOK_PORT}"

    def deliveries(self) -> list[dict[str, Any]]:
        """What the webhook receiver was sent, in arrival order (tests/hosts/receiver.py)."""
        kept = self.workdir / "deliveries.jsonl"
        return [json.loads(line) for line in kept.read_text().splitlines()] if kept.exists() else []

    def sandbox_stats(self) -> dict[str, object]:
        return dict(self._sandbox_state()["stats"])

    def sandbox_pushing(self) -> dict[str, float]:
        """The channel manager's properties with an ARI call under way, and for how long."""
        return dict(self._sandbox_state()["pushing"])

    def sandbox_call_time(self, call_ms: int) -> None:
        """How long the channel manager takes over each ARI call from now on."""
        with self.inside("cm"):
            got = httpx.post(f"{self.cm_url}/_sandbox/call-time", json={"callMs": call_ms},
                             headers={"user-api-key": CM_KEY}, timeout=10)
        got.raise_for_status()

    def _sandbox_state(self) -> dict[str, Any]:
        with self.inside("cm"):
            got = httpx.get(f"{self.cm_url}/_sandbox/stats", headers={"user-api-key": CM_KEY}, timeout=10)
        return dict(got.json())

    # ---- tearing down --------------------------------------------------------------------

    def teardown(self) -> None:
        skewed_pids = self._skewed_pids()
        for host in self.hosts.values():
            for proc in host.procs:
                _kill_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for host in self.hosts.values():
            for proc in host.procs:
                try:
                    proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _kill_group(proc, signal.SIGKILL)
                    proc.wait(10)
        for host in self.hosts.values():
            for pid in sh("ip", "netns", "pids", host.ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", host.ns, check=False)
        sh("ip", "netns", "del", self._switch, check=False)
        if getattr(self, "_pgbase", None) is not None:
            shutil.rmtree(self._pgbase, ignore_errors=True)
        # libfaketime names a semaphore and a segment by the pid of a process that forks, and
        # leaves them: they would pile up in /dev/shm run after run.
        for pid in skewed_pids:
            for name in (f"sem.faketime_sem_{pid}", f"faketime_shm_{pid}"):
                Path("/dev/shm", name).unlink(missing_ok=True)

    def _skewed_pids(self) -> list[str]:
        if self.skewed is None or self.skewed not in self.hosts:
            return []
        host = self.hosts[self.skewed]
        listed = sh("ip", "netns", "pids", host.ns, check=False).stdout.split()
        return sorted({*listed, *(str(proc.pid) for proc in host.procs)})


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}

