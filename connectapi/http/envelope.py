"""Every JSON answer is `{statuscode, message, data}`; a success body is the `data` member."""

from __future__ import annotations

import json
from typing import Any

from quart import Response, g

from ..domain.errors import ApiError

_REASONS = {200: "OK", 201: "Created", 202: "Accepted"}


def _dumps(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    isoformat = getattr(value, "isoformat", None)
    if isoformat is not None:
        return isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")


def ok(data: Any, status: int = 200, message: str | None = None) -> Response:
    body = {"statuscode": status, "message": message or _REASONS.get(status, "OK"), "data": data}
    return Response(_dumps(body), status=status, content_type="application/json")


def replay(status: int, stored: dict[str, Any]) -> Response:
    """A stored answer, sent again for a repeated idempotency key."""
    body = {"statuscode": status, "message": stored["message"], "data": stored["data"]}
    response = Response(_dumps(body), status=status, content_type="application/json")
    response.headers["X-Idempotent-Replay"] = "true"
    return response


def error(err: ApiError) -> Response:
    body = {"statuscode": err.status, "message": err.message, "data": err.data()}
    response = Response(_dumps(body), status=err.status, content_type="application/json")
    if err.retry_after_seconds is not None:
        response.headers["Retry-After"] = str(err.retry_after_seconds)
    return response


def refused(err: ApiError) -> Response:
    """The error envelope, with the code and budget scope noted for the request's log line."""
    g.error_code, g.error_scope = err.code, err.scope
    return error(err)
