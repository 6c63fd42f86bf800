"""`python docs/architecture_svg.py`: docs/architecture.svg, drawn from the code.

Two pictures side by side, both read from the source, never drawn by hand:
- the layers: connectapi's packages, each arrow an import between them (from the AST of
  every module), and what each talks to outside the process;
- the supervision tree: every actor `service.open_service` starts, under the supervisor that
  keeps it (from the AST of connectapi/service.py).

tests/unit/test_architecture_svg.py fails when the committed picture is not what this
script draws from today's code.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from html import escape
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "connectapi"
OUT = ROOT / "docs" / "architecture.svg"

# The layers, top (what the outside calls) to bottom (pure logic); a package's row.
LAYERS = [["http"], ["actors"], ["channel"], ["budgets"], ["storage"], ["engine"], ["domain"]]
# Who each layer talks to outside the process.
OUTSIDE = {
    "http": "PMSs, booking engines, operators, owners",
    "channel": "the channel manager",
    "storage": "PostgreSQL: the record",
    "actors": "webhook receivers, SMTP",
}
SUPERVISORS = {
    "watchers": "watchers: keep the record tidy, may stop at any moment",
    "root": "root: the channel manager and the push leases",
    "registry": "per property, started on demand, stopped when idle",
    "services": "services: rounds that send, pull and check",
}


def package_of(module: Path) -> str:
    parts = module.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else "(top)"


def imports_between_packages() -> set[tuple[str, str]]:
    """(importer, imported) for every import from one package of connectapi into another."""
    edges = set()
    for module in PACKAGE.rglob("*.py"):
        here = package_of(module)
        package = list(module.relative_to(PACKAGE).parts[:-1])  # e.g. ["http", "console"]
        for node in ast.walk(ast.parse(module.read_text())):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - (node.level - 1)] if node.level - 1 <= len(package) else []
                if node.module:
                    targets.append(base + node.module.split("."))
                else:
                    targets.extend(base + [alias.name] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("connectapi."):
                targets.append((node.module or "").split(".")[1:])
            elif isinstance(node, ast.Import):
                targets.extend(a.name.split(".")[1:] for a in node.names if a.name.startswith("connectapi."))
            for target in targets:
                top = target[0] if target else None
                if top and top != here and (PACKAGE / top).is_dir():
                    edges.add((here, top))
    return edges


def actors_by_supervisor() -> dict[str, list[str]]:
    """The names service.py spawns (`x.spawn("name", …)`) or registers (`registry("name", …)`),
    by supervisor."""
    found: dict[str, list[str]] = defaultdict(list)
    for node in ast.walk(ast.parse((PACKAGE / "service.py").read_text())):
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
            continue
        name = node.args[0].value
        if not isinstance(name, str):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "spawn" and isinstance(func.value, ast.Name):
            found[func.value.id].append(name)
        elif isinstance(func, ast.Name) and func.id == "registry":
            found["registry"].append(name)
    return dict(found)


def box(x: float, y: float, w: float, h: float, text: str, fill: str = "#eef3fb", size: int = 13) -> str:
    return (f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" stroke="#44546a"/>'
            f'<text x="{x + w / 2}" y="{y + h / 2 + size / 3}" font-size="{size}" text-anchor="middle">'
            f'{escape(text)}</text>')


def draw() -> str:
    parts: list[str] = []
    where: dict[str, tuple[float, float]] = {}
    width, row_h, top = 130, 44, 60
    for row, names in enumerate(LAYERS):
        y = top + row * 80
        for i, name in enumerate(names):
            x = 40 + i * 160 + (80 if len(names) == 1 else 0)
            where[name] = (x, y)
            parts.append(box(x, y, width, row_h, name))
            if name == "channel":  # the left box of its row: its label goes below it
                parts.append(f'<text x="{x}" y="{y + row_h + 14}" font-size="11" fill="#555">'
                             f'{escape(OUTSIDE[name])}</text>')
            elif name in OUTSIDE:
                parts.append(f'<text x="{x + width + 10}" y="{y + 27}" font-size="11" fill="#555" '
                             f'text-anchor="start">{escape(OUTSIDE[name])}</text>')
    row_of = {name: row for row, names in enumerate(LAYERS) for name in names}
    for importer, imported in sorted(imports_between_packages()):
        if importer not in where or imported not in where:
            continue
        (x1, y1), (x2, y2) = where[importer], where[imported]
        # Spread the arrows: each leaves at a place for its target's row, arrives at one for its source's.
        start = (x1 + width / 2 + (row_of[imported] - 2) * 14, y1 + row_h if y2 > y1 else y1)
        end = (x2 + width / 2 + (row_of[importer] - 1) * 14, y2 if y2 > y1 else y2 + row_h)
        colour = "#44546a" if y2 > y1 else "#c0392b"  # an import running back up would show red
        parts.append(f'<line x1="{start[0]}" y1="{start[1]}" x2="{end[0]}" y2="{end[1]}" stroke="{colour}" '
                     f'marker-end="url(#arrow)" opacity="0.7"/>')
    parts.append('<text x="40" y="36" font-size="16" font-weight="bold">Layers: packages and their imports</text>')

    x0 = 660
    parts.append(f'<text x="{x0}" y="36" font-size="16" font-weight="bold">Actors, by supervisor (service.py)</text>')
    y = 60
    for key, title in SUPERVISORS.items():
        names = actors_by_supervisor().get(key, [])
        parts.append(f'<text x="{x0}" y="{y + 14}" font-size="12" font-weight="bold">{escape(title)}</text>')
        y += 22
        for i, name in enumerate(names):
            parts.append(box(x0 + (i % 3) * 150, y + (i // 3) * 34, 140, 26, name, "#f6f1e7", 11))
        y += ((len(names) + 2) // 3) * 34 + 14
    height = max(top + len(LAYERS) * 80 + 40, y + 10)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="1130" height="{height}" '
            f'font-family="DejaVu Sans, Arial, sans-serif">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#44546a"/></marker></defs>'
            '<rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>\n")


if __name__ == "__main__":
    OUT.write_text(draw())
    print(f"wrote {OUT}", file=sys.stderr)
