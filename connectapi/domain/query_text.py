"""A query string's parameters as UTF-8, strictly (issue 28).

Werkzeug decodes a query with errors="replace": `externalReference=%ff` became U+FFFD and
was answered 200, where the same bytes in a body are a 400 VALIDATION. Each name and value,
percent-decoded (`+` a space), must be UTF-8.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes


def not_utf8(query: bytes) -> list[dict[str, str]]:
    """A VALIDATION issue for each parameter whose name or value is not UTF-8."""
    issues = []
    for part in query.split(b"&"):
        if not part:
            continue
        raw_name, _, raw_value = part.partition(b"=")
        name = unquote_to_bytes(raw_name.replace(b"+", b" "))
        value = unquote_to_bytes(raw_value.replace(b"+", b" "))
        try:
            name.decode("utf-8")
            value.decode("utf-8")
        except UnicodeDecodeError:
            issues.append({"path": name.decode("utf-8", "replace"), "message": "must be UTF-8 text"})
    return issues
