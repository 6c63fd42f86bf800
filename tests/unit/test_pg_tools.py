"""How a DSN is handed to PostgreSQL's programs: the password in the environment, never on
the command line, and a socket dir with a space still found (libpq reads `%20`, not `+`)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from connectapi.storage.pg_tools import libpq_target


def test_the_password_moves_to_the_environment() -> None:
    target, env = libpq_target("postgresql://app:s%40cret@db.example:5433/connect?sslmode=require")
    assert target == "postgresql://app@db.example:5433/connect?sslmode=require"
    assert env == {"PGPASSWORD": "s@cret"}
    target, env = libpq_target("postgresql:///connect?host=/run/pg&password=s3cret")
    assert "s3cret" not in target and env == {"PGPASSWORD": "s3cret"}


def test_a_socket_dir_with_a_space_is_percent_encoded() -> None:
    target, _ = libpq_target("postgresql://postgres:@/connectapi?host=/srv/my data/var/pgdata")
    assert "+" not in target and "%20" in target
    assert parse_qs(urlsplit(target).query)["host"] == ["/srv/my data/var/pgdata"]
