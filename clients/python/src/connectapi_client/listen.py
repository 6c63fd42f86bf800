"""Test webhooks on your own machine, with nothing to register and nothing for the service
to reach: `listen` connects out to the service with a test key, asks it for the test
record's events as they happen (`GET /test-helpers/events?wait=`), and POSTs each to a
local URL signed as the service signs its deliveries (Standard Webhooks), with a secret of
its own, printed when it is ready.

    python -m connectapi_client listen --api http://127.0.0.1:8080 --key cak_test_... \\
        --forward-to http://localhost:4242/webhook

or, from code, `listen(api=..., key=..., forward_to=...)`. Every listener gets every event.
"""

from __future__ import annotations

import base64
import datetime
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from . import models
from .client import Client
from .errors import AuthenticationError, ConnectApiError, PermissionDeniedError, RateLimitedError
from .webhooks import sign_webhook

# Each ask holds at the service this long for an event (its limit is 30; the client's
# read timeout, 30 s, stays above it).
EVENTS_WAIT = 25
# After the service did not answer: the next try.
AGAIN_AFTER = 5.0
FORWARD_TIMEOUT = 10.0


def new_secret() -> str:
    """A signing secret as the service makes them: `whsec_` and 32 random bytes, base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class Forwarded:
    """One event handed to the local URL: the receiver's status, or why there was none."""

    event: models.TestEvent
    status: int | None
    error: str | None = None

    def line(self) -> str:
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        outcome = f"[{self.status}]" if self.status is not None else f"[no answer: {self.error}]"
        return f"{when}  {self.event.type}  {self.event.id}  {outcome}"


def forward(http: httpx.Client, url: str, event: models.TestEvent, secret: str) -> Forwarded:
    """POST the event's body, exactly as the service would have sent it, signed with `secret`."""
    raw = event.body.encode()
    headers = {**sign_webhook(raw, event.id, secret), "content-type": "application/json"}
    try:
        answered = http.post(url, content=raw, headers=headers)
    except httpx.HTTPError as failure:
        return Forwarded(event, None, f"{type(failure).__name__}: {failure}")
    return Forwarded(event, answered.status_code)


def listen(*, api: str, key: str, forward_to: str, secret: str | None = None,
           say: Callable[[str], None] = print, keep_on: Callable[[], bool] = lambda: True,
           sleep: Callable[[float], None] = time.sleep) -> int:
    """Forward the test record's events to `forward_to` until `keep_on()` is false (or
    Ctrl-C); answers the exit status. A live key is refused at once (status 2): only test
    data is forwarded."""
    secret = secret or new_secret()
    try:  # what would fail at the first event fails now, before Ready
        sign_webhook(b"{}", "evt_check", secret)
        target = httpx.URL(forward_to)
        if target.scheme not in ("http", "https") or not target.host:
            raise ValueError("--forward-to is an http:// or https:// URL")
    except (ValueError, httpx.InvalidURL) as wrong:
        say(f"connectapi listen: {wrong}")
        return 2
    with Client(base_url=api, api_key=key) as client, httpx.Client(timeout=FORWARD_TIMEOUT) as http:
        try:
            prop = client.property()
            if prop.mode != "test":
                say("connectapi listen: a test key is needed (cak_test_…): this key is a live one, and only a "
                    "test record's events are forwarded")
                return 2
            after = client.test_helpers.events().after
        except (AuthenticationError, PermissionDeniedError) as refused:
            say(f"connectapi listen: the service refused the key: {refused}")
            return 2
        except ConnectApiError as failed:
            say(f"connectapi listen: {failed}")
            return 1
        say(f"Ready! Forwarding the test events of property {prop.id} ({prop.name}) to {forward_to}")
        say(f"Signing secret: {secret}")
        while keep_on():
            try:
                found = client.test_helpers.events(after, wait=EVENTS_WAIT)
            except (AuthenticationError, PermissionDeniedError) as refused:
                say(f"connectapi listen: the service refused the key: {refused}")
                return 2
            except ConnectApiError as failed:  # no answer, a 5xx, a budget spent: its retries used up
                again = failed.retry_after if isinstance(failed, RateLimitedError) and failed.retry_after else AGAIN_AFTER
                say(f"the service did not answer ({failed}); asking again in {again:g} s")
                sleep(again)
                continue
            for event in found.events:
                say(forward(http, forward_to, event, secret).line())
            after = found.after
    return 0
