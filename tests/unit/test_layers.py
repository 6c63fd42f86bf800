"""The dependency rules of the design, read from the code's own imports: asyncpg stays in
storage, the domain imports nothing of ours, actors and storage know nothing of HTTP
(so an HTTP answer can only be made in `http/`), and the channel-manager client is called
by its actor alone. And no module of the service is named as pytest collects a test file."""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "connectapi"
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def imports_of(path: Path) -> set[str]:
    """Absolute module names a file imports (relative imports resolved)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = parts[:-1] if parts[-1] != "__init__" else parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ((node.module,) if node.module else ()))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def modules(under: str) -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py")) if under else sorted(PACKAGE.rglob("*.py"))


def test_asyncpg_is_imported_by_storage_alone() -> None:
    outside = [str(p.relative_to(PACKAGE)) for p in modules("")
               if "storage" not in p.relative_to(PACKAGE).parts
               and any(m == "asyncpg" or m.startswith("asyncpg.") for m in imports_of(p))]
    assert outside == []


def test_the_domain_imports_nothing_of_ours_but_the_domain() -> None:
    for path in modules("domain"):
        ours = {m for m in imports_of(path) if m.startswith("connectapi.")}
        assert all(m.startswith("connectapi.domain") for m in ours), (path.name, ours)


def test_actors_and_storage_never_touch_http() -> None:
    for under in ("actors", "storage", "engine", "domain"):
        for path in modules(under):
            found = imports_of(path)
            assert not {m for m in found if m.startswith(("connectapi.http", "quart", "werkzeug", "hypercorn"))}, (
                under, path.name)


def test_storage_never_imports_actors_or_the_front() -> None:
    for path in modules("storage"):
        assert not {m for m in imports_of(path) if m.startswith(("connectapi.actors", "connectapi.http"))}, path.name


def test_only_the_channel_manager_actor_holds_the_client() -> None:
    """Everyone else asks the actor: pacing and backoff live in one place."""
    callers = [str(p.relative_to(PACKAGE)) for p in modules("") if "channel" not in p.relative_to(PACKAGE).parts[:1]
               and "connectapi.channel.client.ChannelManagerClient" in imports_of(p)]
    assert callers == ["actors/channel_manager.py"]


def test_no_module_of_the_service_is_named_like_a_test() -> None:
    """pytest collects the files its `python_files` patterns match (`test_*.py` and
    `*_test.py` unless pyproject.toml says otherwise): a module of the service named so
    reads as a test file, and a run given connectapi/ would collect it as one. What serves
    test mode says so otherwise: `testmode_*.py`, `twin_records.py` (issue 43)."""
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    patterns = options.get("python_files", ["test_*.py", "*_test.py"])
    patterns = patterns.split() if isinstance(patterns, str) else patterns
    named = [str(p.relative_to(PACKAGE)) for p in modules("") if any(fnmatch.fnmatch(p.name, n) for n in patterns)]
    assert named == []


def test_tracing_imports_nothing_of_ours() -> None:
    """Every layer may open a span (the engine, storage, actors, the front): the tracing
    package is a leaf, so that none of them reaches another through it."""
    for path in modules("tracing"):
        ours = {m for m in imports_of(path) if m.startswith("connectapi.")}
        assert all(m.startswith("connectapi.tracing") for m in ours), (path.name, ours)
