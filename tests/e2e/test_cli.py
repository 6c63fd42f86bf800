"""The command line: migrate against DATABASE_URL, and settings that stop the service."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import trio

from connectapi import __version__
from connectapi.__main__ import main
from connectapi.storage.migrations import bundled_migrations


def connectapi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    return subprocess.run([sys.executable, "-m", "connectapi", *args], env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def test_version_is_printed() -> None:
    done = connectapi("--version", env={})
    assert (done.returncode, done.stdout.strip()) == (0, f"connectapi {__version__}")


async def test_migrate_uses_database_url_and_is_idempotent(empty_dsn: str) -> None:
    first = await trio.to_thread.run_sync(lambda: connectapi("migrate", env={"DATABASE_URL": empty_dsn}))
    assert first.returncode == 0, first.stderr
    versions = [m.version for m in bundled_migrations()]
    assert f"applied migrations: {versions}" in first.stdout
    again = await trio.to_thread.run_sync(lambda: connectapi("migrate", env={"DATABASE_URL": empty_dsn}))
    assert "none (up to date)" in again.stdout


@pytest.mark.parametrize(("name", "value"), [
    ("CONNECTAPI_BUDGETS", "requests=lots"),
    ("CONNECTAPI_BUDGETS", "reqests=10"),
    ("CONNECTAPI_TRUSTED_PROXIES", "10.0.0.0/8, not-an-address"),
])
def test_bad_settings_stop_the_service_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["serve", "--port", "1"]) == 2
    assert name in capsys.readouterr().err
