"""The console's webhooks screen (issue 19): an owner registers an endpoint (the secret shown
once), pauses, resumes, pings, rotates, redelivers and recovers, against a real receiver on
loopback; and never reaches another property's endpoints."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
import trio

from .console_visitor import PASSWORD, Visitor, logged_in, owner_of
from .harness import Harness, eventually
from .webhook_receiver import Receiver, signed_by

SECRET = re.compile(r'<code id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</code>')
EVENT = re.compile(r"<code>(evt_[0-9a-f-]+)</code>")


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}


async def owned_property(api: Harness, **overrides: Any) -> tuple[dict[str, Any], Visitor]:
    """A new property and its own owner (an e-mail of its own), logged in."""
    prop = await api.create_property(**overrides)
    return prop, await owner_of(api, prop, email=f"owner{prop['id']}@hotel.example")


def hooks(prop: dict[str, Any]) -> str:
    return f"/console/properties/{prop['id']}/webhooks"


async def arrived(api: Harness, receiver: Receiver, n: int) -> None:
    """Until the receiver has had n requests (and no more) and the sender has recorded its
    answers: an attempt still under way when a test moves the clock would time out."""
    async def reached() -> bool:
        return len(receiver.received) >= n
    await eventually(reached, f"{n} requests at the receiver")

    async def recorded() -> bool:
        held: int = await api.ctx.db.fetchval(
            "SELECT count(*) FROM leases WHERE kind = 'sending' AND holder IS NOT NULL")
        return held == 0
    await eventually(recorded, "the sender recording its attempts")
    assert len(receiver.received) == n, [h["webhook-id"] for h, _ in receiver.received]


async def register(visitor: Visitor, prop: dict[str, Any], url: str, description: str = "PMS") -> tuple[int, str]:
    """An endpoint registered on the screen: its id and the secret the answer showed."""
    answer = await visitor.submit(hooks(prop), hooks(prop), {"url": url, "description": description})
    assert answer.status == 200, answer.text[:2000]
    secret = SECRET.search(answer.text)
    assert secret, answer.text[:3000]
    ids = re.findall(rf'href="{hooks(prop)}/(\d+)"', answer.text)
    return int(ids[-1]), secret.group(1)


async def endpoint_state(api: Harness, endpoint_id: int) -> dict[str, Any]:
    row = await api.ctx.db.fetchrow("SELECT status, rotated_at FROM webhook_endpoints WHERE id = $1", endpoint_id)
    assert row is not None
    return dict(row)


async def test_registering_pings_signed_and_the_secret_is_shown_once(api: Harness, receiver: Receiver) -> None:
    prop, visitor = await owned_property(api)
    empty = await visitor.get(hooks(prop))
    assert empty.status == 200 and "No endpoints yet" in empty.text and 'aria-current="page"' in empty.text
    for field in re.findall(r'<input id="([^"]+)"', empty.text):  # every visible input has its label
        assert f'<label for="{field}">' in empty.text, field

    answer = await visitor.submit(hooks(prop), hooks(prop), {"url": receiver.url, "description": "Front desk PMS"})
    assert answer.status == 200 and answer.headers["Cache-Control"] == "no-store"
    found = SECRET.search(answer.text)
    assert found, answer.text[:3000]
    secret = found.group(1)
    assert '<button type="button" data-copy="#webhook-secret" hidden>Copy</button>' in answer.text
    assert "shown this once" in answer.text

    await arrived(api, receiver, 1)
    headers, body = receiver.received[0]
    assert signed_by(secret, headers, body)
    event = json.loads(body)
    assert event["type"] == "connectapi.ping" and event["property"]["id"] == prop["id"]

    listed = await visitor.get(hooks(prop))
    assert listed.status == 200 and "whsec_" not in listed.text and secret not in listed.text
    assert receiver.url in listed.text and "Front desk PMS" in listed.text and "active" in listed.text
    endpoint_id = int(re.findall(rf'href="{hooks(prop)}/(\d+)"', listed.text)[0])

    async def delivered() -> bool:
        page = await visitor.get(f"{hooks(prop)}/{endpoint_id}")
        return "delivered" in page.text and "HTTP 204" in page.text
    await eventually(delivered, "the ping's delivery on the endpoint's page")
    deliveries = await visitor.get(f"{hooks(prop)}/{endpoint_id}")
    assert EVENT.findall(deliveries.text) == [headers["webhook-id"]] and "whsec_" not in deliveries.text
    assert " ms" in deliveries.text and "Since (UTC)" in deliveries.text and 'class="table-wrap"' in deliveries.text
    assert "trace <code>" not in deliveries.text  # attempted with tracing off
    # An attempt made under tracing (decision 0141) keeps its trace's id: shown to copy.
    await api.ctx.db.execute("UPDATE webhook_deliveries SET trace_id = '4bf92f3577b34da6a3ce929d0e0e4736' "
                             "WHERE endpoint_id = $1", endpoint_id)
    deliveries = await visitor.get(f"{hooks(prop)}/{endpoint_id}")
    assert "trace <code>4bf92f3577b34da6a3ce929d0e0e4736</code>" in deliveries.text


@pytest.mark.parametrize("env", [{}])
async def test_a_refused_url_or_description_shows_the_form_again(api: Harness) -> None:
    prop, visitor = await owned_property(api)
    for url, said in (("http://hooks.example.com/in", "must start with https://"),
                      ("https://127.0.0.1/in", "127.0.0.1 is not a public address"),
                      ("https://localhost/in", "localhost is not a public host name"),
                      ("https://" + "a" * 64 + ".example.com/in", "the host name cannot be looked up"),
                      ("", "URL: String should have at least 1 character")):
        refused = await visitor.submit(hooks(prop), hooks(prop), {"url": url, "description": "kept"})
        assert refused.status == 400 and said in refused.text, (url, refused.text[:3000])
        assert 'role="alert"' in refused.text and 'value="kept"' in refused.text and "whsec_" not in refused.text
    long = await visitor.submit(hooks(prop), hooks(prop), {"url": "https://hooks.example.com/in",
                                                           "description": "x" * 201})
    assert long.status == 400 and "Description: String should have at most 200 characters" in long.text
    two_lines = await visitor.submit(hooks(prop), hooks(prop), {"url": "https://hooks.example.com/in",
                                                                "description": "one\ttwo"})
    assert two_lines.status == 400 and "Description: must be one line of plain text" in two_lines.text
    assert "No endpoints yet" in (await visitor.get(hooks(prop))).text
    assert await api.ctx.db.fetchval("SELECT count(*) FROM webhook_endpoints") == 0


async def test_a_paused_endpoint_gets_no_test_ping_until_resumed(api: Harness, receiver: Receiver) -> None:
    prop, visitor = await owned_property(api)
    endpoint_id, _ = await register(visitor, prop, receiver.url)
    await arrived(api, receiver, 1)

    paused = await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/pause", {})
    assert paused.status == 303 and paused.location == f"{hooks(prop)}?done=paused&endpoint={endpoint_id}"
    shown = await visitor.get(paused.location)
    assert "Paused: events wait" in shown.text and "state-pending" in shown.text and "Resume" in shown.text
    assert (await endpoint_state(api, endpoint_id))["status"] == "paused"

    test = await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/test", {})
    assert test.status == 303 and test.location == f"{hooks(prop)}?done=test&endpoint={endpoint_id}"
    api.advance(3600)
    test_event = EVENT.findall((await visitor.get(f"{hooks(prop)}/{endpoint_id}")).text)[0]  # newest first
    # A sentinel queued after the test ping, to an active endpoint: once the sender has sent
    # it, it has looked at the test ping too, and left it waiting.
    other_id, _ = await register(visitor, prop, receiver.url.replace("/hooks", "/sentinel"), "sentinel")
    await arrived(api, receiver, 2)
    assert receiver.received[1][0]["webhook-id"] not in (receiver.received[0][0]["webhook-id"], test_event)
    for _ in range(200):
        await trio.sleep(0)
    assert len(receiver.received) == 2
    waiting = await visitor.get(f"{hooks(prop)}/{endpoint_id}")
    assert "pending" in waiting.text and "not tried yet" in waiting.text

    resumed = await visitor.submit(f"{hooks(prop)}/{endpoint_id}", f"{hooks(prop)}/{endpoint_id}/resume",
                                   {"back": "endpoint"})
    assert resumed.status == 303 and resumed.location == f"{hooks(prop)}/{endpoint_id}?done=resumed"
    await arrived(api, receiver, 3)
    headers, body = receiver.received[2]
    assert headers["webhook-id"] == test_event and json.loads(body)["type"] == "connectapi.ping"
    assert (await endpoint_state(api, endpoint_id))["status"] == "active"
    assert (await endpoint_state(api, other_id))["status"] == "active"


async def test_redeliver_one_event_and_recover_since_an_instant(api: Harness, receiver: Receiver) -> None:
    prop, visitor = await owned_property(api)
    registered_at = api.ctx.clock.now()
    endpoint_id, _ = await register(visitor, prop, receiver.url)
    await arrived(api, receiver, 1)
    ping_id = receiver.received[0][0]["webhook-id"]
    api.advance(3600)
    await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/test", {})
    await arrived(api, receiver, 2)
    test_id = receiver.received[1][0]["webhook-id"]
    page = f"{hooks(prop)}/{endpoint_id}"

    again = await visitor.submit(page, f"{page}/redeliver", {"eventId": ping_id})
    assert again.status == 303 and again.location == f"{page}?done=redelivered"
    assert "queued for the endpoint again" in (await visitor.get(again.location)).text
    await arrived(api, receiver, 3)
    assert receiver.received[2][0]["webhook-id"] == ping_id  # the same id: the receiver can drop the repeat

    missing = await visitor.submit(page, f"{page}/redeliver", {"eventId": "evt_nope"})
    assert missing.status == 404 and "no event evt_nope" in missing.text and 'value="evt_nope"' in missing.text

    half_way = (registered_at + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M")
    recovered = await visitor.submit(page, f"{page}/recover", {"since": half_way})
    assert recovered.status == 200 and "1 event since" in recovered.text, recovered.text[:3000]
    assert "Events are kept since" in recovered.text and "UTC" in recovered.text
    await arrived(api, receiver, 4)
    assert receiver.received[3][0]["webhook-id"] == test_id

    everything = (registered_at - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    both = await visitor.submit(page, f"{page}/recover", {"since": everything})
    assert both.status == 200 and "2 events since" in both.text
    await arrived(api, receiver, 6)
    assert [h["webhook-id"] for h, _ in receiver.received[4:]] == [ping_id, test_id]  # oldest first

    for since in ("yesterday", "", "2026-13-40T10:00"):
        bad = await visitor.submit(page, f"{page}/recover", {"since": since})
        assert bad.status == 400 and "Since: enter a date and a time in UTC" in bad.text, since
    assert len(receiver.received) == 6


async def test_a_rotated_secret_is_shown_once_and_signs_the_next_delivery(api: Harness, receiver: Receiver) -> None:
    prop, visitor = await owned_property(api)
    endpoint_id, first = await register(visitor, prop, receiver.url)
    await arrived(api, receiver, 1)

    rotated = await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/rotate-secret", {})
    found = SECRET.search(rotated.text)
    assert rotated.status == 200 and found and "New signing secret" in rotated.text
    second = found.group(1)
    assert second != first and (await endpoint_state(api, endpoint_id))["rotated_at"] is not None
    assert "whsec_" not in (await visitor.get(hooks(prop))).text
    assert "whsec_" not in (await visitor.get(f"{hooks(prop)}/{endpoint_id}")).text

    await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/test", {})
    await arrived(api, receiver, 2)
    headers, body = receiver.received[1]
    assert signed_by(second, headers, body)
    api.advance(24 * 3600 + 1)  # after the day both sign, the new one alone
    visitor = await logged_in(api, f"owner{prop['id']}@hotel.example", PASSWORD)  # 12 idle hours ended the session
    await visitor.submit(hooks(prop), f"{hooks(prop)}/{endpoint_id}/test", {})
    await arrived(api, receiver, 3)
    headers, body = receiver.received[2]
    assert signed_by(second, headers, body) and not signed_by(first, headers, body)


async def test_another_propertys_endpoints_are_not_there(api: Harness, receiver: Receiver) -> None:
    a, visitor = await owned_property(api)
    b = await api.create_property(name="Casa Verde")
    theirs = await api.admin("POST", f"/properties/{b['id']}/webhooks", {"url": receiver.url, "description": "B"})
    assert theirs.status == 201
    b_hook = theirs.data["id"]
    await arrived(api, receiver, 1)
    mine, _ = await register(visitor, a, receiver.url)
    await arrived(api, receiver, 2)
    token = (await visitor.get(hooks(a))).csrf()

    fields = {"pause": {}, "resume": {}, "test": {}, "rotate-secret": {},
              "redeliver": {"eventId": theirs.data["pingEventId"]}, "recover": {"since": "2020-01-01T00:00"}}
    for prop_path, endpoint_id in ((hooks(b), b_hook), (hooks(a), b_hook), (hooks(b), mine), (hooks(a), 999999)):
        page = await visitor.get(f"{prop_path}/{endpoint_id}")
        assert page.status == 404 and "Casa Verde" not in page.text and receiver.url not in page.text, prop_path
        for action, form in fields.items():
            refused = await visitor.post(f"{prop_path}/{endpoint_id}/{action}", {"csrf": token, **form})
            assert refused.status == 404 and "whsec_" not in refused.text, (prop_path, endpoint_id, action)
    listed = await visitor.get(hooks(b))
    assert listed.status == 404 and "Casa Verde" not in listed.text
    made = await visitor.post(hooks(b), {"csrf": token, "url": receiver.url})
    assert made.status == 404

    # Nothing was done to B's endpoint, nor made for B.
    assert await endpoint_state(api, b_hook) == {"status": "active", "rotated_at": None}
    assert [e["id"] for e in (await api.admin("GET", f"/properties/{b['id']}/webhooks")).data] == [b_hook]
    deliveries = (await api.admin("GET", f"/webhooks/{b_hook}/deliveries")).data
    assert [d["eventId"] for d in deliveries] == [theirs.data["pingEventId"]]
    for _ in range(200):
        await trio.sleep(0)
    assert len(receiver.received) == 2


async def test_a_form_without_its_token_is_refused(api: Harness, receiver: Receiver) -> None:
    prop, visitor = await owned_property(api)
    endpoint_id, _ = await register(visitor, prop, receiver.url)
    for action in ("pause", "rotate-secret", "test"):
        refused = await visitor.post(f"{hooks(prop)}/{endpoint_id}/{action}", {})
        assert refused.status == 403 and "no longer valid" in refused.text, action
    assert (await visitor.post(hooks(prop), {"url": receiver.url})).status == 403
    assert await endpoint_state(api, endpoint_id) == {"status": "active", "rotated_at": None}
    assert await api.ctx.db.fetchval("SELECT count(*) FROM webhook_endpoints") == 1
    anonymous = Visitor(api)
    away = await anonymous.get(hooks(prop))
    assert away.status == 302 and away.location == f"/console/login?next={hooks(prop)}"
