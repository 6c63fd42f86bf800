"""docs/architecture.svg is what docs/architecture_svg.py draws from today's code, and no
import runs back up the layers (it would be drawn red)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]


def drawing_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("architecture_svg", ROOT / "docs" / "architecture_svg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_picture_is_drawn_from_todays_code() -> None:
    drawn = drawing_script().draw()
    assert (ROOT / "docs" / "architecture.svg").read_text() == drawn, \
        "docs/architecture.svg is stale: run `python docs/architecture_svg.py` and commit it"


def test_the_picture_reads_the_actors_and_the_layers_from_the_code() -> None:
    script = drawing_script()
    actors = script.actors_by_supervisor()
    assert {"writer", "inventory-drain", "ari-projector"} <= set(actors["registry"])
    assert "channel-manager" in actors["root"] and "webhook-sender" in actors["services"]
    edges = script.imports_between_packages()
    assert ("http", "actors") in edges and ("storage", "domain") in edges
    layer = {name: row for row, names in enumerate(script.LAYERS) for name in names}
    upward = [(a, b) for a, b in edges if a in layer and b in layer and layer[b] <= layer[a]]
    assert upward == [], upward
