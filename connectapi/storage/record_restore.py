"""`connectapi restore`: a backup's rows put back into a record our migrations built (issue 27).

A backup is as trusted as the database it came from, and a crafted one must not run
anything: pg_restore replays an archive's schema as the superuser, so a function doing
`COPY … TO PROGRAM` and a materialized view calling it ran a shell command at restore.
Here the archive's schema is never taken:

1. Before anything is started (`check_archive`): its table of contents may hold only the
   kinds of object our backups hold (tables, their rows, constraints, indexes, identity
   sequences, our functions and triggers), all in `public`; its schema_migrations rows
   must be our migrations, 1 to N, by number and name.
2. In one transaction on the emptied record (`restore`): our migrations 1 to N build the
   schema, with the functions they bring in from our storage/sql files; every entry of
   the archive must name an object they made; pg_restore writes (never runs) the rows as
   a script, which is read line by line (domain/record_archive) and loaded by COPY
   statements we write, as a role without superuser rights where the server lets us make
   one, tables in the order their references need (the rows of schema_migrations and
   schema_functions are the migrations' own, never the archive's).

docs/operations.md, "Backup and restore".
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from ..domain.record_archive import (
    BOOKKEEPING, MARK_TABLE, Copy, CopyEnd, Item, NotOurs, Row, Schema, SequenceValue, TocEntry, check_item,
    foreign_entries, is_ours_in_shape, load_order, migrations_of, script_items, toc_entries,
)
from .migrations import apply_migrations, bundled_migrations
from .record_copy import CopyError, NotAnArchive, connect, run_tool, said_as_copy_error, tool_said

COPY_CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class Archive:
    """A backup file that passed `check_archive`: its entries and its migrations' number."""
    path: Path
    entries: tuple[TocEntry, ...]
    through: int


def check_archive(path: Path) -> Archive:
    """Refuse, before anything is touched, a file that is not a backup of a connectapi record."""
    if not path.is_file():
        raise NotAnArchive(f"{path}: no such file")
    listed = run_tool("pg_restore", ["--list", str(path)], stdout=subprocess.PIPE)
    if listed.returncode != 0:
        raise NotAnArchive(f"{path} is not a backup made by `connectapi backup` (pg_dump's custom format): "
                           f"{tool_said(listed).removeprefix('pg_restore: error: ')}")
    try:
        entries = toc_entries(listed.stdout.decode("utf-8", "replace"))
        is_ours_in_shape(entries)
        found = _archive_migrations(path)
    except NotOurs as exc:
        raise NotAnArchive(f"{path} is a PostgreSQL archive, but not a backup of a connectapi record: {exc}") from None
    ours = [(m.version, m.name) for m in bundled_migrations()]
    if not found or found[-1][0] > ours[-1][0]:
        raise NotAnArchive(f"{path} is a backup of a record migrated to {found[-1][0] if found else 'nothing'}; this "
                           f"connectapi knows migrations up to {ours[-1][0]}: restore it with a newer connectapi")
    if found != ours[:len(found)]:
        raise NotAnArchive(f"{path} is a PostgreSQL archive, but its migrations are not connectapi's")
    return Archive(path, tuple(entries), found[-1][0])


def _archive_migrations(path: Path) -> list[tuple[int, str]]:
    """The archive's schema_migrations rows, read from the script pg_restore writes to stdout."""
    written = run_tool("pg_restore", ["--data-only", f"--table={MARK_TABLE}", "--file=-", str(path)],
                   stdout=subprocess.PIPE)
    if written.returncode != 0:
        raise NotOurs(f"its {MARK_TABLE} cannot be read: {tool_said(written)}")
    items = script_items(_lines(written.stdout.decode("utf-8", "replace")))
    for item in items:
        if isinstance(item, Copy) and item.table == MARK_TABLE:
            return migrations_of(item.columns, _rows(items))
    return []


def _lines(text: str) -> Iterator[str]:
    """The script's lines, split on line feeds only (as COPY's text format ends its rows:
    a U+2028 in a value is data, not a line break)."""
    for line in text.split("\n"):
        yield line + "\n"


def _rows(items: Iterator[Item]) -> Iterator[str]:
    for item in items:
        if isinstance(item, CopyEnd):
            return
        if isinstance(item, Row):
            yield item.text


async def precheck(archive: Archive, dsn: str) -> None:
    """Everything `restore` checks, made before `--force` drops the record: our migrations
    1 to N built in a schema of their own inside a transaction that is rolled back, the
    archive's entries and every line of its data read against it. Nothing is written; a
    database that does not exist yet has nothing to lose, and is passed over."""

    class Checked(Exception):
        """Ends the transaction: rolled back, as every check passed."""

    async def work() -> None:
        try:
            conn = await connect(dsn)
        except asyncpg.InvalidCatalogNameError:
            return
        try:
            async with conn.transaction():
                namespace = f"connectapi_restore_check_{secrets.token_hex(6)}"
                await conn.execute(f"CREATE SCHEMA {namespace}")
                await conn.execute(f"SET LOCAL search_path = {namespace}")
                await apply_migrations(conn, archive.through)
                schema = await record_schema(conn, namespace)
                with tempfile.TemporaryDirectory(prefix="connectapi-restore-") as scratch:
                    await _checked(archive, schema, Path(scratch), conn, load=False)
                raise Checked
        except Checked:
            pass
        finally:
            await conn.close()

    await said_as_copy_error(work, "the backup could not be checked before the record is replaced (nothing was "
                                   "changed)")


async def restore(archive: Archive, dsn: str) -> None:
    """The archive's rows into the (empty) database at `dsn`, in one transaction: all of it
    or nothing."""

    async def work() -> None:
        conn = await connect(dsn)
        try:
            async with conn.transaction():
                await apply_migrations(conn, archive.through)
                schema = await record_schema(conn)
                with tempfile.TemporaryDirectory(prefix="connectapi-restore-") as scratch:
                    role = await restricted_role(conn)
                    await _checked(archive, schema, Path(scratch), conn, load=True)
                    if role is not None:
                        await drop_role(conn, role)
        finally:
            await conn.close()

    await said_as_copy_error(work, "the restore failed (the record is left as it was before it)")


async def _checked(archive: Archive, schema: Schema, scratch: Path, conn: asyncpg.Connection, load: bool) -> None:
    """The archive's entries against `schema`, then its data script line by line: loaded
    into the record when `load`, else only read. NotOurs becomes NotAnArchive."""
    try:
        foreign = foreign_entries(archive.entries, schema)
        if foreign:
            raise NotOurs(f"it holds {len(foreign)} object(s) that connectapi's migrations do not make, "
                          f"e.g. {foreign[0].kind} {foreign[0].tag}")
        script = _data_script(archive, schema, scratch)
        with script.open("rb") as lines:
            await _load(conn, schema, (line.decode("utf-8") for line in lines), load)
    except NotOurs as exc:
        raise NotAnArchive(f"{archive.path} is not a backup of a connectapi record: {exc}") from None
    except UnicodeDecodeError:
        raise NotAnArchive(f"{archive.path}: its rows are not UTF-8") from None


def _data_script(archive: Archive, schema: Schema, scratch: Path) -> Path:
    """The archive's rows and sequence values as pg_restore writes them to a file, tables in
    the order their references need (pg_restore follows the list's order)."""
    data = {e.tag: e for e in archive.entries if e.kind == "TABLE DATA" and e.tag not in BOOKKEEPING}
    ordered = [data[t] for t in load_order(data, schema.references)]
    ordered += [e for e in archive.entries if e.kind == "SEQUENCE SET"]
    listing, script = scratch / "list", scratch / "data.sql"
    listing.write_text("".join(f"{e.dump_id}; {e.kind} {e.schema} {e.tag}\n" for e in ordered))
    written = run_tool("pg_restore", ["--data-only", f"--use-list={listing}", f"--file={script}", str(archive.path)])
    if written.returncode != 0:
        raise CopyError(f"pg_restore could not read the archive's rows: {tool_said(written)}")
    return script


async def _load(conn: asyncpg.Connection, schema: Schema, lines: Iterator[str], load: bool) -> None:
    items = script_items(lines)
    for item in items:
        if isinstance(item, Copy):
            check_item(item, schema)
            if not load:
                for _ in _rows(items):
                    pass
                continue
            await conn.copy_to_table(item.table, schema_name="public", columns=list(item.columns), format="text",
                                     source=_chunks(_rows(items)))
        elif isinstance(item, SequenceValue):
            check_item(item, schema)
            if load:
                    await conn.execute("SELECT setval(format('public.%I', $1::text)::regclass, $2, $3)",
                                   item.sequence, item.value, item.called)


async def _chunks(rows: Iterator[str]) -> AsyncIterator[bytes]:
    batch: list[bytes] = []
    size = 0
    for row in rows:
        encoded = row.encode("utf-8")
        batch.append(encoded)
        size += len(encoded)
        if size >= COPY_CHUNK_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


async def record_schema(conn: asyncpg.Connection, namespace: str = "public") -> Schema:
    """The objects of a schema (ours: `public`), as the catalog names them."""
    tables = await conn.fetch(
        """SELECT c.relname, array_agg(a.attname::text ORDER BY a.attnum) AS columns
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'u') GROUP BY c.relname""", namespace)
    relations = await conn.fetch(
        """SELECT c.relname::text, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND c.relkind IN ('S', 'i')""", namespace)
    functions = await conn.fetch(
        """SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = $1""", namespace)
    on_tables = await conn.fetch(
        """SELECT c.relname || ' ' || con.conname AS tag FROM pg_constraint con
             JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1
           UNION ALL
           SELECT c.relname || ' ' || t.tgname FROM pg_trigger t
             JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND NOT t.tgisinternal
           UNION ALL
           SELECT c.relname || ' ' || a.attname FROM pg_attrdef d
             JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
             JOIN pg_class c ON c.oid = d.adrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1""", namespace)
    references = await conn.fetch(
        """SELECT c.relname::text AS referring, r.relname::text AS referred FROM pg_constraint con
           JOIN pg_class c ON c.oid = con.conrelid JOIN pg_class r ON r.oid = con.confrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE con.contype = 'f' AND n.nspname = $1""", namespace)
    return Schema(
        tables={r["relname"]: frozenset(r["columns"]) for r in tables},
        sequences=frozenset(r["relname"] for r in relations if r["relkind"] == "S"),
        indexes=frozenset(r["relname"] for r in relations if r["relkind"] == "i"),
        functions=frozenset(r["proname"] for r in functions),
        on_tables=frozenset(r["tag"] for r in on_tables),
        references=tuple((r["referring"], r["referred"]) for r in references),
    )


async def restricted_role(conn: asyncpg.Connection) -> str | None:
    """When the connection is a superuser's: a role of this transaction's own, without
    superuser rights, that may read, add rows and set sequences in the public schema,
    taken for the rest of the transaction (SET LOCAL). None when the connection is no
    superuser already (a DATABASE_URL's own role): the rows load as it."""
    if not await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"):
        return None
    role = f"connectapi_restore_{secrets.token_hex(6)}"
    await conn.execute(f"CREATE ROLE {role} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS")
    await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    await conn.execute(f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {role}")
    await conn.execute(f"GRANT SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    await conn.execute(f"SET LOCAL ROLE {role}")
    return role


async def drop_role(conn: asyncpg.Connection, role: str) -> None:
    """Back to the connection's own role, and the restore's role gone with its grants."""
    await conn.execute("RESET ROLE")
    await conn.execute(f"DROP OWNED BY {role}")
    await conn.execute(f"DROP ROLE {role}")
