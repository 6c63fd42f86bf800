"""docs/decisions/ holds one record per decision (issue 28), and the rules its README states
hold: file names, numbers, titles, statuses, sections; the index lists every record once;
and the code and the docs point at records that exist, never at the single file of
decisions the records replaced."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DECISIONS = ROOT / "docs" / "decisions"
INDEX = DECISIONS / "README.md"

FILE_NAME = re.compile(r"^\d{4}-[a-z0-9-]+\.md$")
SECTIONS = ("## Context", "## Decision", "## Consequences")
SUPERSEDED = ("Superseded by ", "Partly superseded by ")
LINK = re.compile(r"\[(\d{4})\]\(([^)\s]+)\)")
# A record named from anywhere: `docs/decisions/NNNN-title.md`, or `decisions/NNNN-title.md` from docs/.
REFERENCE = re.compile(r"decisions/(\d{4}-[A-Za-z0-9_.-]*?\.md)")
# The single file the records replaced, by its name (`docs/decisions.md`, `decisions.md`);
# not a record whose title ends in "decisions".
OLD_FILE = re.compile(r"(?<![\w-])decisions\.md")


def records() -> list[Path]:
    return sorted(path for path in DECISIONS.iterdir() if path.name != "README.md")


def record_names() -> set[str]:
    return {path.name for path in records()}


def status_of(path: Path) -> str:
    lines = [line for line in path.read_text().splitlines() if line.startswith("Status:")]
    assert len(lines) == 1, f"{path.name}: one Status: line, found {len(lines)}"
    return lines[0].removeprefix("Status:").strip()


def status_kind(status: str) -> str:
    for kind in ("Accepted", "Superseded", "Partly superseded"):
        if status.startswith(kind):
            return kind
    return status


def test_there_are_records_and_an_index() -> None:
    assert INDEX.is_file()
    assert records(), "docs/decisions/ holds no record"


def test_file_names() -> None:
    assert [p.name for p in records() if not FILE_NAME.fullmatch(p.name) or not p.is_file()] == []


def test_numbers_are_unique_and_consecutive_from_one() -> None:
    numbers = sorted(int(p.name[:4]) for p in records() if FILE_NAME.fullmatch(p.name))
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize("path", records(), ids=lambda p: p.name)
def test_record_shape(path: Path) -> None:
    number = path.name[:4]
    lines = path.read_text().splitlines()
    assert lines and re.fullmatch(rf"# {number}\. \S.*", lines[0]), f"first line must be '# {number}. Title'"

    status = status_of(path)
    assert status == "Accepted" or status.startswith(SUPERSEDED), f"unknown status: {status!r}"

    positions = []
    for heading in SECTIONS:
        found = [i for i, line in enumerate(lines) if line.rstrip() == heading]
        assert len(found) == 1, f"{heading!r} must appear once, found {len(found)}"
        positions.append(found[0])
    assert positions == sorted(positions), f"sections out of order: {SECTIONS}"
    assert lines.index(f"Status: {status}") < positions[0], "Status: comes before the sections"
    ends = positions[1:] + [len(lines)]
    for heading, start, end in zip(SECTIONS, positions, ends):
        assert any(line.strip() for line in lines[start + 1:end]), f"{heading!r} is empty"


@pytest.mark.parametrize("path", records(), ids=lambda p: p.name)
def test_superseded_names_an_existing_newer_record(path: Path) -> None:
    status = status_of(path)
    if status == "Accepted":
        return
    links = LINK.findall(status)
    prefix = next(p for p in SUPERSEDED if status.startswith(p))
    assert links and status.startswith(f"{prefix}[{links[0][0]}]("), \
        f"{path.name}: '{prefix}' must be followed by a link to the record, as [0012](0012-title.md)"
    for number, target in links:
        assert target in record_names(), f"{path.name}: {target} is not a record"
        assert target.startswith(f"{number}-"), f"{path.name}: [{number}] links to {target}"
        assert int(number) > int(path.name[:4]), f"{path.name}: superseded by an older record {number}"


@pytest.mark.parametrize("path", records(), ids=lambda p: p.name)
def test_links_between_records_exist(path: Path) -> None:
    targets = re.findall(r"\]\((\d{4}-[^)\s]*)\)", path.read_text())
    assert [t for t in targets if t not in record_names()] == []


def test_index_lists_every_record_once() -> None:
    rows = [LINK.match(line[2:]) for line in INDEX.read_text().splitlines() if line.startswith("| [")]
    listed = Counter(m.group(2) for m in rows if m)
    assert {name: n for name, n in listed.items() if n != 1} == {}, "listed more than once"
    assert sorted(listed) == sorted(record_names()), "the index and the files differ"
    for m in rows:
        assert m is not None
        assert m.group(2).startswith(f"{m.group(1)}-"), f"[{m.group(1)}] links to {m.group(2)}"


def test_index_rows_match_their_records() -> None:
    for line in INDEX.read_text().splitlines():
        m = LINK.match(line[2:]) if line.startswith("| [") else None
        if m is None or m.group(2) not in record_names():
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        path = DECISIONS / m.group(2)
        title = path.read_text().splitlines()[0].split(". ", 1)[1]
        assert cells[1] == title, f"{path.name}: the index says {cells[1]!r}"
        assert status_kind(cells[2]) == status_kind(status_of(path)), f"{path.name}: the index says {cells[2]!r}"


def sources() -> list[Path]:
    found = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "connectapi").rglob("*.py"),
             *(ROOT / "tests").rglob("*.py")]
    return sorted(path for path in found if path.is_file())


def test_nothing_points_at_the_old_single_file() -> None:
    assert [str(p.relative_to(ROOT)) for p in sources() if p.resolve() != Path(__file__).resolve()
            and OLD_FILE.search(p.read_text())] == []


def test_references_to_records_name_existing_files() -> None:
    missing = [f"{p.relative_to(ROOT)}: {name}" for p in sources()
               for name in REFERENCE.findall(p.read_text()) if name not in record_names()]
    assert missing == []
