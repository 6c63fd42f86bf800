"""The record's schema: numbered SQL migrations (`migrations/NNNN_name.sql`) and the SQL
functions as they are now (`sql/<function name>.sql`), applied in one transaction under an
advisory lock.

Several processes may start at once; the lock makes one of them apply and the others
find the work done.

Migrations change tables, indexes and triggers, in order, each once (recorded in
`schema_migrations`); a released migration is not edited in what it does to a record.
Nothing reads a migration's text once it is applied (`schema_migrations`, `is_migrated`,
`connectapi status` and a restore's checks go by number and name), so moving the function
definitions out of the released 0002, 0008, 0012, 0013 and 0016 (issue 28) changed nothing
for a record already migrated. A migration left with comments only is passed over.

A function is defined in one place, its file in `sql/`, which holds it as it is now (one
`CREATE OR REPLACE FUNCTION` named as the file, with its comments), and is brought in by
one migration, which says so on a line of its own: `-- functions: name[, name…]`. The
runner applies a function's file
- before the migration that brings it in runs (a trigger of that migration, or of a later
  one, finds its function; a function's file must therefore be one PostgreSQL can create
  at that point: plpgsql bodies are only parsed, but its argument and result types must
  exist), and
- after the migrations, whenever its text differs from the one last applied or the
  function is missing: `schema_functions` keeps the sha256 of the text each function was
  last applied from. A record the previous releases migrated (their migrations created
  the functions inline) gets every function from its file on the first start.

So an edit of a function's file is applied at the next start, once. A function whose
arguments or result type change needs a migration that drops the old one (`DROP FUNCTION
IF EXISTS name(old argument types)`: on an empty record the file was applied with the new
ones); the file is then applied after it, the function being missing. A function that
dies gets a migration dropping it, and its last definition goes back into the migration
that brought it in, in place of the `-- functions:` line (as 0009's
connectapi_lock_for_booking, dropped by 0025): an empty record still has it between the
two, as the releases between them had it, and a restore of a backup taken then finds it.

`through` (an earlier release's layout: the upgrade test, and a restore of an older
backup) applies the migrations up to that version and the functions they bring in.

When the record holds migrations newer than this code (a newer release migrated it and
this one still runs beside it: a rolling upgrade), no function is applied: the newer
release's texts stay. tests/record/test_migrations.py holds these rules, and
docs/decisions/0109-sql-functions-as-files.md says why.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from importlib import resources

import asyncpg

from .database import Database

log = logging.getLogger("connectapi.storage")

# Any constant that no other user of the database takes; "connectapi" in ASCII.
MIGRATION_LOCK_ID = 0x636F6E6E656374
_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")
_FUNCTION_FILE = re.compile(r"([a-z][a-z0-9_]*)\.sql")
_BRINGS = re.compile(r"^-- functions: (.+)$", re.MULTILINE)
_CREATES = re.compile(r"\bCREATE\s+(OR\s+REPLACE\s+)?FUNCTION\s+([\w.\"]+)", re.IGNORECASE)
FUNCTIONS_TABLE = "schema_functions"


@dataclass(frozen=True, slots=True)
class SqlFunction:
    name: str
    sql: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    functions: tuple[str, ...] = field(default=())  # the functions it brings in (`-- functions:`)

    @property
    def has_statements(self) -> bool:
        return any(line.strip() and not line.lstrip().startswith("--") for line in self.sql.splitlines())


# The packages whose `sql/` holds SQL functions: the record's, and the budgets', whose
# statement lives beside the rules it applies (connectapi/budgets).
FUNCTION_PACKAGES = ("connectapi.storage", "connectapi.budgets")


def bundled_functions() -> dict[str, SqlFunction]:
    """The files of each FUNCTION_PACKAGES' `sql/`, by function name; each must create the
    function it is named after, and nothing else, and a name is in one file only."""
    found: dict[str, SqlFunction] = {}
    for package in FUNCTION_PACKAGES:
        for entry in resources.files(package).joinpath("sql").iterdir():
            match = _FUNCTION_FILE.fullmatch(entry.name)
            if match:
                if match.group(1) in found:
                    raise RuntimeError(f"{match.group(1)}.sql is in more than one package's sql/")
                found[match.group(1)] = function_file(match.group(1), entry.read_text("utf-8"))
    return dict(sorted(found.items()))


def function_file(name: str, sql: str) -> SqlFunction:
    """`sql/<name>.sql`, refused unless it creates function `name`, and no other, with
    CREATE OR REPLACE (it is applied again whenever it changes)."""
    creates = _CREATES.findall(sql)
    if [created for _, created in creates] != [name]:
        raise RuntimeError(f"sql/{name}.sql must create function {name} and no other: it creates "
                           f"{[created for _, created in creates]}")
    if not creates[0][0]:
        raise RuntimeError(f"sql/{name}.sql must say CREATE OR REPLACE FUNCTION: it is applied again whenever it "
                           "changes")
    return SqlFunction(name, sql)


def bundled_migrations() -> list[Migration]:
    functions = bundled_functions()
    found = []
    for entry in resources.files("connectapi.storage").joinpath("migrations").iterdir():
        match = _NAME.fullmatch(entry.name)
        if match:
            sql = entry.read_text("utf-8")
            brings = tuple(name.strip() for line in _BRINGS.findall(sql) for name in line.split(","))
            missing = [name for name in brings if name not in functions]
            if missing:
                raise RuntimeError(f"migration {entry.name} brings in functions that sql/ has no file for: {missing}")
            found.append(Migration(int(match.group(1)), match.group(2), sql, brings))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    brought = [name for m in found for name in m.functions]
    problems = []
    if twice := sorted({name for name in brought if brought.count(name) > 1}):
        problems.append(f"brought in by more than one migration: {', '.join(twice)}")
    if unbrought := sorted(set(functions) - set(brought)):
        problems.append(f"brought in by no migration (`-- functions: name` on a line of one): {', '.join(unbrought)}")
    if problems:
        raise RuntimeError(f"functions of sql/ {'; '.join(problems)}")
    return found


MIGRATION_TIMEOUT = 3600.0


ID_KINDS = ("bookings", "booking_rooms")  # connectapi_new_id's kinds


async def migrate(db: Database, through: int | None = None) -> list[int]:
    """Apply what is missing (up to version `through`, when given: the record as an earlier
    release left it, for the upgrade test); returns the versions applied now. A whole
    record also gets the keys of its ids, if it has none yet."""
    async def work(conn: asyncpg.Connection) -> list[int]:
        applied = await apply_migrations(conn, through)
        if through is None:
            await make_id_keys(conn)
        return applied

    # The lock's wait and each migration carry their own timeout (MIGRATION_TIMEOUT): the
    # whole is not cut off at the command timeout, but at twice that (a wait, then the work).
    return await db.transaction(work, within=2 * MIGRATION_TIMEOUT)


async def make_id_keys(conn: asyncpg.Connection) -> None:
    """The keys of connectapi_new_id (migration 0030), made and committed at start, before
    any booking: made by a booking's own transaction (its fallback), the record's first
    key held every other property's bookings until that booking committed. Not made by
    the migration itself: a restore loads the archive's keys into the tables it built."""
    await conn.execute(
        """INSERT INTO id_keys (kind, secret)
           SELECT kind, md5(gen_random_uuid()::text) || md5(gen_random_uuid()::text) FROM unnest($1::text[]) AS kind
           ON CONFLICT (kind) DO NOTHING""", list(ID_KINDS))


async def apply_migrations(conn: asyncpg.Connection, through: int | None = None) -> list[int]:
    """`migrate` on a connection already in a transaction (a restore builds the schema and
    loads the rows in one)."""
    bundled = bundled_migrations()
    migrations = [m for m in bundled if through is None or m.version <= through]
    functions = bundled_functions()
    # Waiting for another process's migrations, or a migration rewriting a big table,
    # may take longer than any request's statement is allowed to.
    await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_ID, timeout=MIGRATION_TIMEOUT)
    await conn.execute(
        """CREATE TABLE IF NOT EXISTS schema_migrations (
               version integer PRIMARY KEY,
               name text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())"""
    )
    await conn.execute(
        f"""CREATE TABLE IF NOT EXISTS {FUNCTIONS_TABLE} (
               name text PRIMARY KEY,
               sha256 text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())"""
    )
    done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
    # A newer release migrated the record (it runs beside this one): its functions stay.
    newer = any(version > (migrations[-1].version if migrations else 0) for version in done)
    applied: list[int] = []
    functions_applied: list[str] = []
    for migration in migrations:
        if migration.version in done:
            continue
        functions_applied += await apply_functions(conn, [functions[name] for name in migration.functions])
        if migration.has_statements:  # not only comments (a function brought in): asyncpg fails an empty query
            await conn.execute(migration.sql, timeout=MIGRATION_TIMEOUT)
        await conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            migration.version, migration.name,
        )
        applied.append(migration.version)
    if not newer:
        functions_applied += await apply_functions(
            conn, [functions[name] for migration in migrations for name in migration.functions])
    if functions_applied:
        log.info("applied SQL functions %s", ", ".join(functions_applied))
    return applied


async def apply_functions(conn: asyncpg.Connection, functions: list[SqlFunction]) -> list[str]:
    """Each of `functions` whose text differs from the one it was last applied from, or that
    the schema lacks; returns their names. In the caller's transaction, under the lock."""
    if not functions:
        return []
    last = {r["name"]: r["sha256"] for r in await conn.fetch(f"SELECT name, sha256 FROM {FUNCTIONS_TABLE}")}
    present = {r["proname"] for r in await conn.fetch(
        """SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = current_schema()""")}
    applied = []
    for function in functions:
        if last.get(function.name) == function.sha256 and function.name in present:
            continue
        await conn.execute(function.sql, timeout=MIGRATION_TIMEOUT)
        await conn.execute(
            f"""INSERT INTO {FUNCTIONS_TABLE} (name, sha256) VALUES ($1, $2)
                ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, applied_at = excluded.applied_at""",
            function.name, function.sha256,
        )
        applied.append(function.name)
    return applied


async def is_migrated(db: Database) -> bool:
    latest = bundled_migrations()[-1].version

    async def work(conn: asyncpg.Connection) -> bool:
        exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
        if not exists:
            return False
        # A newer schema is ready too: a newer version migrated while this one still runs
        # beside it (a rolling upgrade); migrations only add, so this one still works.
        return bool(await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations") >= latest)

    return await db.run(work)
