"""The client libraries' API references in docs/clients/ are what `make client-docs`
makes from today's code: generated again here, they equal the files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_python_reference_is_current(tmp_path: Path) -> None:
    pdoc = Path(sys.executable).parent / "pdoc"
    subprocess.run([str(pdoc), "--no-search", "-o", str(tmp_path), "connectapi_client"], check=True, timeout=120,
                   capture_output=True)
    made, kept = files(tmp_path), files(ROOT / "docs" / "clients" / "python")
    assert "connectapi_client.html" in made
    stale = sorted(name for name in made.keys() | kept.keys() if made.get(name) != kept.get(name))
    assert not stale, f"docs/clients/python is stale ({stale}): run make client-docs"


def test_the_typescript_reference_is_current(tmp_path: Path, built: Path) -> None:
    options = re.search(r"^TYPEDOC_OPTIONS := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert options is not None
    subprocess.run(["npx", "--no-install", "typedoc", "--logLevel", "Error", *options.group(1).split(), "--out",
                    str(tmp_path), "src/index.ts"], cwd=built, check=True, timeout=300, capture_output=True)
    made, kept = files(tmp_path), files(ROOT / "docs" / "clients" / "typescript")
    assert "classes/Client.html" in made
    stale = sorted(name for name in made.keys() | kept.keys() if made.get(name) != kept.get(name))
    assert not stale, f"docs/clients/typescript is stale ({stale[:5]}): run make client-docs"
