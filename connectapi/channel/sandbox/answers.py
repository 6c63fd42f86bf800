"""Channex's answers, as its docs show them: success envelopes and `errors` objects.

Errors are `{"errors": {"code", "title", "details"?}}` (API reference, "Errors"): 400
`bad_request` with details a list of messages, 401 `unauthorized`, 404 `not_found` titled
"Resouce Not Found" (sic, Bookings Collection), 422 `validation_error` with details an
object of field -> messages, 429 `http_too_many_requests` (Rate Limits). The 500 a fault
answers is ours: Channex documents no 5xx body.
"""

from __future__ import annotations

import json
from typing import Any

from quart import Response
from typing_extensions import NotRequired, TypedDict

# Ours: a response carrying this header is never sent; SandboxASGI closes the
# connection instead (the `reset` fault).
DROP_CONNECTION_HEADER = "x-sandbox-drop-connection"
MALFORMED_PAGE = ("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>"
                  "<body><h1>Bad Gateway</h1><p>The upstream server sent an invalid response.</p></body></html>\n")


class ErrorBody(TypedDict):
    """What `errors` holds."""

    code: str
    title: str
    details: NotRequired[list[str] | dict[str, list[str]]]  # messages (400), or field -> messages (422)


def json_answer(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json", headers=headers or {})


def error(status: int, code: str, title: str, details: list[str] | dict[str, list[str]] | None = None,
          headers: dict[str, str] | None = None) -> Response:
    errors: ErrorBody = {"code": code, "title": title}
    if details is not None:
        errors["details"] = details
    return json_answer({"errors": errors}, status, headers)


def unauthorized() -> Response:
    return error(401, "unauthorized", "Unauthorized")


def not_found() -> Response:
    return error(404, "not_found", "Resouce Not Found")


def bad_request(*messages: str) -> Response:
    return error(400, "bad_request", "Bad Request", list(messages))


def invalid(details: dict[str, list[str]]) -> Response:
    return error(422, "validation_error", "Validation Error", details)


def too_many(retry_after: int | None = None) -> Response:
    """Channex's 429 has no Retry-After; a `429` fault armed with retryAfter adds one, for the
    client's tests of honouring it."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return error(429, "http_too_many_requests", "Too Many Requests", headers=headers)


def server_error() -> Response:
    return error(500, "internal_server_error", "Internal Server Error")


def malformed() -> Response:
    """A 200 that is not the JSON asked for: what a proxy's error page looks like."""
    return Response(MALFORMED_PAGE, status=200, content_type="text/html; charset=utf-8")


def dropped() -> Response:
    return Response("", status=200, headers={DROP_CONNECTION_HEADER: "1"})


def created(kind: str, ident: str, attributes: dict[str, Any]) -> Response:
    """`attributes` are the entity's as sent (any JSON object), echoed with its id."""
    return json_answer({"data": {"type": kind, "id": ident, "attributes": {**attributes, "id": ident}}}, 201)


def success() -> Response:
    return json_answer({"meta": {"message": "Success"}})
