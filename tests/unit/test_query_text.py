"""A query's parameters must be UTF-8 (domain/query_text)."""

from __future__ import annotations

from connectapi.domain.query_text import not_utf8


def test_utf8_parameters_pass() -> None:
    assert not_utf8(b"from=2026-11-22&to=2026-11-30") == []
    assert not_utf8(b"externalReference=caf%C3%A9&q=a+b&&empty=&flag") == []
    assert not_utf8("x=café".encode()) == []


def test_each_parameter_not_utf8_is_named() -> None:
    assert not_utf8(b"externalReference=%ff&limit=5&since=%ED%A0%80") == [
        {"path": "externalReference", "message": "must be UTF-8 text"},
        {"path": "since", "message": "must be UTF-8 text"}]
    assert not_utf8(b"x\xff=1") == [{"path": "x\ufffd", "message": "must be UTF-8 text"}]
    assert not_utf8(b"a%C3=1") == [{"path": "a\ufffd", "message": "must be UTF-8 text"}]
