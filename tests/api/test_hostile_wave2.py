"""Hostile input, second wave: the owners' console, the admin owners routes and the booking
PATCH, attacked as a client would. Every answer is a 4xx (HTML on a console path, the
envelope elsewhere), never a 5xx, and a refused request writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from connectapi.storage import notifications
from connectapi.storage.database import RecordRefused

from .console_visitor import PASSWORD, Page, Visitor, logged_in, owner_of, owner_with_password
from .harness import Answer, Harness


def html(page: Page, status: int) -> None:
    assert page.status == status, (page.status, page.text[:500])
    assert page.headers["Content-Type"].startswith("text/html"), page.headers["Content-Type"]


def refused(answer: Answer, status: int, code: str) -> None:
    assert (answer.status, answer.code) == (status, code), answer.body


async def test_console_grid_at_the_calendar_end(api: Harness) -> None:
    """?from=9999-12-31 alone: its default two weeks ran past date.max (OverflowError, a 500)."""
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    grid = f"/console/properties/{prop['id']}/grid"
    shown = await visitor.get(f"{grid}?from=9999-12-31")
    html(shown, 200)
    assert "Nights 9999-12-31 to 9999-12-31" in shown.text
    shown = await visitor.get(f"{grid}?from=9999-12-20")
    html(shown, 200)
    assert "Nights 9999-12-20 to 9999-12-31" in shown.text


UNREADABLE_URLS = ("https://[::1/in", "https://hooks\uff03x.example/in")  # urlsplit raises ValueError
UNSENDABLE_URLS = ("https://hooks.example.com/in\x01", "https://hooks.example.com/a b", "https://hooks.example.com/\u202e")


async def test_webhook_urls_that_cannot_be_read_or_sent_are_validation(api: Harness) -> None:
    """An unclosed IPv6 bracket, a host NFKC turns into another: urlsplit's ValueError was a
    500. Spaces and control characters made an endpoint no request can reach; NUL, from the
    console's form, a 500 at the insert."""
    prop = await api.create_property()
    for url in (*UNREADABLE_URLS, *UNSENDABLE_URLS):
        answer = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": url})
        refused(answer, 400, "VALIDATION")
        assert answer.data["details"][0]["path"] == "url", answer.body
    visitor = await owner_of(api, prop)
    hooks = f"/console/properties/{prop['id']}/webhooks"
    for url in (*UNREADABLE_URLS, *UNSENDABLE_URLS, "https://hooks.example.com/in\x00"):
        html(await visitor.submit(hooks, hooks, {"url": url}), 400)
    assert (await api.admin("GET", f"/properties/{prop['id']}/webhooks")).data == []


async def test_console_redeliver_of_an_event_id_with_nul_is_not_found(api: Harness) -> None:
    """The JSON body refuses NUL; the console's form carried it to the query (a 500)."""
    prop = await api.create_property()
    hook = await api.admin("POST", f"/properties/{prop['id']}/webhooks", {"url": "https://hooks.example.com/in"})
    assert hook.status == 201, hook.body
    visitor = await owner_of(api, prop)
    page = f"/console/properties/{prop['id']}/webhooks/{hook.data['id']}"
    for event_id in ("\x00", "evt\x00"):
        answer = await visitor.submit(page, f"{page}/redeliver", {"eventId": event_id})
        html(answer, 404)
        assert "has no event" in answer.text


@pytest.mark.parametrize(("sqlstate", "status"), [("23505", 500), ("40001", 503)])
async def test_a_record_refusal_on_a_console_path_is_a_page(api: Harness, monkeypatch: pytest.MonkeyPatch,
                                                            sqlstate: str, status: int) -> None:
    """Console paths answer HTML errors; a statement the record refused was answered with the
    API's JSON envelope there."""
    prop = await api.create_property()
    visitor = await owner_of(api, prop)

    async def refusing(*args: Any) -> Any:
        raise RecordRefused("refused on purpose", sqlstate)

    monkeypatch.setattr(notifications, "for_property", refusing)
    page = await visitor.get(f"/console/properties/{prop['id']}/notifications")
    html(page, status)
    assert "refused on purpose" not in page.text and "statuscode" not in page.text
    # A refusal for now says when to come back, as the API's 503 does.
    assert page.headers.get("Retry-After") == ("5" if status == 503 else None)


async def test_ids_past_a_bigint_are_not_found_whatever_the_method(api: Harness) -> None:
    """A path whose rules have several methods (GET, PATCH and DELETE of an owner; GET and
    POST of a console screen) answered an id past a bigint with 405 and an Allow of the
    others, as if the method were the fault: it matches no route."""
    prop = await api.create_property()
    big = 2**63
    for method in ("GET", "PATCH", "DELETE"):
        for owner_id in (big, "9" * 30, "0" * 40 + str(big)):
            answer = await api.admin(method, f"/owners/{owner_id}", {} if method == "PATCH" else None)
            refused(answer, 404, "NOT_FOUND")
            assert "Allow" not in answer.headers
        refused(await api.admin(method, f"/properties/{big}", {} if method == "PATCH" else None), 404, "NOT_FOUND")
    # Every id a bigint holds, leading zeros too, still reaches the route.
    refused(await api.admin("PATCH", f"/owners/{'0' * 40}{big - 1}", {}), 404, "OWNER_NOT_FOUND")
    visitor = await owner_of(api, prop)
    settings = f"/console/properties/{prop['id']}/settings"
    token = (await visitor.get(settings)).csrf()
    for path in (f"/console/properties/{big}/settings", f"/console/properties/{prop['id']}/keys/{big}",
                 f"/console/properties/{big}/webhooks"):
        html(await visitor.post(path, {"csrf": token, "bookingsPerDay": "900"}), 404)
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data["bookingsPerDay"] is None


async def test_e_mails_with_control_or_invisible_characters_are_refused(api: Harness) -> None:
    """The e-mail pattern refused only @ and spaces: an owner made with a control, a bidi
    override or a zero-width space in its e-mail could never log in (the login answers such
    an e-mail as unknown), and the outbox was to send to it."""
    prop = await api.create_property()
    for email in ("ana\x01@hotel.example", "ana@hotel.example\x7f", "ana@hotel.example\u202e",
                  "ana\u200b@hotel.example", "ana@hotel\x85example"):
        refused(await api.admin("POST", "/owners", {"email": email, "name": "Ana", "propertyIds": [prop["id"]]}),
                400, "VALIDATION")
        refused(await api.admin("PATCH", f"/properties/{prop['id']}", {"ownerEmail": email}), 400, "VALIDATION")
    assert (await api.admin("GET", "/owners")).data == []
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data["ownerEmail"] == prop["ownerEmail"]
    # Letters beyond ASCII are still an e-mail, and the login compares them without case.
    await owner_with_password(api, "\u00c9lodie@h\u00f4tel.example", PASSWORD, [prop["id"]])
    await logged_in(api, "\u00e9lodie@H\u00d4TEL.example", PASSWORD)


async def test_a_range_the_console_files_cannot_serve_is_a_416_page(api: Harness) -> None:
    """Quart refuses a Range past the end, not of bytes, of several ranges or unreadable
    with a 416 the app did not map: a 500 in the API's JSON envelope."""
    visitor = Visitor(api)
    for path in ("/console/static/console.js", "/console/static/console.css"):
        for asked in ("bytes=999999-", "bytes=5-1", "garbage", "bytes=0-0,2-2", "items=0-1"):
            ranged: dict[str, Any] = {"headers": {"Range": asked}}
            response = await visitor.client.open(path, method="GET", **ranged)
            page = Page(response.status_code, await response.get_data(as_text=True), response.headers)
            html(page, 416)
            assert page.headers["Content-Security-Policy"]
        whole = await visitor.get(path)
        assert whole.status == 200 and whole.text
        ranged = {"headers": {"Range": "bytes=0-1"}}
        part = await visitor.client.open(path, method="GET", **ranged)
        assert part.status_code == 206 and len(await part.get_data()) == 2
