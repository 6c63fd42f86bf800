"""docs/integration-guide.md says what the service does (issue 45's small ones): rates are
whole major units, and its Python and TypeScript booking snippets can both be run against
one property (each its own externalReference: the same one twice is a replay)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from connectapi.domain.ari_models import RatesBody
from connectapi.domain.errors import ApiError
from connectapi.domain.validation import parse_payload

GUIDE = (Path(__file__).parents[2] / "docs" / "integration-guide.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, flags=re.S)


def test_the_booking_snippets_of_each_library_name_their_own_reference() -> None:
    python = {r for b in blocks("python") for r in re.findall(r'"externalReference": "([^"]+)"', b)}
    typescript = {r for b in blocks("ts") for r in re.findall(r'externalReference: "([^"]+)"', b)}
    assert python and typescript and not python & typescript


def test_the_rates_the_guide_shows_are_taken_and_the_one_it_says_is_refused_is() -> None:
    money = GUIDE.split("## Dates and money", 1)[1].split("\n## ", 1)[0]
    assert "whole" in money and "decimal string (" not in money
    shown = re.findall(r'`"?(\d+(?:\.\d+)?)"?`', money)
    assert {"120", "120.00", "135.50"} <= set(shown)

    def body(rate: str) -> dict[str, object]:
        return {"updates": [{"ratePlanId": 1, "dateFrom": "2026-12-01", "dateTo": "2026-12-01", "rate": rate,
                             "currency": "EUR"}]}
    for rate in (r for r in shown if Decimal(r) == Decimal(r).to_integral_value()):
        parse_payload(RatesBody, body(rate))
    with pytest.raises(ApiError) as refused:
        parse_payload(RatesBody, body("135.50"))
    assert refused.value.code == "VALIDATION"
