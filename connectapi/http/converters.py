"""Path converters of our routes."""

from __future__ import annotations

from typing import Any

from werkzeug.routing import BaseConverter, ValidationError

from ..domain.ids import MAX_ID, bounded_int


class IdConverter(BaseConverter):
    """`<int:...>` in our routes: ASCII digits worth 0 to MAX_ID. Anything else (werkzeug's own
    int takes any length, and Unicode digits) matches no route: 404 NOT_FOUND. Zero still
    reaches the route, as with werkzeug's int, and gets the route's own not-found code."""

    regex = r"[0-9]+"
    weight = 50  # werkzeug's NumberConverter's, so rules sort as they did

    def to_python(self, value: str) -> int:
        found = bounded_int(value, MAX_ID)
        if found is None:
            raise ValidationError()
        return found

    def to_url(self, value: Any) -> str:
        return str(int(value))
