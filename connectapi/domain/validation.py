"""Turning pydantic's findings into the contract's VALIDATION details: a list of {path, message}."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ApiError, validation_error
from .json_body import decode_json_body

M = TypeVar("M", bound=BaseModel)


def error_path(location: tuple[int | str, ...]) -> str:
    """('updates', 0, 'available') -> 'updates[0].available'"""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "$"


def issues_of(exc: ValidationError) -> list[dict[str, str]]:
    issues = []
    for err in exc.errors(include_url=False, include_input=False):
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        issues.append({"path": error_path(tuple(err["loc"])), "message": message})
    return issues


def parse_json(raw: bytes) -> Any:
    """The body as JSON, or VALIDATION at `$`: see json_body for what is refused and why."""
    return decode_json_body(raw)


def parse_model(model: type[M], raw: bytes) -> M:
    return parse_payload(model, parse_json(raw))


def parse_payload(model: type[M], payload: Any) -> M:
    """Validate parsed JSON in JSON mode, so strict models still take dates as ISO strings."""
    if not isinstance(payload, dict):
        raise validation_error([{"path": "$", "message": "body must be a JSON object"}])
    try:
        # A payload from decode_json_body always dumps; one built another way may be too
        # deep (RecursionError), hold NaN (allow_nan=False) or something that is not JSON.
        text = json.dumps(payload, allow_nan=False)
    except (RecursionError, ValueError, TypeError):
        raise validation_error([{"path": "$", "message": "body cannot be written back as plain JSON"}]) from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise ApiError("VALIDATION", "request does not match the schema", issues_of(exc)) from None
