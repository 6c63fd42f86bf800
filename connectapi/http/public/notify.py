"""POST /api/v1/channel-manager/notify: the channel manager's word that booking revisions
wait, proved by a shared secret (no API key). Held to the caller address's `ip` budget, a
wrong secret to its `ip-auth` one, as a wrong API key is."""

from __future__ import annotations

import hmac

from quart import Blueprint, Response, request

from ..api.gates import admit, authenticated, refuse_auth
from ..context import context
from ..envelope import ok

blueprint = Blueprint("notify", __name__)

NOTIFY_PATH = "/api/v1/channel-manager/notify"
NOTIFY_SECRET_HEADER = "X-Notify-Secret"


@blueprint.post(NOTIFY_PATH)
async def channel_manager_notify() -> Response:
    """A trigger only: the body names a revision, but we read revisions from the feed, so a
    forged or out-of-order notification can at worst make us look sooner."""
    arrival = await admit(needs_key=True)
    ctx = context()
    given = request.headers.get(NOTIFY_SECRET_HEADER, "")
    if not ctx.channel.notify_secret or not hmac.compare_digest(given.encode(), ctx.channel.notify_secret.encode()):
        await refuse_auth(arrival, "NOTIFY_SECRET_INVALID",
                          f"the {NOTIFY_SECRET_HEADER} header does not hold the notification secret")
    await authenticated(arrival)
    ctx.properties.wakeups.revisions_waiting()
    return ok({"received": True})
