"""clients/python/README.md works as written: its shell block (seed a property, take the
test key, run the quickstart) against the live service, and the quickstart it shows is
the file it runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import Live

ROOT = Path(__file__).parents[2]
README = ROOT / "clients" / "python" / "README.md"
QUICKSTART = ROOT / "clients" / "python" / "examples" / "quickstart.py"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


def test_the_readme_shows_the_quickstart_file() -> None:
    assert QUICKSTART.read_text() in blocks("python")


def test_the_readme_runs_as_written(live: Live, tmp_path: Path) -> None:
    shell = blocks("sh")[0]
    assert "connectapi seed" in shell and "pip install" in shell and "quickstart.py" in shell
    venv = Path(sys.executable).parent
    # The checkout's paths; the client's own virtualenv made here, as the README makes it.
    script = shell.replace(".venv/bin/", f"{venv}/").replace("./clients/python", str(ROOT / "clients" / "python"))
    script = script.replace("clients/python/examples", str(ROOT / "clients" / "python" / "examples"))
    # seed finds the operator token in ./var, as after `make run` at the repository's root.
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "admin-token").write_text(live.admin.headers["Authorization"].removeprefix("Bearer "))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONNECTAPI_")}, "CONNECTAPI_URL": live.url}
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "a test key" in out and "2 cells accepted" in out and "UPCOMING" in out and "cancelled at" in out, out
