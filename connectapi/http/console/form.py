"""A console POST's form, read and parsed under the console's own limits (issue 27).

Quart's `request.form` reads whatever the app-wide cap allows (1 MB, for the API) and
parses it whole: 349,000 empty fields took the event loop most of a second. The console's
forms are small (the largest, a key with a long allowlist, is about 20 KB and ten
fields), so a console POST's body is at most `MOST_BODY_BYTES` (refused from its
declared length before it is read, or as soon as it grows past it) with at most
`MOST_FIELDS` fields. A body that passes is parsed in tens of microseconds (the field
count is checked before anything is split), so parsing never holds the loop.

`check_form_token` (session.py) reads the form once, after the cheaper checks; the views
take it from `posted()`.
"""

from __future__ import annotations

import math
from urllib.parse import parse_qsl

import trio

from quart import g, request
from werkzeug.datastructures import MultiDict

MOST_BODY_BYTES = 64 * 1024
MOST_FIELDS = 50
FORM_TYPE = "application/x-www-form-urlencoded"


class FormRefused(Exception):
    """The POST is not a form the console takes: `status` (408, 413 or 415) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


TOO_LARGE = f"a console form is at most {MOST_BODY_BYTES // 1024} KB"


def parse(body: bytes) -> MultiDict[str, str]:
    """The fields of an urlencoded body (blank ones kept, bytes that are not UTF-8 replaced)."""
    try:
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MOST_FIELDS)
    except ValueError as exc:  # more fields than MOST_FIELDS, counted before any is split
        raise FormRefused(413, f"a console form has at most {MOST_FIELDS} fields") from exc
    return MultiDict(pairs)


async def read() -> MultiDict[str, str]:
    """The POST's form, once: its declared length and its type checked before a byte is
    read, then the body read up to `MOST_BODY_BYTES` within the app's body timeout, and
    parsed."""
    if request.content_length is not None and request.content_length > MOST_BODY_BYTES:
        raise FormRefused(413, TOO_LARGE)
    if request.mimetype != FORM_TYPE:
        raise FormRefused(415, "the console takes forms only (application/x-www-form-urlencoded)")
    body = bytearray()
    with trio.move_on_after(request.body_timeout or math.inf) as waiting:
        async for chunk in request.body:  # a body sent without a length is bounded here
            body += chunk
            if len(body) > MOST_BODY_BYTES:
                raise FormRefused(413, TOO_LARGE)
    if waiting.cancelled_caught:
        raise FormRefused(408, "the form did not arrive in time")
    form = parse(bytes(body))
    g.console_form = form
    return form


def posted() -> MultiDict[str, str]:
    """The form `read()` took for this POST (every console POST goes through it first)."""
    form: MultiDict[str, str] = g.console_form
    return form
