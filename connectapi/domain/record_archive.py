"""What a backup may hold, judged before any of it reaches the record (issue 27).

A backup is pg_dump's custom format. pg_restore would replay whatever an archive carries as
the superuser: a function doing `COPY … TO PROGRAM` and a materialized view calling it ran
a shell command at restore. So a restore takes nothing of an archive's schema: the schema
is built by our own migrations, and the archive is read for its rows only, as the SQL
script pg_restore writes (never runs) for its data. Every line of that script must be one
of the few shapes our own backups have; the rows go in through COPY statements we write.

Three readings, all pure:
- `toc_entries`: the archive's table of contents (`pg_restore --list`), every line read;
- `foreign_entries`: the entries that are not objects our migrations made;
- `script_items`: the data script, line by line, as COPY blocks, sequence values and
  lines passed over (settings we never apply), refusing anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# pg_dump's entry types, longest first so that "TABLE DATA" is not read as "TABLE".
_TYPES = sorted((
    "TABLE", "TABLE DATA", "SEQUENCE", "SEQUENCE SET", "SEQUENCE OWNED BY", "DEFAULT", "CONSTRAINT",
    "FK CONSTRAINT", "CHECK CONSTRAINT", "INDEX", "INDEX ATTACH", "FUNCTION", "PROCEDURE", "AGGREGATE", "TRIGGER",
    "EVENT TRIGGER", "VIEW", "MATERIALIZED VIEW", "MATERIALIZED VIEW DATA", "EXTENSION", "SCHEMA", "COMMENT", "ACL",
    "DEFAULT ACL", "TYPE", "DOMAIN", "RULE", "POLICY", "ROW SECURITY", "PUBLICATION", "PUBLICATION TABLE",
    "SUBSCRIPTION", "LARGE OBJECT", "BLOB", "BLOBS", "BLOB METADATA", "CAST", "OPERATOR", "OPERATOR CLASS",
    "OPERATOR FAMILY", "COLLATION", "CONVERSION", "FOREIGN TABLE", "FOREIGN DATA WRAPPER", "SERVER",
    "USER MAPPING", "STATISTICS", "STATISTICS DATA", "TABLE ATTACH", "TEXT SEARCH CONFIGURATION",
    "TEXT SEARCH DICTIONARY", "TEXT SEARCH PARSER", "TEXT SEARCH TEMPLATE", "TRANSFORM", "PROCEDURAL LANGUAGE",
    "ACCESS METHOD", "SHELL TYPE", "DATABASE", "DATABASE PROPERTIES", "ENCODING", "STDSTRINGS", "SEARCHPATH",
), key=len, reverse=True)
_ENTRY = re.compile(r"(\d+); (\d+) (\d+) (.+)")
# The kinds of entry our own backups have: tables with their rows, constraints, indexes and
# identity sequences, and the functions and triggers of our migrations.
_RELATIONS = {"TABLE": "table", "TABLE DATA": "table", "SEQUENCE": "sequence", "SEQUENCE SET": "sequence",
              "SEQUENCE OWNED BY": "sequence", "INDEX": "index"}
_ON_A_TABLE = ("CONSTRAINT", "FK CONSTRAINT", "CHECK CONSTRAINT", "TRIGGER", "DEFAULT")
MARK_TABLE = "schema_migrations"  # every record has it; its rows say the layout
# The runner's own tables (storage/migrations.py): the restore's migrations write their rows
# for the record they build, so an archive's rows for them are never loaded.
BOOKKEEPING = (MARK_TABLE, "schema_functions")


class NotOurs(ValueError):
    """The archive holds something no backup of ours holds; the message says what."""


@dataclass(frozen=True)
class TocEntry:
    dump_id: int
    kind: str
    schema: str
    tag: str  # the object's name; "table name" for what belongs to a table
    line: str


@dataclass(frozen=True)
class Schema:
    """The objects our migrations made, as the record's catalog names them."""
    tables: dict[str, frozenset[str]]  # table -> its columns
    sequences: frozenset[str]
    indexes: frozenset[str]
    functions: frozenset[str]
    on_tables: frozenset[str] = field(default_factory=frozenset)  # "table constraint|trigger|column"
    references: tuple[tuple[str, str], ...] = ()  # (table, the table it refers to)


def toc_entries(listing: str) -> list[TocEntry]:
    """Every entry of `pg_restore --list`, one a line (split on line feeds only: pg_restore
    replaces a line break in a name, but not a form feed or U+2028, which `splitlines` would
    split on). A line that is neither a comment nor an entry, a control character in one,
    two entries of one dump id or two of one table's rows are refused, not passed over."""
    entries: list[TocEntry] = []
    seen: set[int] = set()
    rows_of: set[str] = set()
    for line in listing.split("\n"):
        if not line.strip() or line.startswith(";"):
            continue
        if any(ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029" for c in line):
            raise NotOurs(f"a line of the archive's contents has a control character: {_shown(line)}")
        match = _ENTRY.fullmatch(line)
        if match is None:
            raise NotOurs(f"a line of the archive's contents is not an entry: {_shown(line)}")
        rest = match.group(4)
        kind = next((t for t in _TYPES if rest.startswith(t + " ")), None)
        if kind is None:
            raise NotOurs(f"an entry of a kind pg_dump does not write: {_shown(line)}")
        schema, _, named = rest[len(kind) + 1:].partition(" ")
        tag, _, _owner = named.rpartition(" ")
        entry = TocEntry(int(match.group(1)), kind, schema, tag, line)
        if entry.dump_id in seen or (kind == "TABLE DATA" and tag in rows_of):
            raise NotOurs(f"an entry of the archive's contents comes twice: {_shown(line)}")
        seen.add(entry.dump_id)
        if kind == "TABLE DATA":
            rows_of.add(tag)
        entries.append(entry)
    return entries


def is_ours_in_shape(entries: Iterable[TocEntry]) -> None:
    """The check made before anything is started: only kinds of entry our backups have, all
    in the public schema, and the migrations' table among them."""
    seen_mark = False
    for entry in entries:
        if entry.kind not in _RELATIONS and entry.kind not in _ON_A_TABLE and entry.kind != "FUNCTION":
            raise NotOurs(f"it holds a {entry.kind} ({_shown(entry.tag)}), which a backup of connectapi never "
                          "holds")
        if entry.schema != "public":
            raise NotOurs(f"it holds {entry.kind} {_shown(entry.tag)} in schema {_shown(entry.schema)}: a backup of "
                          "connectapi holds the public schema only")
        seen_mark = seen_mark or (entry.kind == "TABLE" and entry.tag == MARK_TABLE)
    if not seen_mark:
        raise NotOurs(f"it has no {MARK_TABLE} table")


def foreign_entries(entries: Iterable[TocEntry], schema: Schema) -> list[TocEntry]:
    """The entries that name no object of `schema` (of the kind the entry says)."""
    foreign = []
    for entry in entries:
        relation = _RELATIONS.get(entry.kind)
        if relation == "table":
            ours = entry.tag in schema.tables
        elif relation == "sequence":
            ours = entry.tag in schema.sequences
        elif relation == "index":
            ours = entry.tag in schema.indexes
        elif entry.kind == "FUNCTION":
            ours = entry.tag.partition("(")[0] in schema.functions
        else:
            ours = entry.tag in schema.on_tables
        if not ours:
            foreign.append(entry)
    return foreign


def load_order(tables: Iterable[str], references: Iterable[tuple[str, str]]) -> list[str]:
    """`tables` with every table after those it refers to (a reference to itself is checked
    at the end of its COPY, so it orders nothing); ties by name. NotOurs on a cycle."""
    pending = sorted(set(tables))
    needs: dict[str, set[str]] = {t: set() for t in pending}
    for table, target in references:
        if table in needs and target in needs and target != table:
            needs[table].add(target)
    ordered: list[str] = []
    while pending:
        ready = [t for t in pending if not needs[t] - set(ordered)]
        if not ready:
            raise NotOurs(f"its tables refer to each other in a circle: {', '.join(pending)}")
        ordered.extend(ready)
        pending = [t for t in pending if t not in ready]
    return ordered


@dataclass(frozen=True)
class Copy:
    """`COPY public.<table> (<columns>) FROM stdin;`: the rows that follow, to `\\.`."""
    table: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class SequenceValue:
    sequence: str
    value: int
    called: bool


@dataclass(frozen=True)
class Row:
    """One line of a COPY block's data, as it came (with its line break)."""
    text: str


@dataclass(frozen=True)
class CopyEnd:
    """The `\\.` that ends a COPY block's rows."""


_IDENT = r'(?:[a-z_][a-z0-9_$]*|"[^"\n]+")'
_COPY = re.compile(rf"COPY public\.({_IDENT}) \(({_IDENT}(?:, {_IDENT})*)\) FROM stdin;")
_SETVAL = re.compile(rf"SELECT pg_catalog\.setval\('public\.({_IDENT})', (\d+), (true|false)\);")
_SETTING = re.compile(r"SET [a-z_]+ = [^;\n]*;")
_PASSED_OVER = (
    re.compile(r"SELECT pg_catalog\.set_config\('search_path', '', false\);"),
    re.compile(r"\\(?:un)?restrict [A-Za-z0-9]+"),  # psql's guard in PostgreSQL 17.6+'s scripts
)


def _unquoted(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


Item = Copy | SequenceValue | Row | CopyEnd


def script_items(lines: Iterable[str]) -> Iterator[Item]:
    """The data script pg_restore writes (`--data-only --file`), item by item. Only its
    settings (never applied: the restore sets its own), COPY blocks and sequence values are
    taken; any other line is refused. The script must say it is UTF-8."""
    in_copy = False
    for line in lines:
        if in_copy:
            if line.rstrip("\n") == "\\.":
                in_copy = False
                yield CopyEnd()
            else:
                yield Row(line)
            continue
        text = line.rstrip("\n")
        if not text or text.startswith("--"):
            continue
        if copy := _COPY.fullmatch(text):
            in_copy = True
            yield Copy(_unquoted(copy.group(1)), tuple(_unquoted(c) for c in copy.group(2).split(", ")))
        elif setval := _SETVAL.fullmatch(text):
            yield SequenceValue(_unquoted(setval.group(1)), int(setval.group(2)), setval.group(3) == "true")
        elif _SETTING.fullmatch(text):
            if text.startswith("SET client_encoding = ") and text != "SET client_encoding = 'UTF8';":
                raise NotOurs(f"its data is not in UTF-8 ({_shown(text)})")
        elif not any(p.fullmatch(text) for p in _PASSED_OVER):
            raise NotOurs(f"its data holds a statement a backup of connectapi never holds: {_shown(text)}")
    if in_copy:
        raise NotOurs("its data ends inside a table's rows")


def check_item(item: Copy | SequenceValue, schema: Schema) -> None:
    """A COPY into one of our tables, naming only its columns; a value of one of our sequences."""
    if isinstance(item, SequenceValue):
        if item.sequence not in schema.sequences:
            raise NotOurs(f"its data sets sequence {_shown(item.sequence)}, which connectapi does not have")
        return
    columns = schema.tables.get(item.table)
    if columns is None or item.table in BOOKKEEPING:
        raise NotOurs(f"its data has rows for {_shown(item.table)}, which a restore does not load")
    unknown = [c for c in item.columns if c not in columns]
    if unknown or len(set(item.columns)) != len(item.columns):
        raise NotOurs(f"its rows for {item.table} name columns it does not have: {', '.join(map(_shown, unknown))}")


def migrations_of(columns: tuple[str, ...], rows: Iterable[str]) -> list[tuple[int, str]]:
    """(version, name) of each row of the archive's schema_migrations (COPY text rows, in
    the order of `columns`), sorted."""
    if "version" not in columns or "name" not in columns:
        raise NotOurs(f"its {MARK_TABLE} has no version or no name")
    version_at, name_at = columns.index("version"), columns.index("name")
    found = []
    for row in rows:
        fields = row.rstrip("\n").split("\t")
        if len(fields) != len(columns) or not fields[version_at].isdigit():
            raise NotOurs(f"its {MARK_TABLE} has a row that is not a migration: {_shown(row)}")
        found.append((int(fields[version_at]), fields[name_at]))
    return sorted(found)


def _shown(text: str) -> str:
    """Text of the archive in a message: one line, cut short, its oddities escaped."""
    shown = text.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 80 else shown[:77] + "..."
