"""The README's five-minute tour, run as written against a live service on embedded defaults:
the shell blocks of that section, in order, with only the port and the checkout's path
changed. It must reach a 202
on the rates write with the seed's test key, and the test sandbox must then hold the rate,
as the admin grid shows in test mode. The integration guide's by-hand lines (beside the
libraries) follow, with the tour's variables, as the guide says."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from datetime import date, timedelta
from pathlib import Path

import httpx

from .test_serve_process import Served, free_port

ROOT = Path(__file__).parents[2]


def tour_script() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Five-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    assert len(blocks) >= 5, "the tour's shell blocks"
    return "\n".join(blocks)


def guide_script() -> str:
    """The integration guide's shell lines beside the libraries, but the one that elides."""
    guide = (ROOT / "docs" / "integration-guide.md").read_text()
    section = guide.split("The same steps by hand", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", section, flags=re.S) if "..." not in b]
    assert len(blocks) >= 3, "the guide's shell blocks"
    return "\n".join(blocks)


def test_the_readme_tour_works_as_written(tmp_path: Path) -> None:
    port = free_port()
    served = Served(tmp_path / "var", port)
    try:
        served.wait_for("listening on")
        # Run in a scratch directory (seed.json lands there): the virtualenv is the checkout's.
        script = (tour_script() + "\n" + guide_script()).replace("127.0.0.1:8080", f"127.0.0.1:{port}").replace(
            ".venv/", f"{ROOT}/.venv/")
        # What a newcomer would see, step by step: each answer's status too.
        script = script.replace("curl -s ", "curl -s -w '\\nHTTP %{http_code}\\n' ", -1)
        script = script.replace("| pick data", "| tee -a piped.out | head -n 1 | pick data")
        script = script.replace("| python3 -c", "| tee -a piped.out | head -n 1 | python3 -c")
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, env={"PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin",
                                                "CONNECTAPI_DATA_DIR": str(tmp_path / "var"),
                                                "CONNECTAPI_URL": served.url, "HOME": str(tmp_path)})
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        statuses = re.findall(r"HTTP (\d{3})", run.stdout)
        # property, catalog, batch, sync, cancel; then the guide's batch, availability, restrictions, cancel, list
        assert statuses == ["200", "200", "200", "200", "200", "200", "202", "202", "200", "200"], run.stdout
        piped = re.findall(r"HTTP (\d{3})", (tmp_path / "piped.out").read_text())
        assert piped == ["202", "201", "202", "201"]  # the rates write, the booking; the guide's two
        seed = json.loads((tmp_path / "seed.json").read_text())
        assert seed["key"].startswith("cak_live_") and seed["testKey"].startswith("cak_test_")
        # The tour ends at the console: the owner's link, printed, opens the password page.
        assert seed["owner"]["setupUrl"] in run.stdout
        assert "Choose your password" in httpx.get(seed["owner"]["setupUrl"]).text

        # The grid step again until the push has landed: the sandbox holds the rate.
        night, after = date.today() + timedelta(days=7), date.today() + timedelta(days=8)
        deadline = time.monotonic() + 60
        found: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            shown = subprocess.run(
                [str(ROOT / ".venv" / "bin" / "connectapi"), "admin", "property", "grid", str(seed["propertyId"]),
                 "--mode", "test", "--from", night.isoformat(), "--to", after.isoformat()],
                capture_output=True, text=True, timeout=60,
                env={"PATH": "/usr/bin:/bin", "CONNECTAPI_DATA_DIR": str(tmp_path / "var"),
                     "CONNECTAPI_URL": served.url})
            assert shown.returncode == 0, shown.stderr
            found = json.loads(shown.stdout)["rates"]
            if [r["rateMinor"] for r in found if r["ratePlanId"] == seed["ratePlans"][0]["id"]] == [13500, 13500]:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the test sandbox never held the rate: {found}")
        # The channel manager of the live record heard nothing of the tour's test writes.
        live = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "connectapi"), "admin", "property", "grid", str(seed["propertyId"]),
             "--from", night.isoformat(), "--to", after.isoformat()],
            capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "CONNECTAPI_DATA_DIR": str(tmp_path / "var"), "CONNECTAPI_URL": served.url})
        assert live.returncode == 0, live.stderr
        assert 13500 not in [r["rateMinor"] for r in json.loads(live.stdout)["rates"]]
    finally:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)
