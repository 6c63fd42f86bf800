"""`connectapi status`'s shaping: the four sync states, the problems, the DSN shown
without its password, and the lines for a person."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from connectapi.domain.status_report import (
    FAILING_AFTER,
    Deliveries,
    Endpoint,
    Migrations,
    Outbox,
    PropertySync,
    RecordAccess,
    RecordFacts,
    ServiceFacts,
    Table,
    human_age,
    render,
    report,
    safe_server,
    sync_state,
)

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def prop(pid: int = 1, *, dirty: int = 0, outcome: str | None = None, failures: int = 0,
         next_in: float | None = None, pushed: bool = True, oldest_ago: float | None = None,
         refused: int = 0) -> PropertySync:
    return PropertySync(pid, f"P{pid}", pushed, dirty, None if oldest_ago is None else NOW - timedelta(seconds=oldest_ago),
                        outcome, "boom" if outcome == "failed" else None, failures,
                        None if next_in is None else NOW + timedelta(seconds=next_in), refused)


@pytest.mark.parametrize(("given", "state"), [
    (prop(), "in_sync"),
    (prop(outcome="failed", failures=9), "in_sync"),  # nothing waits: a past failure is history
    (prop(dirty=3), "pending"),
    (prop(dirty=3, outcome="ok"), "pending"),
    (prop(dirty=3, outcome="failed", failures=1, next_in=-5), "pending"),  # its pause ran out: next push
    (prop(dirty=3, outcome="failed", failures=1, next_in=30), "backing_off"),
    (prop(dirty=3, outcome="failed", failures=0, next_in=60), "backing_off"),  # a 429's Retry-After
    (prop(dirty=3, outcome="failed", failures=FAILING_AFTER - 1, next_in=8), "backing_off"),
    (prop(dirty=3, outcome="failed", failures=FAILING_AFTER, next_in=16), "failing"),
    (prop(dirty=3, outcome="failed", failures=FAILING_AFTER + 4, next_in=-1), "failing"),
    (prop(dirty=3, outcome="failed", failures=0, next_in=None), "failing"),  # not mapped: waiting will not mend it
    (prop(dirty=3, outcome="refused", refused=2), "refused"),  # the channel manager refused some in a 200
    (prop(dirty=3, outcome="failed", failures=1, next_in=30, refused=2), "backing_off"),
])
def test_sync_state(given: PropertySync, state: str) -> None:
    assert sync_state(given, NOW) == state


def facts(*props: PropertySync, endpoints: tuple[Endpoint, ...] = (), missing: bool = False) -> RecordFacts:
    known = (1, 2, 3)
    return RecordFacts(NOW, Migrations((1, 2) if missing else known, known), props, endpoints,
                       Deliveries(4, 1, 2, NOW - timedelta(seconds=90)), Outbox(2, 1, NOW - timedelta(hours=3)),
                       (Table("write_batches", 81920, 10, NOW - timedelta(days=40), True),
                        Table("properties", 16384, 3)))


UP = ServiceFacts("http://127.0.0.1:8080", True, ready=True, live_writers=2, workers=2, worker_pids=(11, 12))
RECORD = "embedded in /srv/var/pgdata"


def test_all_well_is_ok_and_counts_each_state() -> None:
    body = report("1.2.3", RecordAccess(RECORD, True, True, facts=facts(
        prop(1), prop(2, dirty=4, oldest_ago=300), prop(3, dirty=1, outcome="failed", failures=1, next_in=20,
                                                        oldest_ago=30),
        prop(4, dirty=9, pushed=False))), UP)
    assert body["ok"] is True and body["problems"] == []
    props = body["properties"]
    assert props is not None and body["record"]["migrations"] is not None and body["tables"] is not None
    assert (props["total"], props["notPushed"], props["inSync"], props["pending"], props["backingOff"],
            props["failing"]) == (4, 1, 1, 1, 1, 0)
    assert props["dirtyCells"] == 5  # the property not pushed is not counted
    assert props["oldestDirtyAgeSeconds"] == 300.0
    assert body["service"]["workers"] == 2
    assert body["record"]["migrations"]["missing"] == []
    growing = [t for t in body["tables"] if t["grows"]]
    assert growing == [{"table": "write_batches", "bytes": 81920, "rowsEstimate": 10, "grows": True,
                        "oldestAt": (NOW - timedelta(days=40)).isoformat(), "oldestAgeSeconds": 40 * 86400.0}]
    text = render(body)
    assert "PROBLEM" not in text and "all well" in text
    assert "workers" in text and "(pid 11, 12)" in text


def test_problems_need_attention() -> None:
    failing = prop(7, dirty=2, outcome="failed", failures=5, next_in=100)
    hooks = (Endpoint(3, 7, True, None), Endpoint(4, 7, False, NOW - timedelta(hours=1)), Endpoint(5, 7, False, None))
    down = ServiceFacts("http://127.0.0.1:8080", True, ready=False, not_ready="webhook-sender is down",
                        actors_down=({"actor": "webhook-sender", "degraded": "deliveries wait"},))
    body = report("1.2.3", RecordAccess(RECORD, True, True, facts=facts(failing, endpoints=hooks, missing=True)), down)
    assert body["ok"] is False
    joined = "\n".join(body["problems"])
    for needle in ("migrations not applied: [3]", "not ready", "webhook-sender is down",
                   "property 7 (P7) is failing", "1 webhook endpoint(s) paused: 3", "failing: 4"):
        assert needle in joined
    assert body["webhooks"] is not None and body["webhooks"]["pausedEndpoints"] == [{"id": 3, "propertyId": 7}]
    text = render(body)
    problem_lines = [line for line in text.splitlines() if line.startswith("  PROBLEM")]
    assert any("failing" in line for line in problem_lines)
    assert any("paused" in line and "id 3" in line for line in problem_lines)
    assert any("actors down" in line for line in problem_lines)


def test_record_unreachable_and_service_down() -> None:
    body = report("1.2.3", RecordAccess("postgresql://app@db.example:5432/connect", False,
                                        error="connection refused"),
                  ServiceFacts("http://127.0.0.1:8080", False, error="ConnectError"))
    assert body["ok"] is False
    assert body["record"]["reachable"] is False and body["properties"] is None and body["tables"] is None
    assert any("not running" in p for p in body["problems"])
    assert any("unreachable" in p for p in body["problems"])
    text = render(body)
    assert "properties" not in text.splitlines()  # no group without the record
    assert "no: connection refused" in text


def test_lines_are_aligned() -> None:
    text = render(report("1.2.3", RecordAccess(RECORD, True, True, facts=facts(prop(1))), UP))
    rows = [re.fullmatch(r"  (PROBLEM| {7})  (\S.*?) {2,}(\S.*)", line)
            for line in text.splitlines() if line.startswith("  ") and not line.startswith("  - ")]
    assert rows and all(rows)
    assert len({m.start(3) for m in rows if m}) == 1, text  # every value in one column


@pytest.mark.parametrize(("dsn", "shown"), [
    ("postgresql://app:s3cret@db.example:5433/connect", "postgresql://app@db.example:5433/connect"),
    ("postgres://app:s3cret@db.example/connect?sslmode=require", "postgres://app@db.example/connect"),
    ("postgresql:///connect?host=/run/pg&password=s3cret", "postgresql:///connect?host=/run/pg"),
    ("postgresql://app:s3cret@h1:5432,h2:5433/connect", "postgresql://app@h1:5432,h2:5433/connect"),
    ("postgresql://app:s3:cr@t@[::1]:5432/connect", "postgresql://app@[::1]:5432/connect"),
])
def test_the_password_is_never_shown(dsn: str, shown: str) -> None:
    assert safe_server(dsn) == shown
    assert "s3cret" not in shown


def test_human_age() -> None:
    assert [human_age(s) for s in (None, 5, 119, 120, 7199, 7200, 172799, 172800)] == [
        "-", "5s", "119s", "2m", "119m", "2h", "47h", "2d"]


def test_a_property_with_refused_cells_is_a_problem() -> None:
    shaped = report("1.2.3", RecordAccess(RECORD, True, True, facts=facts(
        prop(7, dirty=4, outcome="refused", refused=3))), UP)
    props = shaped["properties"]
    assert props is not None
    assert shaped["ok"] is False and props["refused"] == 1
    assert props["refusedProperties"] == [
        {"id": 7, "name": "P7", "refusedCells": 3, "lastError": None}]
    assert "property 7 (P7): the channel manager refused 3 cell(s)" in shaped["problems"]
    assert "cell(s) refused by the channel manager" in render(shaped)
