"""The status report's fields, typed (issue 43, item 4): what `connectapi status --json`
prints (docs/operations.md, Status, JSON fields) and what its lines for a person are read
from. Built by domain/status_report.py, which mypy holds to these shapes.

Times are ISO 8601 text on the record's clock, ages seconds; a part is null when the
record could not be read.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict


class MigrationsPart(TypedDict):
    applied: int
    known: int  # bundled with this version
    latestApplied: int | None
    latestKnown: int | None
    missing: list[int]
    unknown: list[int]  # applied by a newer version


class RecordPart(TypedDict):
    reachable: bool
    server: str
    embedded: bool
    embeddedWasRunning: bool | None
    error: str | None
    migrations: MigrationsPart | None  # null when unreachable


class ServicePart(TypedDict):
    url: str
    up: bool
    ready: bool | None
    notReady: str | None
    error: str | None
    # Each as the service answered it (GET /readyz or the admin API's actors), passed on
    # unchecked: the report only names the actor and prints the rest.
    actorsDown: list[dict[str, Any]]
    liveWriters: int | None
    workers: int | None
    workerPids: list[int]
    adminError: str | None


class FailingProperty(TypedDict):
    id: int
    name: str
    failures: int
    lastError: str | None
    dirtyCells: int
    oldestDirtyAt: str | None


class RefusedProperty(TypedDict):
    id: int
    name: str
    refusedCells: int
    lastError: str | None


class PropertiesPart(TypedDict):
    total: int
    notPushed: int
    inSync: int
    pending: int
    backingOff: int
    failing: int
    refused: int
    dirtyCells: int
    oldestDirtyAt: str | None  # null too when only bookings moved the dirty cells
    oldestDirtyAgeSeconds: float | None
    failingProperties: list[FailingProperty]
    refusedProperties: list[RefusedProperty]


class PausedEndpoint(TypedDict):
    id: int
    propertyId: int


class FailingEndpoint(TypedDict):
    id: int
    propertyId: int
    failingSince: str | None


class DeliveriesPart(TypedDict):
    pending: int
    due: int
    held: int
    oldestDueAt: str | None
    oldestDueAgeSeconds: float | None


class WebhooksPart(TypedDict):
    endpoints: int
    paused: int
    failing: int
    pausedEndpoints: list[PausedEndpoint]
    failingEndpoints: list[FailingEndpoint]
    deliveries: DeliveriesPart


class OutboxPart(TypedDict):
    unsent: int
    retrying: int
    oldestAt: str | None
    oldestAgeSeconds: float | None


class TableRow(TypedDict):
    table: str
    bytes: int
    rowsEstimate: int | None
    grows: bool
    oldestAt: str | None
    oldestAgeSeconds: float | None


class StatusReport(TypedDict):
    version: str
    record: RecordPart
    service: ServicePart
    properties: PropertiesPart | None
    webhooks: WebhooksPart | None
    outbox: OutboxPart | None
    tables: list[TableRow] | None
    checkedAt: str | None
    problems: list[str]
    ok: bool
