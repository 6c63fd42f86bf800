"""The docs hold to the code: README's and operations.md's settings tables name every
CONNECTAPI_* variable the code reads and nothing else (issue 28: README lacked three), and
operations.md's contents list its sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from connectapi.domain.retention import KINDS
from connectapi.domain.retention import env_name as retention_env

ROOT = Path(__file__).parents[2]
NAME = re.compile(r"CONNECTAPI_[A-Z0-9_]+")


def read_by_the_code() -> set[str]:
    """Every CONNECTAPI_* name in the package's source; a prefix (`CONNECTAPI_RETAIN_`, of a
    name made per kind) stands for the names `retention_env` makes."""
    found: set[str] = set()
    for source in (ROOT / "connectapi").rglob("*.py"):
        found |= set(NAME.findall(source.read_text()))
    prefixes = {name for name in found if name.endswith("_")}
    assert prefixes == {"CONNECTAPI_RETAIN_"}, prefixes  # any other made-up name: teach this test
    return (found - prefixes) | {retention_env(kind) for kind in KINDS}


def documented(path: Path, heading: str) -> set[str]:
    """The names in the first column of the table under `heading`; `<KIND>` stands for
    every kind of retention."""
    section = path.read_text().split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            first = row.split("|")[1]
            for name in re.findall(r"CONNECTAPI_[A-Z0-9_<>]+", first):
                names |= {retention_env(k) for k in KINDS} if "<KIND>" in name else {name}
    return names


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "docs/operations.md"], ids=["README", "operations"])
def test_the_settings_table_names_every_variable_the_code_reads(path: Path) -> None:
    in_code, in_table = read_by_the_code(), documented(path, "## Settings")
    assert in_code - in_table == set(), f"read by the code, missing from {path.name}'s table"
    assert in_table - in_code == set(), f"in {path.name}'s table, read by no code"


def test_operations_contents_list_every_section() -> None:
    """operations.md opens with its contents: every `## ` section, in order, linked."""
    text = (ROOT / "docs/operations.md").read_text()
    sections = re.findall(r"^## (.+)$", text, flags=re.M)
    contents = text.split("\n## ", 1)[0]
    listed = re.findall(r"^- \[(.+?)\]\(#([a-z0-9-]+)\)$", contents, flags=re.M)
    assert [title for title, _ in listed] == sections
    for title, anchor in listed:  # GitHub's anchors: lower case, punctuation dropped, spaces to dashes
        assert anchor == re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"), title
