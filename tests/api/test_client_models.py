"""The client libraries' models and types are the document the service serves: rendered
again from its OpenAPI document (the webhook event in its `webhooks` components), they
equal the files in clients/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from connectapi.http.public.openapi import OPENAPI_PATH

from .harness import Harness

GENERATOR = Path(__file__).parents[2] / "clients" / "generate_models.py"


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("generate_models", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_models"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def test_the_client_models_equal_the_served_documents(api: Harness) -> None:
    served = (await api.call("GET", OPENAPI_PATH)).body
    rendered = _generator().render(served)  # type: ignore[attr-defined]
    assert len(rendered) == 2
    for path, text in rendered.items():
        assert path.read_text() == text, f"{path} is stale: run python clients/generate_models.py"


async def test_every_answer_and_body_has_a_model(api: Harness) -> None:
    served = (await api.call("GET", OPENAPI_PATH)).body
    models = _generator().collect(served)  # type: ignore[attr-defined]
    python = (GENERATOR.parent / "python" / "src" / "connectapi_client" / "models.py").read_text()
    typescript = (GENERATOR.parent / "typescript" / "src" / "types.ts").read_text()
    for name in ("Property", "Catalog", "AvailabilityRead", "RatesRead", "RestrictionsRead", "WriteResult", "Sync",
                 "Batch", "Booking", "BookingList", "BookingIn", "BookingPatchIn", "RateEntry", "WebhookEvent"):
        assert name in models
        assert f"class {name}(" in python and f"export interface {name} {{" in typescript
    booking = {prop for prop, _, _ in models["Booking"].fields}
    assert booking == set(served["components"]["schemas"]["Booking"]["properties"])
