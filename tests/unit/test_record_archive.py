"""What a backup may hold (domain/record_archive): the table of contents and the data script
as pg_restore writes them, read strictly."""

from __future__ import annotations

import pytest

from connectapi.domain.record_archive import (
    Copy, CopyEnd, NotOurs, Row, Schema, SequenceValue, check_item, foreign_entries, is_ours_in_shape, load_order,
    migrations_of, script_items, toc_entries,
)

# Lines of `pg_restore --list` of a real backup (PostgreSQL 18).
LISTING = """;
; Archive created at 2026-11-26 09:30:57 UTC
;     dbname: rec
;
289; 1255 17072 FUNCTION public connectapi_charge_budgets(double precision, integer[], text[]) postgres
274; 1255 16557 FUNCTION public connectapi_notify_auth_change() postgres
240; 1259 16490 TABLE public schema_migrations postgres
241; 1259 16500 TABLE public properties postgres
242; 1259 16510 SEQUENCE public properties_id_seq postgres
2988; 0 16797 TABLE DATA public properties postgres
2990; 0 16490 TABLE DATA public schema_migrations postgres
3001; 0 0 SEQUENCE SET public properties_id_seq postgres
2600; 2606 16632 CONSTRAINT public properties properties_pkey postgres
2777; 2606 16632 FK CONSTRAINT public api_keys api_keys_property_id_fkey postgres
2700; 1259 16700 INDEX public properties_by_name postgres
2814; 2620 16558 TRIGGER public properties properties_auth_change postgres
"""
SCHEMA = Schema(
    tables={"schema_migrations": frozenset({"version", "name", "applied_at"}),
            "properties": frozenset({"id", "name", "timezone"}), "api_keys": frozenset({"id", "property_id"})},
    sequences=frozenset({"properties_id_seq"}), indexes=frozenset({"properties_by_name"}),
    functions=frozenset({"connectapi_charge_budgets", "connectapi_notify_auth_change"}),
    on_tables=frozenset({"properties properties_pkey", "api_keys api_keys_property_id_fkey",
                         "properties properties_auth_change"}),
    references=(("api_keys", "properties"),),
)


def test_a_real_listing_is_read_and_is_ours() -> None:
    entries = toc_entries(LISTING)
    assert [(e.kind, e.tag) for e in entries][:3] == [
        ("FUNCTION", "connectapi_charge_budgets(double precision, integer[], text[])"),
        ("FUNCTION", "connectapi_notify_auth_change()"), ("TABLE", "schema_migrations")]
    assert ("TABLE DATA", "properties") in [(e.kind, e.tag) for e in entries]
    assert ("FK CONSTRAINT", "api_keys api_keys_property_id_fkey") in [(e.kind, e.tag) for e in entries]
    is_ours_in_shape(entries)
    assert foreign_entries(entries, SCHEMA) == []


@pytest.mark.parametrize(("line", "said"), [
    ("300; 1259 17000 MATERIALIZED VIEW public summary postgres", "MATERIALIZED VIEW"),
    ("301; 0 17000 MATERIALIZED VIEW DATA public summary postgres", "MATERIALIZED VIEW DATA"),
    ("302; 3079 17000 EXTENSION - plpython3u", "EXTENSION"),
    ("303; 3466 17000 EVENT TRIGGER - on_ddl postgres", "EVENT TRIGGER"),
    ("304; 1259 17000 VIEW public v postgres", "VIEW"),
    ("305; 2618 17000 RULE public properties r postgres", "RULE"),
    ("306; 1259 17000 TABLE evil t postgres", "in schema evil"),
    ("307; 0 0 COMMENT - EXTENSION plpgsql", "COMMENT"),
])
def test_kinds_a_backup_of_ours_never_holds_are_refused_before_anything(line: str, said: str) -> None:
    with pytest.raises(NotOurs, match=said):
        is_ours_in_shape(toc_entries(LISTING + line + "\n"))


def test_a_line_that_is_not_an_entry_is_refused() -> None:
    """A name with a line break in it: its second half is no entry, and is not passed over."""
    with pytest.raises(NotOurs, match="not an entry"):
        toc_entries(LISTING + "308; 1259 17000 TABLE public t\nDROP TABLE x postgres\n")
    with pytest.raises(NotOurs, match="pg_dump does not write"):
        toc_entries("309; 1 2 SOMETHING public t postgres\n")


@pytest.mark.parametrize("name", ["keys x\f9999; 0 0 TABLE public zzz", "keys x\u20289999; 0 0 TABLE public zzz",
                                  "keys x\x1c9999; 0 0 TABLE public zzz", "keys\x85x", "keys\tx"])
def test_a_name_with_a_control_character_is_refused_not_split(name: str) -> None:
    """pg_restore replaces a line feed in a name, not a form feed or U+2028: split there, a
    name could make up an entry of its own."""
    with pytest.raises(NotOurs, match="control character"):
        toc_entries(LISTING + f"310; 1259 17000 TABLE public {name} postgres\n")


def test_an_entry_twice_is_refused() -> None:
    with pytest.raises(NotOurs, match="twice"):
        toc_entries(LISTING + "2988; 0 16797 TABLE DATA public api_keys postgres\n")
    with pytest.raises(NotOurs, match="twice"):
        toc_entries(LISTING + "4000; 0 16797 TABLE DATA public properties postgres\n")


def test_a_listing_without_the_migrations_table_is_not_a_record() -> None:
    with pytest.raises(NotOurs, match="no schema_migrations"):
        is_ours_in_shape(toc_entries("241; 1259 16500 TABLE public properties postgres\n"))


@pytest.mark.parametrize("line", [
    "400; 1255 1 FUNCTION public owned() postgres",
    "401; 1259 1 TABLE public summary postgres",
    "402; 0 1 TABLE DATA public summary postgres",
    "403; 1259 1 INDEX public properties_by_evil postgres",
    "404; 2620 1 TRIGGER public properties run_owned postgres",
    "405; 2604 1 DEFAULT public properties name postgres",
    "406; 2606 1 CHECK CONSTRAINT public properties calls_owned postgres",
    "407; 1259 1 SEQUENCE public properties postgres",  # a table's name, as a sequence
])
def test_an_object_our_migrations_do_not_make_is_foreign(line: str) -> None:
    entries = toc_entries(LISTING + line + "\n")
    is_ours_in_shape(entries)
    assert [e.line for e in foreign_entries(entries, SCHEMA)] == [line]


def test_tables_load_after_those_they_refer_to() -> None:
    assert load_order(["webhook_deliveries", "api_keys", "properties", "webhook_events"],
                      [("api_keys", "properties"), ("api_keys", "api_keys"),
                       ("webhook_deliveries", "webhook_events"), ("webhook_events", "properties")]) == [
        "properties", "api_keys", "webhook_events", "webhook_deliveries"]
    with pytest.raises(NotOurs, match="circle"):
        load_order(["a", "b"], [("a", "b"), ("b", "a")])


SCRIPT = """--
-- PostgreSQL database dump
--

\\restrict M0jFLUZSbT2zd5o2wQ7zg9S42LBA3l7ZgdVQDxFvwfrBVWLhaJl2nW7nWqBYWxt

SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);

--
-- Data for Name: properties; Type: TABLE DATA; Schema: public; Owner: postgres
--

COPY public.properties (id, name, timezone) FROM stdin;
1\tCasa\\tAzul\tEurope/Lisbon
2\t\\\\.\tEurope/Paris
\\.


SELECT pg_catalog.setval('public.properties_id_seq', 2, true);

\\unrestrict M0jFLUZSbT2zd5o2wQ7zg9S42LBA3l7ZgdVQDxFvwfrBVWLhaJl2nW7nWqBYWxt
"""


def test_a_data_script_of_ours_is_read_row_by_row() -> None:
    items = list(script_items(SCRIPT.splitlines(keepends=True)))
    assert items == [Copy("properties", ("id", "name", "timezone")),
                     Row("1\tCasa\\tAzul\tEurope/Lisbon\n"), Row("2\t\\\\.\tEurope/Paris\n"), CopyEnd(),
                     SequenceValue("properties_id_seq", 2, True)]
    for item in items:
        if isinstance(item, (Copy, SequenceValue)):
            check_item(item, SCHEMA)


@pytest.mark.parametrize("line", [
    "CREATE FUNCTION owned() RETURNS int LANGUAGE sql AS 'SELECT 1';",
    "COPY public.properties (id) FROM stdin; COPY (SELECT 1) TO PROGRAM 'id';",
    "COPY public.properties (id) FROM PROGRAM 'id';",
    "SELECT pg_catalog.setval('public.properties_id_seq', 2, true); SELECT 1;",
    "SELECT owned();",
    "SET session_replication_role = replica; DROP TABLE properties;",
    "RESET ROLE;",
    "\\! id",
])
def test_any_other_statement_in_the_data_is_refused(line: str) -> None:
    with pytest.raises(NotOurs, match="never holds"):
        list(script_items(["SET client_encoding = 'UTF8';\n", line + "\n"]))


def test_data_in_another_encoding_or_cut_inside_rows_is_refused() -> None:
    with pytest.raises(NotOurs, match="UTF-8"):
        list(script_items(["SET client_encoding = 'LATIN1';\n"]))
    with pytest.raises(NotOurs, match="ends inside"):
        list(script_items(["COPY public.properties (id) FROM stdin;\n", "1\n"]))


@pytest.mark.parametrize(("item", "said"), [
    (Copy("summary", ("n",)), "does not load"),
    (Copy("schema_migrations", ("version", "name")), "does not load"),
    (Copy("properties", ("id", "evil")), "evil"),
    (Copy("properties", ("id", "id")), "columns"),
    (SequenceValue("other_seq", 1, True), "other_seq"),
])
def test_rows_for_what_we_do_not_have_are_refused(item: Copy | SequenceValue, said: str) -> None:
    with pytest.raises(NotOurs, match=said):
        check_item(item, SCHEMA)


def test_the_archives_migrations_are_read_from_its_rows() -> None:
    columns = ("version", "name", "applied_at")
    assert migrations_of(columns, ["2\tauth_change_notify\t2026-11-26 09:30:57+00\n",
                                   "1\tproperties_keys\t2026-11-26 09:30:57+00\n"]) == [
        (1, "properties_keys"), (2, "auth_change_notify")]
    with pytest.raises(NotOurs, match="not a migration"):
        migrations_of(columns, ["x\tproperties_keys\t2026\n"])
    with pytest.raises(NotOurs, match="no version"):
        migrations_of(("name",), [])
