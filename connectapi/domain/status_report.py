"""`connectapi status`: the facts read from the record and the running service, shaped
into one report, its problems, and its lines for a person. Pure: no I/O.

A property the service pushes (channel manager on, status active) is in one of four
sync states, by its dirty cells (version > pushed_version) and the push state the record
keeps for it (migration 0019: the last outcome, failures in a row, the next attempt):

- `in_sync`: no dirty cell.
- `pending`: dirty cells and nothing holding them back: they go out with the next push.
- `backing_off`: dirty cells, and the channel manager's last answer set a pause that has
  not run out (`cm_next_attempt_at` ahead): a throttle or a failure being retried.
- `failing`: dirty cells, the last push failed, and either FAILING_AFTER failures in a
  row or a failure that waiting will not mend (no next attempt set: the property is not
  mapped, say). It needs a person; a failing property is a problem of the report.
- `refused`: dirty cells the channel manager refused in a 200 (a rate plan closed there,
  say), offered again with backoff; the channels do not show them. A problem too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .status_json import (
    OutboxPart,
    PropertiesPart,
    RecordPart,
    ServicePart,
    StatusReport,
    TableRow,
    WebhooksPart,
)
from .sync_state import FAILING_AFTER as FAILING_AFTER  # failures in a row: failing rather than backing off, as GET /sync says

SYNC_STATES = ("in_sync", "pending", "backing_off", "refused", "failing")


@dataclass(frozen=True, slots=True)
class PropertySync:
    property_id: int
    name: str
    pushed: bool  # channel manager on and status active: the service pushes it
    dirty_cells: int
    # The oldest write batch that last wrote one of its dirty cells (None: no dirty cell,
    # or only cells moved by bookings, which have no batch).
    oldest_dirty_at: datetime | None
    last_outcome: str | None  # ok, partial, failed; None before the first push
    last_error: str | None
    failures: int
    next_attempt_at: datetime | None
    refused_cells: int = 0  # of the dirty cells, those the channel manager refused


def sync_state(prop: PropertySync, now: datetime) -> str:
    """One of SYNC_STATES (see the module's docstring)."""
    if prop.dirty_cells == 0:
        return "in_sync"
    if prop.last_outcome == "failed" and (prop.failures >= FAILING_AFTER or prop.next_attempt_at is None):
        return "failing"
    if prop.next_attempt_at is not None and prop.next_attempt_at > now:
        return "backing_off"
    if prop.refused_cells:
        return "refused"
    return "pending"


@dataclass(frozen=True, slots=True)
class Migrations:
    applied: tuple[int, ...]
    known: tuple[int, ...]  # bundled with this version

    @property
    def missing(self) -> list[int]:
        return sorted(set(self.known) - set(self.applied))

    @property
    def unknown(self) -> list[int]:
        """Applied by a newer version than this one."""
        return sorted(set(self.applied) - set(self.known))


@dataclass(frozen=True, slots=True)
class Endpoint:
    endpoint_id: int
    property_id: int
    paused: bool
    failing_since: datetime | None


@dataclass(frozen=True, slots=True)
class Deliveries:
    pending: int  # not yet answered 2xx
    due: int  # pending, due now, to an endpoint that is not paused
    held: int  # pending for a paused endpoint
    oldest_due_at: datetime | None  # the earliest next attempt of those not held


@dataclass(frozen=True, slots=True)
class Outbox:
    unsent: int
    retrying: int  # unsent after at least one failed attempt
    oldest_at: datetime | None


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    bytes: int  # pg_total_relation_size: rows, indexes and TOAST
    rows_estimate: int | None  # the planner's estimate; None before the first ANALYZE
    oldest_at: datetime | None = None  # for the tables that grow: the oldest row's time
    grows: bool = False


@dataclass(frozen=True, slots=True)
class RecordFacts:
    now: datetime  # the record's clock: every age is measured on it
    migrations: Migrations
    properties: tuple[PropertySync, ...]
    endpoints: tuple[Endpoint, ...]
    deliveries: Deliveries
    outbox: Outbox
    tables: tuple[Table, ...]


@dataclass(frozen=True, slots=True)
class RecordAccess:
    server: str  # where: "embedded in DIR" or the URL without its password
    embedded: bool
    # embedded only: whether its server was running before this check (with the service),
    # or was started for it and stopped after.
    was_running: bool | None = None
    error: str | None = None  # why it could not be read
    facts: RecordFacts | None = None


@dataclass(frozen=True, slots=True)
class ServiceFacts:
    url: str
    up: bool  # GET /healthz answered 200
    error: str | None = None  # why it could not be reached
    ready: bool | None = None  # GET /readyz 200
    not_ready: str | None = None  # its reason, when 503
    # As the service answered them (GET /readyz, the admin API's actors): read, not checked.
    actors_down: tuple[dict[str, Any], ...] = ()
    live_writers: int | None = None
    workers: int | None = None
    worker_pids: tuple[int, ...] = ()
    admin_error: str | None = None  # why the admin answer is missing (no token, 401 …)


def safe_server(dsn: str) -> str:
    """A DATABASE_URL as it may be shown: scheme, user, host, port and database; never
    the password (in the netloc or in a `password=` query). A socket directory given as
    `?host=` stays a query."""
    parts = urlsplit(dsn)
    # By hand, not .hostname/.port: libpq allows several hosts (`h1:5432,h2:5432`), which
    # urllib's port parsing refuses.
    userinfo, _, where = parts.netloc.rpartition("@")
    name = unquote(userinfo.partition(":")[0])
    user = f"{name}@" if name else ""
    socket = ",".join(parse_qs(parts.query).get("host", []))
    return f"{parts.scheme or 'postgresql'}://{user}{where}{parts.path or '/'}" + (f"?host={socket}" if socket else "")


@dataclass
class _Problems:
    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.items.append(text)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _age(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else round(max(0.0, (now - then).total_seconds()), 1)


def report(version: str, record: RecordAccess, service: ServiceFacts) -> StatusReport:
    """The whole report as one JSON-ready object (its fields: docs/operations.md, Status)."""
    problems = _Problems()
    record_part = _record_part(record, problems)
    service_part = _service_part(service, problems)
    facts = record.facts
    properties = None if facts is None else _properties_part(facts, problems)
    webhooks = None if facts is None else _webhooks_part(facts, problems)
    outbox: OutboxPart | None = None if facts is None else {
        "unsent": facts.outbox.unsent, "retrying": facts.outbox.retrying,
        "oldestAt": _iso(facts.outbox.oldest_at), "oldestAgeSeconds": _age(facts.now, facts.outbox.oldest_at)}
    tables: list[TableRow] | None = None if facts is None else [
        {"table": t.name, "bytes": t.bytes, "rowsEstimate": t.rows_estimate, "grows": t.grows,
         "oldestAt": _iso(t.oldest_at), "oldestAgeSeconds": _age(facts.now, t.oldest_at)}
        for t in facts.tables]
    return {"version": version, "record": record_part, "service": service_part, "properties": properties,
            "webhooks": webhooks, "outbox": outbox, "tables": tables,
            "checkedAt": None if facts is None else facts.now.isoformat(),
            "problems": problems.items, "ok": not problems.items}


def _record_part(record: RecordAccess, problems: _Problems) -> RecordPart:
    part: RecordPart = {"reachable": record.facts is not None, "server": record.server,
                        "embedded": record.embedded, "embeddedWasRunning": record.was_running,
                        "error": record.error, "migrations": None}
    if record.facts is None:
        problems.add(f"the record is unreachable ({record.server}): {record.error}")
        return part
    migrations = record.facts.migrations
    part["migrations"] = {"applied": len(migrations.applied), "known": len(migrations.known),
                          "latestApplied": max(migrations.applied, default=None),
                          "latestKnown": max(migrations.known, default=None),
                          "missing": migrations.missing, "unknown": migrations.unknown}
    if migrations.missing:
        problems.add(f"migrations not applied: {migrations.missing} (the service applies them at start; "
                     "or run connectapi migrate)")
    return part


def _service_part(service: ServiceFacts, problems: _Problems) -> ServicePart:
    part: ServicePart = {
        "url": service.url, "up": service.up, "ready": service.ready, "notReady": service.not_ready,
        "error": service.error, "actorsDown": list(service.actors_down), "liveWriters": service.live_writers,
        "workers": service.workers, "workerPids": list(service.worker_pids), "adminError": service.admin_error}
    if not service.up:
        problems.add(f"the service is not running at {service.url} ({service.error})")
        return part
    if service.ready is False:
        problems.add(f"the service is not ready: {service.not_ready}")
    for down in service.actors_down:
        problems.add(f"actor {down.get('actor')} is down: {down.get('degraded') or down.get('reason')}")
    return part


def _properties_part(facts: RecordFacts, problems: _Problems) -> PropertiesPart:
    pushed = [p for p in facts.properties if p.pushed]
    states = {p.property_id: sync_state(p, facts.now) for p in pushed}
    counts = {state: sum(1 for s in states.values() if s == state) for state in SYNC_STATES}
    oldest = min((p.oldest_dirty_at for p in pushed if p.oldest_dirty_at is not None), default=None)
    failing = [p for p in pushed if states[p.property_id] == "failing"]
    for prop in failing:
        problems.add(f"property {prop.property_id} ({prop.name}) is failing to sync: {prop.failures} failure(s), "
                     f"{prop.last_error}")
    refused = [p for p in pushed if states[p.property_id] == "refused"]
    for prop in refused:
        problems.add(f"property {prop.property_id} ({prop.name}): the channel manager refused {prop.refused_cells} "
                     f"cell(s)")
    return {
        "total": len(facts.properties), "notPushed": len(facts.properties) - len(pushed),
        "inSync": counts["in_sync"], "pending": counts["pending"], "backingOff": counts["backing_off"],
        "failing": counts["failing"], "refused": counts["refused"], "dirtyCells": sum(p.dirty_cells for p in pushed),
        "oldestDirtyAt": _iso(oldest), "oldestDirtyAgeSeconds": _age(facts.now, oldest),
        "failingProperties": [
            {"id": p.property_id, "name": p.name, "failures": p.failures, "lastError": p.last_error,
             "dirtyCells": p.dirty_cells, "oldestDirtyAt": _iso(p.oldest_dirty_at)} for p in failing],
        "refusedProperties": [
            {"id": p.property_id, "name": p.name, "refusedCells": p.refused_cells, "lastError": p.last_error}
            for p in refused],
    }


def _webhooks_part(facts: RecordFacts, problems: _Problems) -> WebhooksPart:
    paused = [e for e in facts.endpoints if e.paused]
    failing = [e for e in facts.endpoints if e.failing_since is not None]
    if paused:
        problems.add(f"{len(paused)} webhook endpoint(s) paused: {', '.join(str(e.endpoint_id) for e in paused)}")
    active_failing = [e for e in failing if not e.paused]
    if active_failing:
        problems.add(f"{len(active_failing)} webhook endpoint(s) failing: "
                     f"{', '.join(str(e.endpoint_id) for e in active_failing)}")
    d = facts.deliveries
    return {
        "endpoints": len(facts.endpoints), "paused": len(paused), "failing": len(failing),
        "pausedEndpoints": [{"id": e.endpoint_id, "propertyId": e.property_id} for e in paused],
        "failingEndpoints": [{"id": e.endpoint_id, "propertyId": e.property_id,
                              "failingSince": _iso(e.failing_since)} for e in failing],
        "deliveries": {"pending": d.pending, "due": d.due, "held": d.held, "oldestDueAt": _iso(d.oldest_due_at),
                       "oldestDueAgeSeconds": _age(facts.now, d.oldest_due_at)},
    }


# The report for a person: short aligned lines, grouped; "PROBLEM" before what needs attention.

PROBLEM = "PROBLEM"


def human_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole < 120:
        return f"{whole}s"
    if whole < 7200:
        return f"{whole // 60}m"
    if whole < 172800:
        return f"{whole // 3600}h"
    return f"{whole // 86400}d"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def render(body: StatusReport) -> str:
    """`body` (from `report`) as lines: a group title, then `  label  value` aligned."""
    groups: list[tuple[str, list[tuple[str, str, bool]]]] = []  # (title, [(label, value, problem)])
    groups.append(("connectapi", [("version", str(body["version"]), False)]))
    groups.append(("record", _record_lines(body["record"])))
    groups.append(("service", _service_lines(body["service"])))
    props, hooks, outbox, tables = body["properties"], body["webhooks"], body["outbox"], body["tables"]
    # The four are null together (the record's facts were not read): checked one by one for mypy.
    if props is not None and hooks is not None and outbox is not None and tables is not None:
        groups.append(("properties", _property_lines(props)))
        groups.append(("queues", _queue_lines(hooks, outbox)))
        groups.append(("tables", _table_lines(tables)))
    width = max(len(label) for _, lines in groups for label, _, _ in lines)
    out: list[str] = []
    for title, lines in groups:
        out.append(title)
        for label, value, problem in lines:
            marker = PROBLEM if problem else ""
            out.append(f"  {marker:<{len(PROBLEM)}}  {label:<{width}}  {value}".rstrip())
    summary = "all well" if body["ok"] else f"{len(body['problems'])} problem(s):"
    out.append("")
    out.append(summary)
    out.extend(f"  - {p}" for p in body["problems"])
    return "\n".join(out)


def _record_lines(record: RecordPart) -> list[tuple[str, str, bool]]:
    lines = [("server", record["server"], False)]
    if record["embedded"] and record["embeddedWasRunning"] is False and record["reachable"]:
        lines.append(("embedded server", "was not running: started for this check, stopped after", False))
    m = record["migrations"]
    if not record["reachable"] or m is None:  # null exactly when unreachable
        lines.append(("reachable", f"no: {record['error']}", True))
        return lines
    lines.append(("reachable", "yes", False))
    text = f"{m['applied']} applied, {m['known']} known (latest {m['latestApplied']} of {m['latestKnown']})"
    if m["missing"]:
        text += f"; missing {m['missing']}"
    if m["unknown"]:
        text += f"; {m['unknown']} from a newer version"
    lines.append(("migrations", text, bool(m["missing"])))
    return lines


def _service_lines(service: ServicePart) -> list[tuple[str, str, bool]]:
    if not service["up"]:
        return [("running", f"no: not running at {service['url']} ({service['error']})", True)]
    lines = [("running", f"yes, at {service['url']}", False)]
    if service["ready"]:
        lines.append(("ready", "yes", False))
    else:
        lines.append(("ready", f"no: {service['notReady']}", True))
    if service["workers"] is not None:
        pids = ", ".join(str(p) for p in service["workerPids"])
        lines.append(("workers", f"{service['workers']} (pid {pids})", False))
    if service["adminError"]:
        lines.append(("actors", f"unknown: {service['adminError']}", False))
    elif service["actorsDown"]:
        names = ", ".join(str(d.get("actor")) for d in service["actorsDown"])
        lines.append(("actors down", f"{len(service['actorsDown'])}: {names}", True))
    else:
        lines.append(("actors down", f"none ({service['liveWriters']} property writers live)", False))
    return lines


def _property_lines(props: PropertiesPart) -> list[tuple[str, str, bool]]:
    lines = [("in sync", str(props["inSync"]), False),
             ("pending", str(props["pending"]), False),
             ("backing off", str(props["backingOff"]), False),
             ("refused", str(props["refused"]), props["refused"] > 0),
             ("failing", str(props["failing"]), props["failing"] > 0)]
    if props["dirtyCells"]:
        oldest = ("written by bookings (no batch)" if props["oldestDirtyAt"] is None
                  else f"written {human_age(props['oldestDirtyAgeSeconds'])} ago")
        lines.append(("dirty cells", f"{props['dirtyCells']}, oldest {oldest}", False))
    for failing in props["failingProperties"]:
        lines.append((f"property {failing['id']}", f"{failing['name']}: {failing['failures']} failure(s), "
                                                   f"{failing['lastError']}", True))
    for refused in props["refusedProperties"]:
        lines.append((f"property {refused['id']}", f"{refused['name']}: {refused['refusedCells']} cell(s) refused "
                                                   f"by the channel manager, {refused['lastError']}", True))
    if props["notPushed"]:
        lines.append(("not pushed", f"{props['notPushed']} (no channel manager, deleted or demo)", False))
    return lines


def _queue_lines(hooks: WebhooksPart, outbox: OutboxPart) -> list[tuple[str, str, bool]]:
    paused_ids = ", ".join(str(e["id"]) for e in hooks["pausedEndpoints"])
    d = hooks["deliveries"]
    delivery = f"{d['pending']} pending, {d['due']} due now"
    if d["held"]:
        delivery += f", {d['held']} held by paused endpoints"
    if d["oldestDueAt"] is not None:
        delivery += f"; oldest due {human_age(d['oldestDueAgeSeconds'])} ago"
    mail = f"{outbox['unsent']} unsent"
    if outbox["retrying"]:
        mail += f" ({outbox['retrying']} retrying)"
    if outbox["oldestAt"] is not None:
        mail += f", oldest {human_age(outbox['oldestAgeSeconds'])}"
    return [("webhook endpoints", f"{hooks['endpoints']}", False),
            ("paused", f"{hooks['paused']}" + (f" (id {paused_ids})" if paused_ids else ""), hooks["paused"] > 0),
            ("failing", f"{hooks['failing']}", hooks["failing"] > 0),
            ("deliveries", delivery, False),
            ("outbox", mail, False)]


def _table_lines(tables: list[TableRow]) -> list[tuple[str, str, bool]]:
    """The tables that grow, each with its size and oldest row; the others in one line
    (each of them is in the JSON)."""
    lines = []
    for table in tables:
        if table["grows"]:
            oldest = "empty" if table["oldestAt"] is None else f"oldest {human_age(table['oldestAgeSeconds'])}"
            lines.append((table["table"], f"{human_bytes(table['bytes']):<9}  {oldest}", False))
    others = [t for t in tables if not t["grows"]]
    if others:
        largest = max(others, key=lambda t: t["bytes"])
        lines.append(("other tables", f"{human_bytes(sum(t['bytes'] for t in others)):<9}  {len(others)} tables, "
                                      f"largest {largest['table']} {human_bytes(largest['bytes'])}", False))
    lines.append(("all", human_bytes(sum(t["bytes"] for t in tables)), False))
    return lines
