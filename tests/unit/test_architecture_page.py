"""docs/architecture.md says what the code does where a rule has exceptions (issue 43): the
writers tell `Wakeups` (actors/wakeups.py) what they committed, and so do a few routes
that commit work for others themselves. "The path of a write", step 4, names those
modules; every module of connectapi/http/ that tells Wakeups is named there, and the step
names no other. (Every SQL statement being in storage/ is held by
test_sql_lives_in_storage.py.)"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from connectapi.actors.wakeups import Wakeups

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "architecture.md"
HTTP = ROOT / "connectapi" / "http"
# What telling is: any public method of Wakeups but `attach`, which the assembly calls to
# attach its listeners, and those a request waits with (`next_time`, `awaited`: a route
# waiting for a push or a revision tells nothing).
WAITING = {"attach", "next_time", "awaited"}
TELLINGS = {name for name, _ in inspect.getmembers(Wakeups, inspect.isfunction)
            if not name.startswith("_") and name not in WAITING}


def tells_wakeups(tree: ast.AST) -> bool:
    """A call of a Wakeups method on something named for it: `ctx.properties.wakeups.x()`,
    `wakeups.x()`, `self._wakeups.x()`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TELLINGS:
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if name.lstrip("_") == "wakeups":
                return True
    return False


def step_four() -> str:
    text = PAGE.read_text()
    start = text.index("\n## The path of a write")
    section = text[start:text.index("\n## ", start + 1)]
    return section[section.index("\n4. "):section.index("\n5. ")]


def test_the_check_finds_a_telling() -> None:
    assert TELLINGS == {"cells_dirty", "mails_queued", "events_queued", "revisions_waiting", "cells_pushed",
                        "revision_settled"}
    assert tells_wakeups(ast.parse("ctx.properties.wakeups.events_queued()"))
    assert tells_wakeups(ast.parse("await self._wakeups.cells_dirty(1, True, False)"))
    assert not tells_wakeups(ast.parse("ctx.properties.wakeups\nqueue.events_queued()"))


def test_the_page_names_every_route_module_that_tells_wakeups() -> None:
    telling = {str(p.relative_to(ROOT / "connectapi")) for p in sorted(HTTP.rglob("*.py"))
               if tells_wakeups(ast.parse(p.read_text(), str(p)))}
    named = set(re.findall(r"`(http/[\w/]+\.py)`", step_four()))
    assert telling, "no module of http/ tells Wakeups: step 4 of the page should say so, and this test go"
    assert sorted(telling - named) == [], "tells Wakeups, and the page does not say so"
    assert sorted(named - telling) == [], "named by the page, and tells Wakeups no more"
