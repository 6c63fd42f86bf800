"""The client libraries' models, generated from the service's own OpenAPI document: every
request body, every answer, and the webhook event (its `webhooks` components, made from the
webhook contract).

    python clients/generate_models.py            # from the service's code, in this repository
    python clients/generate_models.py --check    # exit 1 when a written file is stale

Writes `clients/python/src/connectapi_client/models.py` (request bodies as TypedDicts, in the
JSON's own camelCase, as callers write them; answers as pydantic models with snake_case
attributes that tolerate members added later) and `clients/typescript/src/types.ts` (one
interface per schema). A test renders both from the document the live service serves and
compares them with the files, so the libraries cannot drift from the contract.

Standard library only: `render()` takes the document as plain JSON.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PYTHON_MODELS = HERE / "python" / "src" / "connectapi_client" / "models.py"
TYPESCRIPT_TYPES = HERE / "typescript" / "src" / "types.ts"
# Names for inline schemas better than the parent's name and the member's: a shape two
# answers share is named once, after the first that has it.
NAMES = {"BatchRejected": "Rejection", "SyncRate": "SyncCells", "PropertyProduct": "PropertyProducts",
         "WebhookBookingAmount": "WebhookBookingAmounts", "WebhookBookingRoomTaxe": "WebhookBookingTax",
         "WebhookBookingRoomService": "WebhookBookingService", "WebhookBookingRoomNight": "WebhookBookingNight",
         "WebhookBookingAmountsGuarantee": "WebhookBookingGuarantee",
         "RatesReadRatePlanNightByOccupancy": "OccupancyRate", "TestEventsEvent": "TestEvent"}


@dataclass
class Model:
    name: str
    schema: dict[str, Any]
    request: bool  # a body the caller sends (TypedDict), else an answer (pydantic)
    fields: list[tuple[str, Any, bool]] = field(default_factory=list)  # json name, type, required


@dataclass
class Ref:
    name: str


@dataclass
class Arr:
    item: Any


@dataclass
class Lit:
    values: tuple[Any, ...]


@dataclass
class Opt:
    inner: Any


@dataclass
class Prim:
    kind: str  # str | int | float | bool | date | datetime | any | object | money


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


class Collector:
    """Walks the schemas and names every object with members a model of its own."""

    def __init__(self, components: dict[str, Any]) -> None:
        self.components = components
        self.models: dict[str, Model] = {}
        self._by_shape: dict[str, str] = {}

    def model(self, name: str, schema: dict[str, Any], request: bool) -> str:
        name = NAMES.get(name, name)
        shape = json.dumps(schema, sort_keys=True) + str(request)
        if shape in self._by_shape:  # the same inline schema twice: one model
            return self._by_shape[shape]
        self._by_shape[shape] = name
        made = Model(name, schema, request)
        self.models[name] = made
        required = set(schema.get("required", ()))
        for prop, sub in schema.get("properties", {}).items():
            made.fields.append((prop, self.type_of(sub, name + _pascal(_singular(prop)), request), prop in required))
        return name

    def type_of(self, schema: dict[str, Any], name: str, request: bool) -> Any:
        if "$ref" in schema:
            target = schema["$ref"].rsplit("/", 1)[-1]
            if target not in self.models:
                self.model(target, self.components[target], request)
            return Ref(target)
        if "anyOf" in schema:
            options = [s for s in schema["anyOf"] if s.get("type") != "null"]
            inner = self.type_of(options[0], name, request) if len(options) == 1 else Prim("any")
            return Opt(inner) if len(options) < len(schema["anyOf"]) else inner
        if "const" in schema:
            return Lit((schema["const"],))
        if "enum" in schema:
            return Lit(tuple(schema["enum"]))
        kind = schema.get("type")
        if isinstance(kind, list):
            rest = [k for k in kind if k != "null"]
            inner = self.type_of({**schema, "type": rest[0]}, name, request) if len(rest) == 1 else Prim("object")
            return Opt(inner) if "null" in kind else inner
        if kind == "object":
            if schema.get("properties"):
                return Ref(self.model(name, schema, request))
            return Prim("object")
        if kind == "array":
            return Arr(self.type_of(schema.get("items", {}), name, request))
        if kind == "string":
            return Prim({"date": "date", "date-time": "datetime"}.get(schema.get("format", ""), "str"))
        if kind in ("integer", "number", "boolean"):
            return Prim({"integer": "int", "number": "float", "boolean": "bool"}[kind])
        if name.endswith("Rate") and request:  # a rate: a string with decimals or a number
            return Prim("money")
        return Prim("any")


def _operations(doc: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The component names of request bodies and of success answers."""
    requests, answers = set(), set()
    for item in doc["paths"].values():
        for op in item.values():
            for content in op.get("requestBody", {}).get("content", {}).values():
                requests.add(content["schema"]["$ref"].rsplit("/", 1)[-1])
            for status, response in op["responses"].items():
                if int(status) < 400:
                    schema = response["content"]["application/json"]["schema"]["allOf"][1]
                    answers.add(schema["properties"]["data"]["$ref"].rsplit("/", 1)[-1])
    return requests, answers


def collect(doc: dict[str, Any]) -> dict[str, Model]:
    components = doc["components"]["schemas"]
    requests, answers = _operations(doc)
    collector = Collector(components)
    for name in sorted(requests):
        collector.model(name, components[name], request=True)
    for name in sorted(answers) + ["WebhookEvent"]:
        collector.model(name, components[name], request=False)
    return collector.models


# ---- Python -----------------------------------------------------------------------------

_PY_PRIM = {"str": "str", "int": "int", "float": "float", "bool": "bool", "date": "datetime.date",
            "datetime": "datetime.datetime", "any": "Any", "object": "dict[str, Any]", "money": "str | int | float"}


def _py_type(t: Any, request: bool) -> str:
    if isinstance(t, Ref):
        return t.name
    if isinstance(t, Arr):
        return f"list[{_py_type(t.item, request)}]"
    if isinstance(t, Lit):
        if not request and not all(isinstance(v, str) for v in t.values):
            return {bool: "bool", int: "int", float: "float"}[type(t.values[0])]
        known = "Literal[" + ", ".join(json.dumps(v) if not isinstance(v, bool) else str(v) for v in t.values) + "]"
        # An answer may bring a value added later (a new status, event type or version):
        # the known ones are named, any other string is kept rather than refused.
        return known if request else f"{known} | str"
    if isinstance(t, Opt):
        return f"{_py_type(t.inner, request)} | None"
    if request and t.kind in ("date", "datetime"):
        return f"{_PY_PRIM[t.kind]} | str"  # a date object, or its ISO text as the JSON has it
    return _PY_PRIM[t.kind]


def _snake(name: str) -> str:
    made = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return made + "_" if keyword.iskeyword(made) else made


def _doc_line(schema: dict[str, Any], fallback: str) -> str:
    text = " ".join(str(schema.get("description") or fallback).split())
    return text.replace("\\", "\\\\").replace('"""', "'''")


def render_python(models: dict[str, Model]) -> str:
    out = [
        '"""The contract\'s bodies and answers: generated by clients/generate_models.py from the',
        "service's OpenAPI document and webhook contract. Do not edit by hand.",
        "",
        "Request bodies are TypedDicts in the JSON's own camelCase: pass plain dicts. Answers are",
        "pydantic models with snake_case attributes; members the service adds later are kept,",
        'not refused."""',
        "",
        "# ruff: noqa: E501, F401",
        "from __future__ import annotations",
        "",
        "import datetime",
        "from typing import Any, Literal",
        "",
        "from pydantic import BaseModel, ConfigDict, Field",
        "from typing_extensions import NotRequired, TypedDict",
        "",
        "",
        "class Answer(BaseModel):",
        '    """An answer of the service: attributes in snake_case, read from the JSON\'s camelCase."""',
        "",
        '    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)',
        "",
    ]
    # TypedDicts and models refer to each other by name: order them so a name is defined
    # before pydantic needs it (the annotations are strings; model_rebuild() settles them).
    for model in sorted(models.values(), key=lambda m: m.name):
        out += ["", ""]
        what = _doc_line(model.schema, f"{'A request body' if model.request else 'An answer'}: {model.name}.")
        if model.request:
            out.append(f"class {model.name}(TypedDict):")
            out.append(f'    """{what}"""')
            out.append("")
            for prop, t, required in model.fields:
                typed = _py_type(t, True)
                out.append(f"    {prop}: {typed}" if required else f"    {prop}: NotRequired[{typed}]")
        else:
            out.append(f"class {model.name}(Answer):")
            out.append(f'    """{what}"""')
            out.append("")
            for prop, t, required in model.fields:
                typed = _py_type(t, False)
                attr = _snake(prop)
                if not required and not typed.endswith("| None"):
                    typed += " | None"
                default = "" if required else "None, "
                out.append(f'    {attr}: {typed} = Field({default}alias="{prop}")')
    out += ["", ""]
    for model in sorted(models.values(), key=lambda m: m.name):
        if not model.request:
            out.append(f"{model.name}.model_rebuild()")
    out.append("")
    return "\n".join(out)


# ---- TypeScript -------------------------------------------------------------------------

_TS_PRIM = {"str": "string", "int": "number", "float": "number", "bool": "boolean", "date": "IsoDate",
            "datetime": "IsoDateTime", "any": "unknown", "object": "Record<string, unknown>",
            "money": "string | number"}


def _ts_type(t: Any, request: bool) -> str:
    if isinstance(t, Ref):
        return t.name
    if isinstance(t, Arr):
        inner = _ts_type(t.item, request)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if isinstance(t, Lit):
        if not request and not all(isinstance(v, str) for v in t.values):
            return {bool: "boolean", int: "number", float: "number"}[type(t.values[0])]
        known = " | ".join(json.dumps(v) for v in t.values)
        # As in Python: an answer's value added later is kept (the known ones still complete).
        return known if request else f"{known} | (string & {{}})"
    if isinstance(t, Opt):
        return f"{_ts_type(t.inner, request)} | null"
    return _TS_PRIM[t.kind]


def render_typescript(models: dict[str, Model]) -> str:
    out = [
        "// The contract's bodies and answers: generated by clients/generate_models.py from the",
        "// service's OpenAPI document and webhook contract. Do not edit by hand.",
        "",
        '/** A calendar date, "YYYY-MM-DD", in the property\'s timezone. */',
        "export type IsoDate = string;",
        "/** An ISO 8601 instant with its offset. */",
        "export type IsoDateTime = string;",
    ]
    for model in sorted(models.values(), key=lambda m: m.name):
        out += ["", f"/** {_doc_line(model.schema, model.name)} */", f"export interface {model.name} {{"]
        for prop, t, required in model.fields:
            optional = "" if required else "?"
            out.append(f"  {prop}{optional}: {_ts_type(t, model.request)};")
        out.append("}")
    out.append("")
    return "\n".join(out)


def render(doc: dict[str, Any]) -> dict[Path, str]:
    models = collect(doc)
    return {PYTHON_MODELS: render_python(models), TYPESCRIPT_TYPES: render_typescript(models)}


def _from_the_service() -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from connectapi.http.public.openapi import openapi_document
    # Through JSON, as the service serves it.
    document: dict[str, Any] = json.loads(json.dumps(openapi_document()))
    return document


def main(argv: list[str]) -> int:
    rendered = render(_from_the_service())
    stale = [path for path, text in rendered.items() if not path.exists() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"stale: {path.relative_to(HERE.parent)} (run python clients/generate_models.py)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered[path])
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
