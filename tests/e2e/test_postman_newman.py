"""The generated Postman collection, run by newman against a live service with a real key:
every request must pass its own test script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from .live import service_with_key

NEWMAN_VERSION = "6.2.2"
CACHE = Path(__file__).parents[2] / ".cache" / "newman"


@pytest.fixture(scope="session")
def newman() -> Path:
    """newman from npm, installed once into .cache/ (the machine has Node.js and npm)."""
    binary = CACHE / "node_modules" / ".bin" / "newman"
    if not binary.exists():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install newman"
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                        f"newman@{NEWMAN_VERSION}"], check=True, capture_output=True, timeout=600)
    return binary


def test_the_collection_runs_green_against_a_live_service(tmp_path: Path, newman: Path) -> None:
    # A test key: the collection ends with the test helpers, which answer test keys only.
    with service_with_key(tmp_path / "var", "postman", mode="test") as (served, key):
        public = httpx.Client(base_url=served.url, timeout=30)
        collection = public.get("/api/v1/connect-api/postman")
        environment = public.get("/api/v1/connect-api/postman", params={"environment": "1"})
        assert collection.status_code == environment.status_code == 200
        env = environment.json()
        assert {v["key"]: v["value"] for v in env["values"]} == {"baseUrl": served.url, "apiKey": ""}
        (tmp_path / "collection.json").write_text(collection.text)
        (tmp_path / "environment.json").write_text(environment.text)
        run = subprocess.run(
            [str(newman), "run", str(tmp_path / "collection.json"), "-e", str(tmp_path / "environment.json"),
             "--env-var", f"apiKey={key}", "--reporters", "cli,json", "--reporter-json-export",
             str(tmp_path / "report.json"), "--color", "off", "--bail"],
            capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())["run"]
    assert report["stats"]["requests"] == {"total": 22, "pending": 0, "failed": 0}
    # two per request (status, envelope), and the change's own check of its new revision
    assert report["stats"]["assertions"]["failed"] == 0 and report["stats"]["assertions"]["total"] == 45
