"""`connectapi admin …`: the admin routes from the command line, over HTTP."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx

from .config import ADMIN_TOKEN_FILE, Settings

DEFAULT_URL = "http://127.0.0.1:8080"


def add_admin_commands(commands: Any) -> None:
    admin = commands.add_parser("admin", help="call the admin API of a running service")
    admin.add_argument("--url", default=os.environ.get("CONNECTAPI_URL", DEFAULT_URL),
                       help=f"service base URL (CONNECTAPI_URL, default {DEFAULT_URL})")
    things = admin.add_subparsers(dest="thing", required=True)

    prop = things.add_parser("property", help="properties").add_subparsers(dest="action", required=True)
    create = prop.add_parser("create", help="create a property from a JSON body")
    create.add_argument("--file", required=True, help="JSON body, or - for standard input")
    get = prop.add_parser("get", help="show a property with its catalog")
    get.add_argument("property_id", type=int)
    update = prop.add_parser("update", help="PATCH a property with a JSON body")
    update.add_argument("property_id", type=int)
    update.add_argument("--file", required=True)

    mapping = prop.add_parser("map", help="set the channel-manager mapping from a JSON body")
    mapping.add_argument("property_id", type=int)
    mapping.add_argument("--file", required=True)

    room = things.add_parser("room-type", help="room types").add_subparsers(dest="action", required=True)
    add_room = room.add_parser("add")
    add_room.add_argument("property_id", type=int)
    add_room.add_argument("--file", required=True)

    plan = things.add_parser("rate-plan", help="rate plans").add_subparsers(dest="action", required=True)
    add_plan = plan.add_parser("add")
    add_plan.add_argument("property_id", type=int)
    add_plan.add_argument("--file", required=True)

    key = things.add_parser("key", help="API keys").add_subparsers(dest="action", required=True)
    kcreate = key.add_parser("create", help="mint a key; it is shown once")
    kcreate.add_argument("property_id", type=int)
    kcreate.add_argument("--label", required=True)
    kcreate.add_argument("--scope", action="append", default=None, help="repeat for each scope")
    kcreate.add_argument("--allow", action="append", default=[], help="allowlist address or CIDR; repeat")
    kcreate.add_argument("--legacy", action="store_true", help="a pre-scopes key holding the two ari scopes")
    klist = key.add_parser("list")
    klist.add_argument("property_id", type=int)
    kupdate = key.add_parser("update")
    kupdate.add_argument("key_id", type=int)
    kupdate.add_argument("--label")
    kupdate.add_argument("--scope", action="append", default=None)
    kupdate.add_argument("--allow", action="append", default=None)
    for action in ("rotate", "revoke"):
        key.add_parser(action).add_argument("key_id", type=int)

    notes = things.add_parser("notifications", help="the owner's e-mails of a property, newest first")
    notes.add_argument("property_id", type=int)
    booking = things.add_parser("booking", help="front-desk moves").add_subparsers(dest="action", required=True)
    booking.add_parser("check-in", help="the guest has arrived").add_argument("booking_id", type=int)


def _read_body(path: str) -> Any:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return json.loads(text)


def _token(settings: Settings) -> str:
    if settings.admin_token:
        return settings.admin_token
    path = settings.data_dir / ADMIN_TOKEN_FILE
    if not path.exists():
        raise SystemExit(f"connectapi: no operator token: set CONNECTAPI_ADMIN_TOKEN or start the service once ({path})")
    return path.read_text().strip()


def _request(args: argparse.Namespace) -> tuple[str, str, Any]:
    thing, action = args.thing, getattr(args, "action", None)
    if thing == "property":
        if action == "create":
            return "POST", "/properties", _read_body(args.file)
        if action == "get":
            return "GET", f"/properties/{args.property_id}", None
        if action == "map":
            return "PUT", f"/properties/{args.property_id}/channel-mapping", _read_body(args.file)
        return "PATCH", f"/properties/{args.property_id}", _read_body(args.file)
    if thing == "room-type":
        return "POST", f"/properties/{args.property_id}/room-types", _read_body(args.file)
    if thing == "rate-plan":
        return "POST", f"/properties/{args.property_id}/rate-plans", _read_body(args.file)
    if thing == "notifications":
        return "GET", f"/properties/{args.property_id}/notifications", None
    if thing == "booking":
        return "POST", f"/bookings/{args.booking_id}/check-in", None
    if action == "create":
        body: dict[str, Any] = {"label": args.label, "allowlist": args.allow}
        if args.legacy:
            body["legacy"] = True
        else:
            body["scopes"] = args.scope or []
        return "POST", f"/properties/{args.property_id}/keys", body
    if action == "list":
        return "GET", f"/properties/{args.property_id}/keys", None
    if action == "update":
        patch = {k: v for k, v in (("label", args.label), ("scopes", args.scope), ("allowlist", args.allow)) if v is not None}
        return "PATCH", f"/keys/{args.key_id}", patch
    return "POST", f"/keys/{args.key_id}/{action}", None


def run_admin(args: argparse.Namespace, settings: Settings) -> int:
    method, path, body = _request(args)
    url = args.url.rstrip("/") + "/api/v1/admin" + path
    try:
        response = httpx.request(method, url, json=body, headers={"Authorization": f"Bearer {_token(settings)}"},
                                 timeout=30)
    except httpx.HTTPError as exc:
        print(f"connectapi: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    try:
        payload = response.json()
    except ValueError:
        print(f"connectapi: HTTP {response.status_code} with a body that is not JSON", file=sys.stderr)
        return 1
    if response.is_success:
        print(json.dumps(payload.get("data"), indent=2))
        return 0
    print(json.dumps(payload, indent=2), file=sys.stderr)
    return 1
