"""The raw-body decoder: each decision of docs/decisions/0048-one-json-body-decoder.md, and any bytes at
all either parse or are refused with VALIDATION at `$` (never another exception)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connectapi.domain.admin_models import PropertyIn
from connectapi.domain.ari_models import RatesBody
from connectapi.domain.booking_models import BookingIn
from connectapi.domain.errors import ApiError
from connectapi.domain.json_body import MAX_DEPTH, MAX_NUMBER_CHARS, UTF8_BOM, decode_json_body
from connectapi.domain.validation import parse_payload

from ..examples import examples


def refused(raw: bytes) -> str:
    """The message of the VALIDATION refusal, checking its shape."""
    with pytest.raises(ApiError) as info:
        decode_json_body(raw)
    err = info.value
    assert err.code == "VALIDATION" and err.status == 400
    assert isinstance(err.details, list) and len(err.details) == 1 and err.details[0]["path"] == "$"
    return str(err.details[0]["message"])


def nested(depth: int, inner: str = "1") -> bytes:
    return ("[" * depth + inner + "]" * depth).encode()


# --- bytes and encoding


def test_plain_json_parses_as_json_loads_does() -> None:
    raw = b'{"updates": [{"ratePlanId": 7, "rate": 120.5, "days": ["mo"], "x": null, "y": true}]}'
    assert decode_json_body(raw) == json.loads(raw)


@pytest.mark.parametrize("raw", [b"", b"   ", b"\r\n\t ", UTF8_BOM])
def test_an_empty_body_is_refused(raw: bytes) -> None:
    assert refused(raw) == "a JSON body is required"


@pytest.mark.parametrize("raw", [b"\xff", b'{"a": "\xc3"}', b'{"a": "\xed\xa0\x80"}', b'{"a": "\xc0\xaf"}'])
def test_invalid_utf8_is_refused(raw: bytes) -> None:
    """Truncated sequences, encoded surrogates (CESU) and overlong forms are all not UTF-8."""
    assert "not UTF-8" in refused(raw)


def test_utf16_and_utf32_are_refused_though_json_loads_would_guess_them() -> None:
    for encoding in ("utf-16", "utf-16-le", "utf-32"):
        raw = '{"a": 1}'.encode(encoding)
        assert json.loads(raw) == {"a": 1}  # what the old parser did
        with pytest.raises(ApiError):
            decode_json_body(raw)


def test_one_leading_bom_is_ignored_a_second_is_not() -> None:
    assert decode_json_body(UTF8_BOM + b'{"a": 1}') == {"a": 1}
    assert "one byte order mark" in refused(UTF8_BOM + UTF8_BOM + b'{"a": 1}')
    assert "not valid JSON" in refused(b'{"a": 1}' + UTF8_BOM)


def test_non_ascii_text_is_kept() -> None:
    assert decode_json_body('{"name": "Zoë 😀", "k\\u00e9y": "\\ud83d\\ude00"}'.encode()) == {
        "name": "Zoë 😀", "kéy": "😀"}


# --- numbers


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(token: str) -> None:
    assert json.loads(f"[{token}]")  # Python's json takes them
    assert refused(f'{{"rate": {token}}}'.encode()) == f"{token} is not a JSON number"


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5E+309"])
def test_a_number_that_overflows_a_float_is_refused(number: str) -> None:
    assert "too large" in refused(f"[{number}]".encode())


def test_a_number_that_underflows_is_zero() -> None:
    assert decode_json_body(b"[1e-400]") == [0.0]


def test_numbers_longer_than_the_bound_are_refused() -> None:
    digits = "9" * MAX_NUMBER_CHARS
    assert decode_json_body(f"[{digits}]".encode()) == [int(digits)]
    assert decode_json_body(f"[-{digits[1:]}]".encode()) == [-int(digits[1:])]
    for number in (digits + "9", "-" + digits, "1." + digits, "1" * 5000, "1" * 100_000):
        assert refused(f"[{number}]".encode()) == f"a number is longer than {MAX_NUMBER_CHARS} characters"


def test_long_digit_runs_in_strings_are_only_strings() -> None:
    assert decode_json_body(f'{{"notes": "{"1" * 5000}", "n": 12}}'.encode()) == {"notes": "1" * 5000, "n": 12}


# --- repeated keys


@pytest.mark.parametrize("raw", [
    b'{"a": 1, "a": 2}',
    b'{"a": 1, "a": 1}',
    b'{"updates": [{"ratePlanId": 1}, {"ratePlanId": 1, "rate": 2, "ratePlanId": 3}]}',
    b'{"a": 1, "\\u0061": 2}',  # the same key, written two ways
    b'[{"x": {"y": [{"k": 0, "k": 0}]}}]',
])
def test_an_object_that_repeats_a_key_is_refused(raw: bytes) -> None:
    assert refused(raw).startswith("an object repeats the key ")


def test_the_same_key_in_different_objects_is_fine() -> None:
    raw = b'{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": "a:b:c", "d\\":": "{\\"a\\": 1, \\"a\\": 2}"}'
    assert decode_json_body(raw) == json.loads(raw)


# --- nesting


def test_nesting_up_to_the_bound_parses_and_one_more_is_refused() -> None:
    assert decode_json_body(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    assert "nested deeper" in refused(nested(MAX_DEPTH + 1))
    objects = '{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH
    assert decode_json_body(objects.encode()) == json.loads(objects)
    assert "nested deeper" in refused(('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)).encode())


def test_nesting_that_alternates_arrays_and_objects_counts_every_level() -> None:
    def mixed(depth: int) -> bytes:
        opens = "".join('[' if i % 2 == 0 else '{"k":' for i in range(depth))
        closes = "".join(']' if i % 2 == 0 else '}' for i in reversed(range(depth)))
        return (opens + "0" + closes).encode()

    assert decode_json_body(mixed(MAX_DEPTH)) == json.loads(mixed(MAX_DEPTH))
    assert "nested deeper" in refused(mixed(MAX_DEPTH + 1))


def test_depth_is_exact_when_every_level_starts_after_a_sibling() -> None:
    """No long run of opening brackets to spot: each level opens after a closed sibling."""
    def staircase(depth: int) -> bytes:
        return ('[[], {"k": ' * depth + "0" + "}]" * depth).encode()

    assert decode_json_body(staircase(MAX_DEPTH // 2)) == json.loads(staircase(MAX_DEPTH // 2))
    assert "nested deeper" in refused(staircase(MAX_DEPTH // 2 + 1))
    def steps(levels: int) -> bytes:  # the empty sibling is one level deeper than its own
        return ("[[]," * levels + "0" + "]" * levels).encode()

    assert decode_json_body(steps(MAX_DEPTH - 1)) == json.loads(steps(MAX_DEPTH - 1))
    assert "nested deeper" in refused(steps(MAX_DEPTH))


def test_siblings_do_not_add_up_to_depth() -> None:
    wide = "[" + ",".join([str(nested(MAX_DEPTH - 1), "ascii")] * 50) + "]"
    assert len(decode_json_body(wide.encode())) == 50


@pytest.mark.parametrize("raw", [
    b"[" * 100_000,
    nested(100_000),
    b'{"updates": ' + nested(100_000) + b"}",
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    nested(900),  # shallow enough for json.loads on most stacks: our own bound refuses it
])
def test_deep_nesting_is_refused_not_a_recursion_error(raw: bytes) -> None:
    assert "nested deeper" in refused(raw)


def test_brackets_colons_and_escapes_inside_strings_do_not_count() -> None:
    raw = ('{"a": "' + "[{" * 200 + '", "b\\\\": "\\"]]]:::\\\\", "c": ["\\\\\\"[", ":"]}').encode()
    assert decode_json_body(raw) == json.loads(raw)


# --- strings that cannot be stored


@pytest.mark.parametrize("raw", [
    b'["\\ud800"]', b'["\\uDFFF"]', b'["x\\udc00y"]', b'{"\\ud83d": 1}', b'["\\ude00\\ud83d"]',  # pair backwards
    b'{"guest": {"name": "\\ud800"}}',
])
def test_a_lone_surrogate_is_refused_in_keys_and_values(raw: bytes) -> None:
    assert "lone surrogate" in refused(raw)


@pytest.mark.parametrize("raw", [b'["\\u0000"]', b'{"a\\u0000": 1}', b'{"notes": "abc\\u0000"}'])
def test_nul_is_refused_in_keys_and_values(raw: bytes) -> None:
    assert "NUL" in refused(raw)


def test_escapes_that_only_look_risky_are_fine() -> None:
    raw = b'["\\\\u0000", "\\\\ud800", "\\ud83d\\ude00", "\\u0001", "\\u00e9"]'
    assert decode_json_body(raw) == ["\\u0000", "\\ud800", "😀", "\x01", "é"]


# --- any input: a value or VALIDATION, and the same decision as a plain reference decoder


def _reference_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("repeated key")
    return found


def _reference_constant(text: str) -> Any:
    raise ValueError(text)


def _reference_number(text: str) -> Any:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError("long")
    value = json.loads(text)  # the plain parser, for one number
    if value in (float("inf"), float("-inf")):
        raise ValueError("overflow")
    return value


def _reference_depth_and_strings_ok(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth + 1 > MAX_DEPTH:
                return False
            children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
            for key, child in children:
                stack.append((key, 0))
                stack.append((child, depth + 1))
        elif isinstance(item, str) and any(c == "\x00" or "\ud800" <= c <= "\udfff" for c in item):
            return False
    return True


def reference(raw: bytes) -> tuple[bool, Any]:
    """Slow and plain: what the decoder must decide, by object_pairs_hook and a full walk."""
    try:
        text = raw.removeprefix(UTF8_BOM).decode("utf-8")
        value = json.loads(text, object_pairs_hook=_reference_pairs, parse_int=_reference_number,
                           parse_float=_reference_number, parse_constant=_reference_constant)
    except (ValueError, RecursionError):
        return False, None
    return _reference_depth_and_strings_ok(value), value


scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8) | st.sampled_from(["\ud800", "\x00", "[", "{:}", '"\\', "😀"]))
json_values = st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=4), children, max_size=4), max_leaves=30)


def _with_repeated_key(text: str, draw_index: int) -> str:
    """Repeat the first member of the (draw_index-th) object: `{"k": v, ...` -> `{"k": v, "k": v, ...`."""
    starts = [i for i, c in enumerate(text) if c == "{" and text[i + 1:i + 2] == '"']
    if not starts:
        return text
    start = starts[draw_index % len(starts)]
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):  # not JSON there, or a number past the int limit
        return text
    if not isinstance(value, dict) or not value:
        return text
    key, first = next(iter(value.items()))
    member = json.dumps(key) + ": " + json.dumps(first)
    return text[:start + 1] + member + ", " + text[start + 1:]


@st.composite
def json_ish(draw: st.DrawFn) -> bytes:
    """JSON text from a value, then zero or more of the hostile mutations."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    bom = False
    for mutation in draw(st.lists(st.sampled_from(
            ["deep", "constant", "long", "escape", "repeat", "splice", "bom", "cut"]), max_size=3)):
        at = draw(st.integers(0, len(text)))
        if mutation == "deep":
            depth = draw(st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 300, 5000]))
            opener = draw(st.sampled_from(["[", '{"k":']))
            text = opener * depth + text + ("]" if opener == "[" else "}") * depth
        elif mutation == "constant":
            text = text[:at] + draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0", "1E-400"])) + text[at:]
        elif mutation == "long":
            text = text[:at] + draw(st.sampled_from(["-", ""])) + "7" * draw(st.integers(95, 5000)) + text[at:]
        elif mutation == "escape":
            text = text[:at] + draw(st.sampled_from(["\\ud800", "\\udfff", "\\u0000", "\\\\u0000", "\\ud83d\\ude00",
                                                     '\\"', "\\\\"])) + text[at:]
        elif mutation == "repeat":
            text = _with_repeated_key(text, draw(st.integers(0, 10)))
        elif mutation == "splice":
            text = text[:at] + draw(st.text(alphabet='[]{}":,\\ 0123456789.eE-+tfnul\ud800', max_size=6)) + text[at:]
        elif mutation == "cut":
            text = text[:at]
        elif mutation == "bom":
            bom = True
    # surrogatepass: a raw surrogate spliced in becomes bytes that are not UTF-8 (refused).
    raw = text.encode("utf-8", "surrogatepass")
    return UTF8_BOM + raw if bom else raw


def check(raw: bytes) -> None:
    accepted, expected = reference(raw)
    try:
        value = decode_json_body(raw)
    except ApiError as err:
        assert err.code == "VALIDATION" and isinstance(err.details, list) and err.details[0]["path"] == "$"
        assert not accepted, (raw[:200], expected)
        return
    assert accepted and value == expected, raw[:200]


@settings(max_examples=examples(1500), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
@example(b"\x00{\x00}")
@example(b'{"a":1,"a":2}')
def test_any_bytes_parse_or_are_validation(raw: bytes) -> None:
    check(raw)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(json_ish())
def test_any_json_ish_text_gets_the_reference_decision(raw: bytes) -> None:
    check(raw)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.sampled_from([RatesBody, BookingIn, PropertyIn]),
       st.sampled_from(["Europe", "Etc", "Europe/", "..", "tzdata.zi", "UTC"]) | json_values)
def test_any_decoded_object_is_a_model_or_validation(value: Any, model: Any, timezone: Any) -> None:
    """parse_payload never lets anything but VALIDATION out, for any value the decoder passes
    (time zones that name tzdata's directories and files included)."""
    try:
        payload = decode_json_body(json.dumps({"updates": value, "guest": value, "timezone": timezone,
                                               "checkIn": value}).encode())
    except ApiError:
        return
    try:
        parse_payload(model, payload)
    except ApiError as err:
        assert err.code == "VALIDATION"


def test_parse_payload_refuses_a_payload_that_cannot_be_written_back() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    for payload in ({"updates": deep}, {"updates": [float("nan")]}, {"updates": {1, 2}}):
        with pytest.raises(ApiError) as info:
            parse_payload(RatesBody, payload)
        assert info.value.code == "VALIDATION"
