"""The shell commands the docs give are copied as they are: a line continued with `\\`
must end there. A comment after the backslash (or a space) ends the continuation, and the
rest of the command runs as a command of its own (the README's webhook step did)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
SHELL_BLOCK = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.S)
BROKEN_CONTINUATION = re.compile(r"\\[ \t]+(#.*)?$")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            *sorted((ROOT / "clients").glob("*/README.md"))]


def broken_lines(text: str) -> list[str]:
    return [line for block in SHELL_BLOCK.findall(text) for line in block.splitlines()
            if BROKEN_CONTINUATION.search(line)]


def test_a_continued_line_ends_at_its_backslash_in_every_document() -> None:
    found = {str(path.relative_to(ROOT)): lines for path in documents()
             if (lines := broken_lines(path.read_text()))}
    assert found == {}


def test_the_check_sees_a_comment_after_a_backslash() -> None:
    block = "```sh\ncurl -s \\     # the tour's terminal\n  $API/x\ncurl -s \\\n  $API/y\n```\n"
    assert broken_lines(block) == ["curl -s \\     # the tour's terminal"]
