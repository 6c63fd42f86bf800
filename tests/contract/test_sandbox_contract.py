"""The sandbox against Channex's documented requests and answers (channex_cases.py), over
real HTTP, on a standing mock clock (budgets are per minute: nothing expires unless a test
jumps the clock)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio.testing

from .channex_cases import CASES
from .sandbox import KEY, dig, fill, mismatches, send, served_sandbox

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.mark.parametrize("name", sorted(CASES))
async def test_documented_case(mock_clock: trio.testing.MockClock, name: str) -> None:
    case: dict[str, Any] = CASES[name]
    async with served_sandbox() as served:
        for step in case.get("before", []):
            answer = await send(served, step)
            assert answer.is_success, f"{step['path']}: {answer.status_code} {answer.text}"
            for captured, path in step.get("capture", {}).items():
                served.names[captured] = dig(answer.json(), path)
        key = case.get("key", "right")
        answer = await send(served, case["request"], KEY if key == "right" else key)
        assert answer.status_code == case["status"], answer.text
        assert mismatches(fill(case["body"], served.names), answer.json()) == []
        assert _UUID.fullmatch(answer.headers["x-request-id"])
        for header in case.get("absent_headers", []):
            assert header not in answer.headers


async def test_every_answer_carries_its_own_request_id(mock_clock: trio.testing.MockClock) -> None:
    async with served_sandbox() as served:
        ids = set()
        for path in ("/_sandbox/stats", "/api/v1/booking_revisions/feed", "/api/v1/nowhere", "/_sandbox/calls"):
            answer = await served.http.get(path)
            ids.add(answer.headers["x-request-id"])
        answer = await served.http.get("/api/v1/nowhere")
        assert answer.status_code == 404 and answer.json() == {"errors": {"code": "not_found",
                                                                          "title": "Resouce Not Found"}}
        ids.add(answer.headers["x-request-id"])
        assert len(ids) == 5 and all(_UUID.fullmatch(i) for i in ids)
