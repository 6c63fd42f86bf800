"""`connectapi admin …` and `connectapi seed`: the admin routes from the command line, over HTTP.

One table says which words call which route; lists print as tables, everything else as
JSON, and `--json` gives JSON for all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from typing_extensions import TypedDict

from .cli_admin_bodies import KeyCreateBody, KeyUpdateBody, OwnerCreateBody, OwnerUpdateBody, PropertyBody
from .config import ADMIN_TOKEN_FILE, Settings
from .data_dir import UnsafePath, read_token_file

DEFAULT_URL = "http://127.0.0.1:8080"
EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write", "bookings:payments"]
Body = Callable[[argparse.Namespace], Any]


def _file(args: argparse.Namespace) -> Any:
    text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    return json.loads(text)


def _key_create(args: argparse.Namespace) -> KeyCreateBody:
    body: KeyCreateBody = {"label": args.label, "allowlist": args.allow or [], "mode": args.mode}
    if args.legacy:
        body["legacy"] = True
    else:
        body["scopes"] = args.scope or []
    return body


def _key_update(args: argparse.Namespace) -> KeyUpdateBody:
    body: KeyUpdateBody = {}
    if args.label is not None:
        body["label"] = args.label
    if args.scope is not None:
        body["scopes"] = args.scope
    if args.allow is not None:
        body["allowlist"] = args.allow
    return body


def _owner_create(args: argparse.Namespace) -> OwnerCreateBody:
    return {"email": args.email, "name": args.name, "propertyIds": args.property or []}


def _owner_update(args: argparse.Namespace) -> OwnerUpdateBody:
    body: OwnerUpdateBody = {}
    if args.name is not None:
        body["name"] = args.name
    if args.property is not None or args.no_properties:
        body["propertyIds"] = args.property or []
    if args.disable or args.enable:
        body["disabled"] = bool(args.disable)
    return body


class ArgumentOptions(TypedDict, total=False):
    """What `add_argument` is given for a command's option (those the table uses)."""

    action: str
    choices: tuple[str, ...]
    default: str
    dest: str
    help: str
    required: bool
    type: Callable[[str], object]


@dataclass(frozen=True)
class Command:
    words: tuple[str, str]  # thing, action
    method: str
    path: str  # with {id} for the positional id
    help: str
    id_name: str | None = None  # the positional argument's name
    body: Body | None = None
    options: tuple[tuple[str, ArgumentOptions], ...] = ()
    query: tuple[str, ...] = ()  # options sent as query parameters
    columns: tuple[str, ...] = ()  # a list answer prints as a table of these


_FILE: tuple[tuple[str, ArgumentOptions], ...] = (
    ("--file", {"required": True, "help": "JSON body, or - for standard input"}),)
_MODE_OPTION: tuple[str, ArgumentOptions] = (
    "--mode", {"choices": ("live", "test"), "default": "live",
               "help": "test: of the property's test record, which never reaches a real channel"})
_KEY_OPTIONS: tuple[tuple[str, ArgumentOptions], ...] = (
    ("--label", {}), ("--scope", {"action": "append", "help": "repeat for each scope"}),
    ("--allow", {"action": "append", "help": "allowlist address or CIDR; repeat"}))

COMMANDS: tuple[Command, ...] = (
    Command(("property", "create"), "POST", "/properties", "create a property from a JSON body", body=_file,
            options=_FILE),
    Command(("property", "get"), "GET", "/properties/{id}", "a property with its catalog", "property_id"),
    Command(("property", "update"), "PATCH", "/properties/{id}", "change a property (JSON body)", "property_id",
            _file, _FILE),
    Command(("property", "map"), "PUT", "/properties/{id}/channel-mapping", "set the channel-manager mapping",
            "property_id", _file, _FILE),
    Command(("property", "grid"), "GET", "/properties/{id}/channel-grid", "what the channel manager holds",
            "property_id", options=(("--from", {"dest": "from_"}), ("--to", {}), _MODE_OPTION),
            query=("from_", "to", "mode")),
    Command(("room-type", "add"), "POST", "/properties/{id}/room-types", "add a room type (JSON body)",
            "property_id", _file, _FILE),
    Command(("rate-plan", "add"), "POST", "/properties/{id}/rate-plans", "add a rate plan (JSON body)",
            "property_id", _file, _FILE),
    Command(("key", "create"), "POST", "/properties/{id}/keys", "mint a key; it is shown once", "property_id",
            _key_create, ((_KEY_OPTIONS[0][0], {"required": True}), *_KEY_OPTIONS[1:],
                          ("--legacy", {"action": "store_true", "help": "a pre-scopes key (the two ari scopes)"}),
                          _MODE_OPTION)),
    Command(("key", "list"), "GET", "/properties/{id}/keys", "a property's keys", "property_id",
            columns=("id", "mode", "label", "prefix", "scopes", "createdAt", "lastUsedAt", "revokedAt")),
    Command(("key", "update"), "PATCH", "/keys/{id}", "change a key's label, scopes or allowlist", "key_id",
            _key_update, _KEY_OPTIONS),
    Command(("key", "rotate"), "POST", "/keys/{id}/rotate", "a new secret for the key (shown once)", "key_id"),
    Command(("key", "revoke"), "POST", "/keys/{id}/revoke", "revoke a key", "key_id"),
    Command(("key", "refusals"), "GET", "/properties/{id}/allowlist-refusals", "calls refused by an allowlist",
            "property_id", columns=("keyId", "address", "at")),
    Command(("notifications", "list"), "GET", "/properties/{id}/notifications", "the owner's e-mails, newest first",
            "property_id", columns=("id", "kind", "to", "subject", "createdAt", "sentAt", "attempts")),
    Command(("booking", "check-in"), "POST", "/bookings/{id}/check-in", "the guest has arrived", "booking_id"),
    Command(("ota", "revisions"), "GET", "/properties/{id}/ota-revisions", "OTA revisions and their state",
            "property_id", columns=("revisionId", "status", "state", "reservationCode", "reference", "note")),
    Command(("ota", "apply"), "POST", "/properties/{id}/ota-revisions/{revision}/apply",
            "apply an unmapped or refused revision again (once its mapping is fixed)", "property_id",
            options=(("--revision", {"required": True}),)),
    Command(("webhook", "add"), "POST", "/properties/{id}/webhooks", "register an endpoint (its secret is shown once)",
            "property_id", lambda a: {k: v for k, v in (("url", a.url_), ("description", a.description),
                                                     ("mode", a.mode)) if v},
            (("--url", {"dest": "url_", "required": True}), ("--description", {}), _MODE_OPTION)),
    Command(("webhook", "list"), "GET", "/properties/{id}/webhooks", "a property's endpoints", "property_id",
            columns=("id", "mode", "url", "status", "description", "createdAt")),
    Command(("webhook", "pause"), "POST", "/webhooks/{id}/pause", "hold deliveries", "endpoint_id"),
    Command(("webhook", "resume"), "POST", "/webhooks/{id}/resume", "send what waited", "endpoint_id"),
    Command(("webhook", "test"), "POST", "/webhooks/{id}/test", "send a ping", "endpoint_id"),
    Command(("webhook", "rotate-secret"), "POST", "/webhooks/{id}/rotate-secret", "a new secret (old signs 24 h)",
            "endpoint_id"),
    Command(("webhook", "deliveries"), "GET", "/webhooks/{id}/deliveries", "deliveries, newest first", "endpoint_id",
            columns=("eventId", "type", "status", "attempt", "responseStatus", "nextAttemptAt", "lastError")),
    Command(("webhook", "redeliver"), "POST", "/webhooks/{id}/redeliver", "send one event again", "endpoint_id",
            lambda a: {"eventId": a.event}, (("--event", {"required": True}),)),
    Command(("webhook", "recover"), "POST", "/webhooks/{id}/recover",
            "send every event since an instant again (as far back as events are kept: keptSince)",
            "endpoint_id", lambda a: {"since": a.since}, (("--since", {"required": True,
                                                                       "help": "ISO 8601 with an offset"}),)),
    Command(("owners", "create"), "POST", "/owners",
            "an owner of properties: prints a one-time setup link (also e-mailed) to choose a password",
            body=_owner_create, options=(("--email", {"required": True}), ("--name", {"required": True}),
                                         ("--property", {"action": "append", "type": int,
                                                         "help": "a property id it may see; repeat"}))),
    Command(("owners", "list"), "GET", "/owners", "every owner",
            columns=("ownerId", "email", "name", "propertyIds", "passwordSet", "disabled")),
    Command(("owners", "get"), "GET", "/owners/{id}", "one owner", "owner_id"),
    Command(("owners", "update"), "PATCH", "/owners/{id}",
            "rename, grant and withdraw properties (--property replaces the list), disable or enable", "owner_id",
            _owner_update, (("--name", {}), ("--property", {"action": "append", "type": int}),
                            ("--no-properties", {"action": "store_true", "help": "withdraw every property"}),
                            ("--disable", {"action": "store_true"}), ("--enable", {"action": "store_true"}))),
    Command(("owners", "delete"), "DELETE", "/owners/{id}", "remove an owner (not its properties)", "owner_id"),
    Command(("owners", "reset"), "POST", "/owners/{id}/reset", "a new setup link (the old one stops working)",
            "owner_id"),
    Command(("actor", "list"), "GET", "/actors", "actors down (crash budget spent) and how many are live"),
    Command(("actor", "revive"), "POST", "/actors/{name}/revive", "start a down actor again",
            options=(("--name", {"required": True, "help": "as /readyz names it, e.g. webhook-sender"}),)),
    Command(("sandbox", "show"), "GET", "/sandbox", "the in-process sandbox channel manager's state"),
    Command(("sandbox", "calls"), "GET", "/sandbox/calls",
            "the ARI writes the in-process sandbox received, each with when it applied them"),
    Command(("sandbox", "faults"), "POST", "/sandbox/faults", "arm faults in the sandbox (JSON body)", body=_file,
            options=_FILE),
    Command(("sandbox", "ota-booking"), "POST", "/properties/{id}/sandbox/ota-bookings",
            "an OTA sells a stay (JSON body)", "property_id", _file, _FILE),
    Command(("sandbox", "ota-modify"), "POST", "/properties/{id}/sandbox/ota-bookings/{reference}/modify",
            "the OTA changes it (JSON body)", "property_id", _file, (*_FILE, ("--reference", {"required": True}))),
    Command(("sandbox", "ota-cancel"), "POST", "/properties/{id}/sandbox/ota-bookings/{reference}/cancel",
            "the OTA cancels it", "property_id", options=(("--reference", {"required": True}),)),
)


def add_admin_commands(commands: Any) -> None:
    admin = commands.add_parser("admin", help="call the admin API of a running service")
    _connection_options(admin)
    admin.add_argument("--json", action="store_true", help="print JSON, lists included")
    things = admin.add_subparsers(dest="thing", required=True)
    groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    for command in COMMANDS:
        thing, action = command.words
        if thing not in groups:
            groups[thing] = things.add_parser(thing).add_subparsers(dest="action", required=True)
        parser = groups[thing].add_parser(action, help=command.help)
        parser.set_defaults(admin_command=command)  # beside args.command, which names "admin"
        if command.id_name:
            parser.add_argument(command.id_name, type=int)
        for flag, options in command.options:
            parser.add_argument(flag, **options)
    seed = commands.add_parser("seed", help="a sample property (two room types, three rate plans) and two keys "
                                            "with every scope, a live one and a test one, printed once")
    _connection_options(seed)


def _connection_options(parser: Any) -> None:
    parser.add_argument("--url", default=os.environ.get("CONNECTAPI_URL", DEFAULT_URL),
                        help=f"service base URL (CONNECTAPI_URL, default {DEFAULT_URL})")


def _token(settings: Settings) -> str:
    if settings.admin_token:
        return settings.admin_token
    path = settings.data_dir / ADMIN_TOKEN_FILE
    try:
        token = read_token_file(path)
    except UnsafePath as exc:
        raise SystemExit(f"connectapi: {exc}") from None
    if token is None:
        raise SystemExit(f"connectapi: no operator token: set CONNECTAPI_ADMIN_TOKEN or start the service once ({path})")
    return token


class AdminError(Exception):
    """An answer that is not a success, or no answer: said on standard error."""


def _call(base: str, token: str, method: str, path: str, body: Any = None,
          query: dict[str, str] | None = None) -> Any:
    try:
        response = httpx.request(method, base.rstrip("/") + "/api/v1/admin" + path, json=body, params=query,
                                 headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except httpx.HTTPError as exc:
        raise AdminError(f"connectapi: cannot reach {base}: {exc}") from None
    try:
        payload = response.json()
    except ValueError:
        raise AdminError(f"connectapi: HTTP {response.status_code} with a body that is not JSON") from None
    if not response.is_success:
        raise AdminError(json.dumps(payload, indent=2))
    return payload.get("data")


def table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    """Rows as aligned text columns; lists joined with commas, nothing shown as '-'. The
    rows are a list answer as the service sent it (any of the table's), only printed."""
    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, list):
            return ",".join(str(v) for v in value) or "-"
        return str(value).replace("\n", " ")

    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def run_admin(args: argparse.Namespace, settings: Settings) -> int:
    command: Command = args.admin_command
    path = command.path
    if command.id_name:
        path = path.replace("{id}", str(getattr(args, command.id_name)))
    # Any other {name} is the option of that name, as one path segment.
    path = re.sub(r"\{(\w+)\}", lambda m: quote(str(getattr(args, m.group(1))), safe=""), path)
    query = {name.rstrip("_"): getattr(args, name) for name in command.query if getattr(args, name, None)}
    try:
        data = _call(args.url, _token(settings), command.method, path,
                     command.body(args) if command.body else None, query or None)
    except AdminError as exc:
        print(exc, file=sys.stderr)
        return 1
    if command.columns and isinstance(data, list) and not args.json:
        print(table(data, command.columns))
    else:
        print(json.dumps(data, indent=2))
    return 0


SEED_PROPERTY: PropertyBody = {
    "name": "Sample Guesthouse", "timezone": "Europe/Lisbon", "currency": "EUR",
    "products": {"channelManager": True, "pms": True}, "pmsEntitled": True, "status": "active",
    "ownerEmail": "owner@sample-guesthouse.example",
    "roomTypes": [{"name": "Double", "maxAdults": 2, "maxOccupancy": 3, "rooms": 6},
                  {"name": "Family Suite", "maxAdults": 4, "maxOccupancy": 5, "rooms": 2}],
    "ratePlans": [{"roomType": 0, "name": "Flexible", "mealPlan": "RO", "minRate": 40, "maxRate": 600},
                  {"roomType": 0, "name": "Bed and breakfast", "mealPlan": "BB", "minRate": 50, "maxRate": 700},
                  {"roomType": 1, "name": "Suite flexible", "mealPlan": "BB", "minRate": 90, "maxRate": 1200}],
}


def run_seed(args: argparse.Namespace, settings: Settings) -> int:
    token = _token(settings)
    live: KeyCreateBody = {"label": "seed", "scopes": EVERY_SCOPE}
    test: KeyCreateBody = {"label": "seed (test)", "scopes": EVERY_SCOPE, "mode": "test"}
    try:
        prop = _call(args.url, token, "POST", "/properties", SEED_PROPERTY)
        key = _call(args.url, token, "POST", f"/properties/{prop['id']}/keys", live)
        test_key = _call(args.url, token, "POST", f"/properties/{prop['id']}/keys", test)
        setup_url = _seed_owner(args.url, token, prop["id"])
    except AdminError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps({"propertyId": prop["id"],
                      "roomTypes": [{"id": r["id"], "name": r["name"]} for r in prop["roomTypes"]],
                      "ratePlans": [{"id": p["id"], "roomTypeId": p["roomTypeId"], "name": p["name"],
                                     "sellMode": p["sellMode"], "occupancies": p["occupancies"]}
                                    for p in prop["ratePlans"]],
                      "key": key["key"], "testKey": test_key["key"], "scopes": key["scopes"],
                      "owner": {"email": SEED_OWNER, "setupUrl": setup_url}}, indent=2))
    print("The keys are shown this once: keep them. testKey works on the property's test record, which never "
          "reaches a real channel: start there. Open owner.setupUrl to choose the owner's console password "
          f"(it works once, for 24 hours), then log in at {args.url.rstrip('/')}/console/ as {SEED_OWNER}: what "
          "testKey writes shows under the property's Test data.",
          file=sys.stderr)
    return 0


SEED_OWNER = SEED_PROPERTY["ownerEmail"]


def _seed_owner(url: str, token: str, property_id: int) -> str:
    """The sample property's owner, with a console setup link: made once, then given each new
    sample property and a new link at every seed."""
    owners = _call(url, token, "GET", "/owners")
    known = next((o for o in owners if o["email"].lower() == SEED_OWNER), None)
    if known is None:
        owner: OwnerCreateBody = {"email": SEED_OWNER, "name": "Sample Owner", "propertyIds": [property_id]}
        return str(_call(url, token, "POST", "/owners", owner)["setupUrl"])
    change: OwnerUpdateBody = {"propertyIds": sorted({*known["propertyIds"], property_id}), "disabled": False}
    _call(url, token, "PATCH", f"/owners/{known['ownerId']}", change)
    return str(_call(url, token, "POST", f"/owners/{known['ownerId']}/reset")["setupUrl"])
