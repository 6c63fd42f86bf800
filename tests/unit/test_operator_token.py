"""The operator token's file and the data dir it lives in: ours alone, never through a link,
and a token too short to be safe stops the start."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from connectapi.config import ConfigError, Settings, resolve_admin_token


def settings_in(data_dir: Path, token: str | None = None) -> Settings:
    env = {"CONNECTAPI_DATA_DIR": str(data_dir)}
    if token is not None:
        env["CONNECTAPI_ADMIN_TOKEN"] = token
    return Settings.from_env(env)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_generated_token_is_kept_0600_in_a_0700_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    token, generated = resolve_admin_token(settings_in(data_dir))
    assert generated and len(token) >= 32
    assert (mode(data_dir), mode(data_dir / "admin-token")) == (0o700, 0o600)
    assert resolve_admin_token(settings_in(data_dir)) == (token, False)


def test_a_looser_data_dir_and_token_file_are_tightened_and_it_is_said(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    data_dir.chmod(0o777)
    (data_dir / "admin-token").write_text("cat_" + "k" * 40 + "\n")
    (data_dir / "admin-token").chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="connectapi"):
        assert resolve_admin_token(settings_in(data_dir)) == ("cat_" + "k" * 40, False)
    assert (mode(data_dir), mode(data_dir / "admin-token")) == (0o700, 0o600)
    said = [r.getMessage() for r in caplog.records]
    assert any("data dir" in line and "777" in line and "tightened" in line for line in said), said
    assert any("token file" in line and "644" in line and "tightened" in line for line in said), said


@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "dangling"])
def test_a_link_planted_at_admin_token_is_refused_and_its_target_untouched(tmp_path: Path,
                                                                           target_exists: bool) -> None:
    data_dir = tmp_path / "var"
    data_dir.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    if target_exists:
        target.write_text("someone else's file\n")
        target.chmod(0o644)
    os.symlink(target, data_dir / "admin-token")
    with pytest.raises(ConfigError, match="symbolic link"):
        resolve_admin_token(settings_in(data_dir))
    if target_exists:
        assert (target.read_text(), mode(target)) == ("someone else's file\n", 0o644)
    else:
        assert not target.exists()
    assert (data_dir / "admin-token").is_symlink()


def test_an_operator_token_shorter_than_32_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CONNECTAPI_ADMIN_TOKEN has 31 characters.*at least 32"):
        resolve_admin_token(settings_in(tmp_path / "var", "x" * 31))
    assert resolve_admin_token(settings_in(tmp_path / "var", "x" * 32)) == ("x" * 32, False)
