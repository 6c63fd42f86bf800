"""The operator token: the gate of every admin route (app.py runs it before any route under
the admin prefix) and of /metrics."""

from __future__ import annotations

import hmac

from quart import request

from ...domain import api_keys as keyfmt
from ..api.gates import Arrival, refuse_auth
from ..context import client_address, context


async def check_admin_token() -> None:
    """The operator token, or a 401 charged to the address's `ip-auth` budget as a wrong API
    key is; an address over that budget is refused (429) before the token is compared."""
    ctx = context()
    address = client_address()
    refusal = await ctx.budgets.keeper.may_authenticate(address)
    if refusal is not None:
        raise refusal
    token = keyfmt.bearer_token(request.headers.get("Authorization"))
    if token is None or not hmac.compare_digest(token.encode(), ctx.operation.admin_token.encode()):
        await refuse_auth(Arrival(address), "ADMIN_TOKEN_INVALID", "the operator token is missing or wrong")
