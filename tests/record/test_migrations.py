"""Migrations against a real, empty database: in order, once, and safe to race; the SQL
functions from their files in storage/sql, each defined there alone."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import asyncpg
import pytest
import trio

from connectapi.domain.record_archive import BOOKKEEPING
from connectapi.storage import migrations
from connectapi.storage.database import Database, open_database
from connectapi.storage.migrations import (
    FUNCTIONS_TABLE, SqlFunction, apply_migrations, bundled_functions, bundled_migrations, function_file, is_migrated,
    migrate,
)

ROOT = Path(__file__).parents[2]
STORAGE = ROOT / "connectapi" / "storage"
BUDGETS = ROOT / "connectapi" / "budgets"


def test_bundled_migrations_are_numbered_from_one() -> None:
    versions = [m.version for m in bundled_migrations()]
    assert versions == list(range(1, len(versions) + 1))


async def test_migrate_applies_once(empty_dsn: str) -> None:
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        assert not await is_migrated(db)
        applied = await migrate(db)
        assert applied == [m.version for m in bundled_migrations()]
        assert await is_migrated(db)
        assert await migrate(db) == []
        # A newer version migrated while this one still runs (a rolling upgrade): still ready.
        await db.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from a newer version')",
                         bundled_migrations()[-1].version + 1)
        assert await is_migrated(db)


async def test_concurrent_migrations_serialise_on_the_advisory_lock(empty_dsn: str) -> None:
    results: list[list[int]] = []
    async with open_database(empty_dsn, min_size=2, max_size=4) as db:
        async def one() -> None:
            results.append(await migrate(db))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
    assert sorted(results, key=len) == [[], [], [m.version for m in bundled_migrations()]]


async def test_each_function_of_the_schema_is_one_in_use(empty_dsn: str) -> None:
    """0009's connectapi_lock_for_booking outlived its last caller until 0025 dropped it:
    every function left is one the code calls (or a trigger's)."""
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        names = {r["proname"] for r in await db.fetch(
            """SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = 'public' AND NOT EXISTS (SELECT FROM pg_trigger t WHERE t.tgfoid = p.oid)""")}
    called = "\n".join(path.read_text() for path in (ROOT / "connectapi").rglob("*.py"))
    assert names, "the schema has functions"
    assert [name for name in sorted(names) if not re.search(rf"\b{name}\b", called)] == []


def body(sql: str) -> str:
    """What PostgreSQL keeps of a function's file (prosrc): the text between its dollar quotes."""
    start = sql.index("$$", sql.index("CREATE OR REPLACE FUNCTION")) + 2
    return sql[start:sql.rindex("$$")]


async def functions_of(db: Database, namespace: str = "public") -> dict[str, str]:
    """Every function of the schema (triggers' too), by name: its body."""
    rows = await db.fetch("""SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                             WHERE n.nspname = $1""", namespace)
    return {r["proname"]: r["prosrc"] for r in rows}


async def applied_from(db: Database) -> dict[str, str]:
    return {r["name"]: r["sha256"] for r in await db.fetch(f"SELECT name, sha256 FROM {FUNCTIONS_TABLE}")}


def test_each_function_is_defined_once_in_its_file() -> None:
    """A reader finds a function in storage/sql/<name>.sql, and nowhere else: no migration
    creates one, but for a dead one a later migration drops (0009's, dropped by 0025)."""
    files = bundled_functions()
    assert sorted(files) == sorted(p.stem for d in (STORAGE, BUDGETS) for p in (d / "sql").glob("*.sql"))
    assert set(files) == {"connectapi_notify_auth_change", "connectapi_move_availability", "connectapi_new_id",
                          "connectapi_next_booking_numbers",
                          "connectapi_lock_for_bookings", "connectapi_charge_budgets", "connectapi_prune_budgets",
                          "connectapi_reserve_budgets", "connectapi_bump_catalog_version", "connectapi_write_cells"}
    for name, function in files.items():
        created = re.findall(r"CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(\w+)\(", function.sql)
        assert created == [name], f"sql/{name}.sql creates {created}"
    found = bundled_migrations()
    for migration in found:
        code = "\n".join(line for line in migration.sql.splitlines() if not line.lstrip().startswith("--"))
        for created in re.findall(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)", code, re.IGNORECASE):
            assert created not in files, f"{migration.version:04d} defines {created}, which sql/{created}.sql holds"
            dropped = [m.version for m in found if m.version > migration.version
                       and re.search(rf"DROP FUNCTION (IF EXISTS )?{created}\b", m.sql)]
            assert dropped, f"{migration.version:04d} defines {created}: a live function belongs in storage/sql"
    brought = sorted(name for m in found for name in m.functions)
    assert brought == sorted(files), "each file is brought in by exactly one migration"
    assert [m.functions for m in found if m.version == 2] == [("connectapi_notify_auth_change",)]


def test_a_migration_naming_a_function_without_its_file_or_a_file_of_another_function_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = bundled_functions()
    monkeypatch.setattr(migrations, "bundled_functions", lambda: {
        name: f for name, f in real.items() if name != "connectapi_move_availability"})
    with pytest.raises(RuntimeError, match="connectapi_move_availability"):
        bundled_migrations()
    monkeypatch.setattr(migrations, "bundled_functions",
                        lambda: {**real, "connectapi_spare": SqlFunction("connectapi_spare", "")})
    with pytest.raises(RuntimeError, match=r"by no migration.*connectapi_spare"):
        bundled_migrations()
    sql = real["connectapi_prune_budgets"].sql
    assert function_file("connectapi_prune_budgets", sql) == real["connectapi_prune_budgets"]
    for name, text, said in [
        ("connectapi_prune", sql, "must create function connectapi_prune and no other"),
        ("connectapi_prune_budgets", sql + sql, "no other"),
        ("connectapi_prune_budgets", sql.replace("OR REPLACE ", ""), "CREATE OR REPLACE"),
        ("connectapi_prune_budgets", "-- nothing", "no other"),
    ]:
        with pytest.raises(RuntimeError, match=said):
            function_file(name, text)


def test_the_function_files_are_packaged() -> None:
    """The wheel (and so the one-file build, which takes the package's data files) carries them."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, root in (("connectapi.storage", STORAGE), ("connectapi.budgets", BUDGETS)):
        globs = data[package]
        for path in [*(root / "sql").glob("*.sql"), *(root / "migrations").glob("*.sql")]:
            assert any(fnmatch(str(path.relative_to(root)), g) for g in globs), path
    assert FUNCTIONS_TABLE in BOOKKEEPING  # a restore never loads an archive's rows for it


async def test_an_empty_record_gets_exactly_the_functions_of_their_files(empty_dsn: str) -> None:
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        files = bundled_functions()
        assert await functions_of(db) == {name: body(f.sql) for name, f in files.items()}
        assert await applied_from(db) == {name: f.sha256 for name, f in files.items()}
        # Applied again from their files, they stay as they are.
        defined = "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname LIKE 'connectapi%'"
        before = sorted(tuple(r) for r in await db.fetch(defined))
        for function in files.values():
            await db.execute(function.sql)
        assert sorted(tuple(r) for r in await db.fetch(defined)) == before


@pytest.mark.parametrize(("through", "functions"), [
    (1, set()),
    (2, {"connectapi_notify_auth_change"}),
    (10, {"connectapi_notify_auth_change", "connectapi_move_availability", "connectapi_lock_for_booking"}),
    (24, {"connectapi_notify_auth_change", "connectapi_move_availability", "connectapi_lock_for_booking",
          "connectapi_lock_for_bookings", "connectapi_charge_budgets", "connectapi_prune_budgets"}),
])
async def test_an_earlier_layout_has_the_functions_its_migrations_brought_in(
        empty_dsn: str, through: int, functions: set[str]) -> None:
    """`through` (the upgrade test, a restore of an older backup): the functions the
    release of that layout had, so that an archive of it names none we lack."""
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db, through=through)
        assert set(await functions_of(db)) == functions
        assert set(await applied_from(db)) == functions - {"connectapi_lock_for_booking"}
        await migrate(db)
        assert set(await functions_of(db)) == set(bundled_functions())


async def test_a_record_migrated_by_the_previous_release_gets_the_functions_of_their_files(empty_dsn: str) -> None:
    """The previous release created the functions in its migrations and kept no
    schema_functions; a function there may differ from its file (changed since)."""
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        await db.execute(f"DROP TABLE {FUNCTIONS_TABLE}")
        await db.execute("""CREATE OR REPLACE FUNCTION connectapi_prune_budgets(p_now double precision,
                                p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$ BEGIN RETURN -1; END $$""")
        await db.execute("""CREATE OR REPLACE FUNCTION connectapi_notify_auth_change() RETURNS trigger
                            LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$""")
        assert await migrate(db) == []
        files = bundled_functions()
        assert await functions_of(db) == {name: body(f.sql) for name, f in files.items()}
        assert await applied_from(db) == {name: f.sha256 for name, f in files.items()}
        assert await db.fetchval("SELECT connectapi_prune_budgets(NULL, 10)") == 0


async def test_a_changed_file_is_applied_once_and_a_missing_function_again(
        empty_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="connectapi.storage")
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        real = bundled_functions()
        prune = real["connectapi_prune_budgets"]
        changed = SqlFunction(prune.name, prune.sql.replace("RETURN 0;", "RETURN 0;  -- none idle"))
        assert changed.sql != prune.sql
        monkeypatch.setattr(migrations, "bundled_functions", lambda: {**real, prune.name: changed})
        when = "SELECT name, applied_at FROM schema_functions ORDER BY name"
        before = dict(tuple(r) for r in await db.fetch(when))
        caplog.clear()
        assert await migrate(db) == []
        assert (await functions_of(db))[prune.name] == body(changed.sql)
        assert (await applied_from(db))[prune.name] == changed.sha256
        after = dict(tuple(r) for r in await db.fetch(when))
        assert [name for name in after if after[name] != before[name]] == [prune.name]
        assert [r.getMessage() for r in caplog.records] == ["applied SQL functions connectapi_prune_budgets"]

        caplog.clear()
        assert await migrate(db) == []
        assert dict(tuple(r) for r in await db.fetch(when)) == after  # not again
        assert caplog.records == []

        await db.execute("DROP FUNCTION connectapi_move_availability")  # as a migration might
        await migrate(db)
        assert (await functions_of(db))["connectapi_move_availability"] == body(
            real["connectapi_move_availability"].sql)


async def test_a_record_a_newer_release_migrated_keeps_its_functions(empty_dsn: str) -> None:
    """A rolling upgrade: this release starting beside a newer one puts none of its texts back."""
    async with open_database(empty_dsn, min_size=1, max_size=2) as db:
        await migrate(db)
        newer = "BEGIN RETURN -7; END"
        await db.execute(f"""CREATE OR REPLACE FUNCTION connectapi_prune_budgets(p_now double precision,
                                 p_limit integer) RETURNS integer LANGUAGE plpgsql AS $${newer}$$""")
        await db.execute("UPDATE schema_functions SET sha256 = 'newer' WHERE name = 'connectapi_prune_budgets'")
        await db.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from a newer version')",
                         bundled_migrations()[-1].version + 1)
        assert await migrate(db) == []
        assert (await functions_of(db))["connectapi_prune_budgets"] == newer


async def test_migrations_in_a_schema_of_their_own_make_their_functions_there(fresh_dsn: str) -> None:
    """As the restore's check before --force builds the record: in a namespace of its own,
    beside a migrated public schema, in a transaction rolled back."""
    async with open_database(fresh_dsn, min_size=1, max_size=1) as db:

        async def work(conn: asyncpg.Connection) -> dict[str, str]:
            tr = conn.transaction()
            await tr.start()
            try:
                await conn.execute("CREATE SCHEMA connectapi_restore_check_test")
                await conn.execute("SET LOCAL search_path = connectapi_restore_check_test")
                await apply_migrations(conn)
                rows = await conn.fetch(
                    """SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                       WHERE n.nspname = 'connectapi_restore_check_test'""")
                return {r["proname"]: r["prosrc"] for r in rows}
            finally:
                await tr.rollback()

        made = await db.run(work)
        assert made == {name: body(f.sql) for name, f in bundled_functions().items()}
        assert set(await functions_of(db)) == set(bundled_functions())
