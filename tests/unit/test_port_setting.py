"""The port `connectapi serve` listens on: CONNECTAPI_PORT, unless `--port` says otherwise."""

from __future__ import annotations

import pytest

from connectapi.config import ConfigError, Settings


def test_the_port_is_connectapi_port_unless_serve_port_says_otherwise() -> None:
    assert Settings.from_env({}).port == 8080
    assert Settings.from_env({"CONNECTAPI_PORT": "9090"}).port == 9090
    assert Settings.from_env({"CONNECTAPI_PORT": "9090"}, port=7070).port == 7070  # --port wins


@pytest.mark.parametrize("wrong", ["0", "65536", "80a", "-1", "٣٠", " 80"])
def test_a_port_that_is_not_one_stops_the_start(wrong: str) -> None:
    with pytest.raises(ConfigError, match="CONNECTAPI_PORT"):
        Settings.from_env({"CONNECTAPI_PORT": wrong})
