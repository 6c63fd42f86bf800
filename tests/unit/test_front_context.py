"""The routes' context (http/context.py's FrontContext) holds what routes reach and nothing
else (issue 43): every field of it, and of its groups (Budgeting, PropertyWork,
ChannelAccess, Operation), is read by some module of connectapi/http. What only tests
drive (the push scheduler, the call counters, the reconciler, the test twins' channel
actor) is reached through service.open_service's handles, not through the routes'
context (decision 0131).

A read is an attribute taken from the context as routes reach it: `context().x`, or
`ctx.x` (the name every module of http/ gives it), and for a group's field
`ctx.group.field`; a group's own method reading `self.field` (Operation.down) counts for
that field. A name that merely appears (an import path such as `..channel.sandbox`, a
parameter of the same name) does not."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from connectapi.http.context import FrontContext

HTTP = Path(__file__).parents[2] / "connectapi" / "http"
CONTEXT = HTTP / "context.py"


def groups() -> dict[str, type]:
    """The context's fields that are groups (dataclasses of http/context.py), by field name."""
    module = sys.modules[FrontContext.__module__]
    found = {}
    for field in dataclasses.fields(FrontContext):
        group = getattr(module, str(field.type), None)
        if isinstance(group, type) and dataclasses.is_dataclass(group) and group.__module__ == module.__name__:
            found[field.name] = group
    return found


def fields() -> list[tuple[str, ...]]:
    """('db',), ('channel',), ('channel', 'sandbox'), …: every field of the context and of its groups."""
    found: list[tuple[str, ...]] = []
    for field in dataclasses.fields(FrontContext):
        found.append((field.name,))
        group = groups().get(field.name)
        if group is not None:
            found.extend((field.name, inner.name) for inner in dataclasses.fields(group))
    return found


def is_the_context(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "ctx"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "context"


def paths_read(tree: ast.AST) -> set[tuple[str, ...]]:
    """The attribute paths taken from the context in `tree`: `ctx.channel.sandbox.calls`
    gives ('channel', 'sandbox', 'calls') and each of its prefixes."""
    read: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        names: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            names.insert(0, base.attr)
            base = base.value
        if is_the_context(base):
            read.update(tuple(names[:n]) for n in range(1, len(names) + 1))
    return read


def read_by_groups_themselves() -> set[tuple[str, ...]]:
    """`self.field` inside a group's own methods (Operation.down reads its supervisors)."""
    by_class = {group.__name__: name for name, group in groups().items()}
    read: set[tuple[str, ...]] = set()
    for node in ast.parse(CONTEXT.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name in by_class:
            read.update((by_class[node.name], inner.attr) for inner in ast.walk(node)
                        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id == "self")
    return read


def test_the_context_has_groups_and_fields() -> None:
    # The test below means something only if it finds what it checks.
    assert set(groups()) == {"budgets", "properties", "channel", "operation"}
    assert ("channel", "sandbox") in fields() and ("db",) in fields()


def test_every_field_of_the_context_is_read_by_the_front() -> None:
    read = read_by_groups_themselves()
    for path in sorted(HTTP.rglob("*.py")):
        read |= paths_read(ast.parse(path.read_text(), str(path)))
    assert [".".join(field) for field in fields() if field not in read] == []


def test_an_import_path_or_a_bare_name_is_no_read() -> None:
    # The check itself: what it counts as a read.
    tree = ast.parse("from ..channel.sandbox import state\nsandbox = 1\nctx.channel.mailbox.put(x)\n"
                     "context().db.fetch()\n")
    assert paths_read(tree) == {("channel",), ("channel", "mailbox"), ("channel", "mailbox", "put"), ("db",),
                                ("db", "fetch")}
