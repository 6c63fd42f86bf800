"""`connectapi serve` refuses an unsafe start with a sentence, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def serve(data_dir: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CONNECTAPI_"))}
    # Nothing listens there: a start that got past the checks fails at once instead of serving.
    env.update({"CONNECTAPI_DATA_DIR": str(data_dir), "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
                **extra_env})
    return subprocess.run([sys.executable, "-m", "connectapi", "serve", "--port", "0"], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_short_admin_token_stops_the_service_with_a_message(tmp_path: Path) -> None:
    done = serve(tmp_path / "var", {"CONNECTAPI_ADMIN_TOKEN": "x" * 31})
    assert done.returncode == 2, done.stderr
    assert "CONNECTAPI_ADMIN_TOKEN has 31 characters" in done.stderr and "at least 32" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_link_at_admin_token_stops_the_service_with_a_message(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    data_dir.mkdir(mode=0o700)
    (data_dir / "admin-token").symlink_to(tmp_path / "elsewhere")
    done = serve(data_dir, {})
    assert done.returncode == 2, done.stderr
    assert "is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "elsewhere").exists()
