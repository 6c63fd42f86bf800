"""Retention's pure side: the settings, their defaults and bounds, and the horizons."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from connectapi.config import ConfigError, Settings
from connectapi.domain.retention import KINDS, MAX_DAYS, Retention, env_name, events_kept_since, horizon

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_30_days_and_90_for_ota_revisions() -> None:
    kept = Retention()
    assert (kept.batches, kept.deliveries, kept.emails, kept.refusals, kept.ota_revisions) == (30, 30, 30, 30, 90)


def test_horizons_are_now_less_each_retention() -> None:
    horizons = Retention(batches=1, deliveries=2, emails=3, refusals=4, ota_revisions=5).horizons(NOW)
    assert horizons.batches == NOW - timedelta(days=1)
    assert horizons.deliveries == NOW - timedelta(days=2)
    assert horizons.emails == NOW - timedelta(days=3)
    assert horizons.refusals == NOW - timedelta(days=4)
    assert horizons.ota_revisions == NOW - timedelta(days=5)
    assert horizon(NOW, 30) == datetime(2026, 10, 26, 12, 0, tzinfo=UTC)


def test_horizons_need_an_aware_instant() -> None:
    with pytest.raises(ValueError, match="aware"):
        Retention().horizons(datetime(2026, 11, 25, 12, 0))


def test_recover_reaches_back_as_far_as_deliveries_are_kept() -> None:
    assert events_kept_since(Retention(deliveries=7, batches=99), NOW) == NOW - timedelta(days=7)


@pytest.mark.parametrize("days", [0, -1, MAX_DAYS + 1, True, 1.5])
def test_a_retention_is_whole_days_from_one_to_a_century(days: object) -> None:
    with pytest.raises(ValueError, match="batches"):
        Retention(batches=days)  # type: ignore[arg-type]
    assert Retention(batches=MAX_DAYS).horizons(NOW).batches.year == 1926


def test_each_kind_has_its_env_name() -> None:
    assert [env_name(kind) for kind in KINDS] == [
        "CONNECTAPI_RETAIN_BATCHES_DAYS", "CONNECTAPI_RETAIN_DELIVERIES_DAYS", "CONNECTAPI_RETAIN_EMAILS_DAYS",
        "CONNECTAPI_RETAIN_REFUSALS_DAYS", "CONNECTAPI_RETAIN_OTA_REVISIONS_DAYS"]
    with pytest.raises(ValueError):
        env_name("bookings")


def test_settings_read_each_retention_from_the_environment() -> None:
    assert Settings.from_env({}).retention == Retention()
    settings = Settings.from_env({"CONNECTAPI_RETAIN_BATCHES_DAYS": "7", "CONNECTAPI_RETAIN_DELIVERIES_DAYS": "14",
                                  "CONNECTAPI_RETAIN_EMAILS_DAYS": "60", "CONNECTAPI_RETAIN_REFUSALS_DAYS": "1",
                                  "CONNECTAPI_RETAIN_OTA_REVISIONS_DAYS": "365"})
    assert settings.retention == Retention(batches=7, deliveries=14, emails=60, refusals=1, ota_revisions=365)


@pytest.mark.parametrize("name", ["CONNECTAPI_RETAIN_BATCHES_DAYS", "CONNECTAPI_RETAIN_DELIVERIES_DAYS",
                                  "CONNECTAPI_RETAIN_EMAILS_DAYS", "CONNECTAPI_RETAIN_REFUSALS_DAYS",
                                  "CONNECTAPI_RETAIN_OTA_REVISIONS_DAYS"])
@pytest.mark.parametrize("value", ["0", "-3", "30d", "1.5", "thirty", "٣٠", "36501", "9" * 12])
def test_a_bad_retention_stops_the_start(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


@pytest.mark.processes
def test_serve_refuses_a_bad_retention_before_anything_starts(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "CONNECTAPI_DATA_DIR": str(tmp_path / "var"), "CONNECTAPI_RETAIN_EMAILS_DAYS": "0"}
    done = subprocess.run([sys.executable, "-m", "connectapi", "serve", "--port", "0"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "CONNECTAPI_RETAIN_EMAILS_DAYS must be a positive whole number" in done.stderr
    assert not (tmp_path / "var").exists()  # refused before the record was touched
