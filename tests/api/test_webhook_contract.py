"""The public webhook contract: served without a key, and every example in it valid against
its own schemas and signed as it says."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from jsonschema import Draft202012Validator
from standardwebhooks.webhooks import Webhook

from connectapi.domain.webhook_events import EVENT_TYPES
from connectapi.domain.webhook_retry import SCHEDULE

from .harness import Harness

CONTRACT = "/api/v1/public/webhooks/contract"


async def test_the_contract_is_public_and_held_to_the_ip_budget(api: Harness) -> None:
    got = await api.call("GET", CONTRACT)
    assert got.status == 200
    assert got.headers["RateLimit-Policy"].startswith('"ip"')
    assert [t["type"] for t in got.data["eventTypes"]] == list(EVENT_TYPES)
    assert got.data["delivery"]["retryScheduleSeconds"][1:] == [int(w.total_seconds()) for w in SCHEDULE]
    assert sum(got.data["delivery"]["retryScheduleSeconds"]) == 24 * 3600
    assert got.data["signing"]["timestampToleranceSeconds"] == 300


async def test_every_example_matches_the_schemas_and_its_signature(api: Harness) -> None:
    contract = (await api.call("GET", CONTRACT)).data
    envelope = Draft202012Validator(contract["schemas"]["envelope"], format_checker=Draft202012Validator.FORMAT_CHECKER)
    booking = Draft202012Validator(contract["schemas"]["booking"], format_checker=Draft202012Validator.FORMAT_CHECKER)
    Draft202012Validator.check_schema(contract["schemas"]["envelope"])
    assert sorted(e["type"] for e in contract["examples"]) == sorted(EVENT_TYPES)
    for example in contract["examples"]:
        event = json.loads(example["body"])
        assert event == example["event"]
        envelope.validate(event)
        if event["type"] != "connectapi.ping":
            booking.validate(event["data"]["booking"])
        headers = example["headers"]
        assert headers["webhook-id"] == event["id"]
        # Verified as a receiver would (standardwebhooks), at the example's own timestamp.
        at = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
        assert Webhook(example["secret"]).sign(headers["webhook-id"], at, example["body"]) in \
            headers["webhook-signature"].split(" ")


async def test_the_schema_refuses_what_the_contract_rules_out(api: Harness) -> None:
    contract = (await api.call("GET", CONTRACT)).data
    envelope = Draft202012Validator(contract["schemas"]["envelope"])
    modified = next(json.loads(e["body"]) for e in contract["examples"] if e["type"] == "channel.booking.modified")
    created = next(json.loads(e["body"]) for e in contract["examples"] if e["type"] == "channel.booking.created")
    assert not list(envelope.iter_errors(modified))
    assert list(envelope.iter_errors({**modified, "changes": None}))  # modified needs its changes
    assert list(envelope.iter_errors({**created, "changes": {"stay": created["data"]["booking"]["stay"]}}))
    leaking = {**created, "data": {"booking": {**created["data"]["booking"], "cmBookingId": "abc"}}}
    assert list(envelope.iter_errors(leaking))  # nothing beyond the contract's fields
