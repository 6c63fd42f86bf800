"""Path converters of our routes."""

from __future__ import annotations

from typing import Any

from werkzeug.routing import BaseConverter, ValidationError

from ..domain.ids import MAX_ID, at_most_pattern, bounded_int


class IdConverter(BaseConverter):
    """`<int:...>` in our routes: ASCII digits worth 0 to MAX_ID. Anything else (werkzeug's own
    int takes any length, and Unicode digits) matches no route: 404 NOT_FOUND. Zero still
    reaches the route, as with werkzeug's int, and gets the route's own not-found code.
    The regex itself holds the bound: a value past it then matches no rule, where a refusal
    in to_python left a path's rules of other methods making it a 405."""

    regex = at_most_pattern(MAX_ID)
    weight = 50  # werkzeug's NumberConverter's, so rules sort as they did

    def to_python(self, value: str) -> int:
        found = bounded_int(value, MAX_ID)
        if found is None:
            raise ValidationError()
        return found

    def to_url(self, value: Any) -> str:
        return str(int(value))
