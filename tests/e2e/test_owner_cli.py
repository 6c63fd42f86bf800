"""`connectapi seed` gives the sample property an owner with a console setup link, and
`connectapi admin owners …` manages owners, against a live service."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from .test_cli import connectapi
from .test_serve_process import Served, free_port


def test_seed_prints_an_owner_login_and_owners_are_managed_from_the_cli(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    served = Served(data_dir, free_port())
    env = {"CONNECTAPI_DATA_DIR": str(data_dir), "CONNECTAPI_URL": served.url}
    try:
        served.wait_for("listening on")
        first = connectapi("seed", env=env)
        assert first.returncode == 0, first.stderr
        seed = json.loads(first.stdout)
        assert seed["owner"]["email"] == "owner@sample-guesthouse.example"
        link = seed["owner"]["setupUrl"]
        assert link.startswith(f"{served.url}/console/setup/") and "/console/" in first.stderr
        page = httpx.get(link)
        assert page.status_code == 200 and "Choose your password" in page.text

        second = json.loads(connectapi("seed", env=env).stdout)
        assert httpx.get(link).status_code == 404, "a new seed's link replaces the old one"
        assert httpx.get(second["owner"]["setupUrl"]).status_code == 200

        listed = connectapi("admin", "--json", "owners", "list", env=env)
        owners = json.loads(listed.stdout)
        assert [(o["email"], o["propertyIds"]) for o in owners] == [
            ("owner@sample-guesthouse.example", sorted([seed["propertyId"], second["propertyId"]]))]

        made = connectapi("admin", "owners", "create", "--email", "ana@hotel.example", "--name", "Ana",
                          "--property", str(seed["propertyId"]), env=env)
        assert made.returncode == 0, made.stderr
        ana = json.loads(made.stdout)["ownerId"]
        changed = connectapi("admin", "owners", "update", str(ana), "--no-properties", "--disable", env=env)
        assert changed.returncode == 0, changed.stderr
        shown = json.loads(connectapi("admin", "owners", "get", str(ana), env=env).stdout)
        assert (shown["propertyIds"], shown["disabled"]) == ([], True)
        assert connectapi("admin", "owners", "delete", str(ana), env=env).returncode == 0
        gone = connectapi("admin", "owners", "get", str(ana), env=env)
        assert gone.returncode != 0 and "OWNER_NOT_FOUND" in gone.stderr
    finally:
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == 0
