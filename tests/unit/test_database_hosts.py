"""The hosts a DATABASE_URL names, each as a URL of its own."""

from __future__ import annotations

import pytest

from connectapi.domain.database_hosts import hosts_of


def test_a_url_with_several_hosts_gives_one_url_per_host_in_order() -> None:
    assert hosts_of("postgresql://app:pw@10.0.0.1:5432,10.0.0.2:5433/connectapi?target_session_attrs=read-write"
                    "&sslmode=disable") == [
        "postgresql://app:pw@10.0.0.1:5432/connectapi?sslmode=disable",
        "postgresql://app:pw@10.0.0.2:5433/connectapi?sslmode=disable"]
    assert hosts_of("postgres://db-a,db-b/x") == ["postgres://db-a/x", "postgres://db-b/x"]


def test_the_libpq_host_and_port_parameters() -> None:
    assert hosts_of("postgresql://app@/connectapi?host=a,/run/pg&port=5432,5433&target_session_attrs=read-write") == [
        "postgresql://app@/connectapi?host=a&port=5432", "postgresql://app@/connectapi?host=%2Frun%2Fpg&port=5433"]
    assert hosts_of("postgresql:///c?host=a,b,c&port=6000&user=u") == [
        "postgresql:///c?host=a&port=6000&user=u", "postgresql:///c?host=b&port=6000&user=u",
        "postgresql:///c?host=c&port=6000&user=u"]


@pytest.mark.parametrize("dsn", [
    "postgresql://app@one:5432/connectapi?target_session_attrs=read-write", "host=a,b dbname=x",
    "postgresql:///c?host=a,b&port=1,2,3", "postgresql://app@only/db"])
def test_one_host_or_a_form_not_read_stays_as_it_is(dsn: str) -> None:
    assert hosts_of(dsn) == [dsn]
