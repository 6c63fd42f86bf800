"""The owner's journey through the console in a real browser (issue 19): the setup link,
a password, login by keyboard, the properties and a property's pages; isolation by URL;
each screen saved into docs/console/ for docs/console.md."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from standardwebhooks import Webhook

from tests.browser.harness import ConsoleService, save_screen, sideways_overflow

ROOT = Path(__file__).parents[2]
PASSWORD = "correct horse battery staple"


def admin(service: ConsoleService, method: str, path: str, body: Any = None) -> Any:
    answer = httpx.request(method, f"{service.url}/api/v1/admin{path}", json=body, headers=service.auth, timeout=30)
    assert answer.is_success, answer.text
    return answer.json()["data"]


def a_property(service: ConsoleService, name: str) -> dict[str, Any]:
    example = json.loads((ROOT / "docs" / "examples" / "property.json").read_text())
    made: dict[str, Any] = admin(service, "POST", "/properties", {**example, "name": name})
    return made


def choose_password(page: Page, setup_url: str) -> None:
    page.goto(setup_url)
    expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    page.get_by_label("New password").fill(PASSWORD)
    page.get_by_label("The same again").fill(PASSWORD)
    page.get_by_role("button", name="Set password").click()
    expect(page.get_by_text("Your password is set")).to_be_visible()


def log_in_by_keyboard(page: Page, url: str, email: str) -> None:
    """The login form by keyboard alone: the e-mail field has the focus on arrival."""
    page.goto(f"{url}/console/login")
    expect(page.get_by_label("E-mail")).to_be_focused()
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    expect(page.get_by_label("Password")).to_be_focused()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your properties")).to_be_visible()


def test_setup_link_password_login_and_the_properties(console_service: ConsoleService, page: Page) -> None:
    mine = a_property(console_service, "Casa Azul")
    a_property(console_service, "Casa Verde")
    owner = admin(console_service, "POST", "/owners", {"email": "ana@casa-azul.example", "name": "Ana Sousa",
                                                        "propertyIds": [mine["id"]]})
    choose_password(page, owner["setupUrl"])

    page.goto(f"{console_service.url}/console/properties")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()  # sent to log in first
    save_screen(page, "login")
    log_in_by_keyboard(page, console_service.url, "ana@casa-azul.example")
    expect(page.get_by_role("link", name="Casa Azul")).to_be_visible()
    expect(page.get_by_text("Casa Verde")).to_have_count(0)
    save_screen(page, "properties")

    page.get_by_role("link", name="Casa Azul").click()
    expect(page.get_by_role("heading", name="Casa Azul")).to_be_visible()
    expect(page.get_by_text("in sync")).to_be_visible()
    save_screen(page, "overview")

    session = [c for c in page.context.cookies() if c["name"] == "connectapi_console"]
    assert len(session) == 1 and session[0]["httpOnly"] and session[0]["sameSite"] == "Lax"
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    kept = session[0]
    page.context.add_cookies([{"name": kept["name"], "value": kept["value"], "url": console_service.url + "/console/"}])
    # (the cookie kept from before the logout, sent again)
    page.goto(f"{console_service.url}/console/properties/{mine['id']}")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()  # the session is over server-side


def test_the_console_at_375_pixels(console_service: ConsoleService, mobile_page: Page) -> None:
    mine = a_property(console_service, "Casa Azul")
    owner = admin(console_service, "POST", "/owners", {"email": "ana@casa-azul.example", "name": "Ana Sousa",
                                                        "propertyIds": [mine["id"]]})
    choose_password(mobile_page, owner["setupUrl"])
    assert sideways_overflow(mobile_page) == 0
    log_in_by_keyboard(mobile_page, console_service.url, "ana@casa-azul.example")
    assert mobile_page.evaluate("window.innerWidth") == 375
    screens = ("", "/keys", "/webhooks", "/grid", "/bookings", "/notifications", "/settings")
    for path in ["/console/properties"] + [f"/console/properties/{mine['id']}{screen}" for screen in screens]:
        mobile_page.goto(console_service.url + path)
        assert sideways_overflow(mobile_page) == 0, path  # wide tables scroll in their own box
    save_screen(mobile_page, "overview-375")


class Receiver(ThreadingHTTPServer):
    """A loopback webhook receiver: keeps each delivery's headers and body, answers 204."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks"

    def ids(self) -> list[str]:
        with self.lock:
            return [headers["webhook-id"] for headers, _ in self.received]

    def wait_for(self, count: int, within: float = 30) -> None:
        deadline = time.monotonic() + within
        while len(self.ids()) < count:
            assert time.monotonic() < deadline, f"{len(self.ids())} deliveries, not {count}"
            time.sleep(0.1)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


def logged_in_owner(service: ConsoleService, page: Page, name: str = "Casa Azul") -> dict[str, Any]:
    mine = a_property(service, name)
    owner = admin(service, "POST", "/owners", {"email": "ana@casa-azul.example", "name": "Ana Sousa",
                                                "propertyIds": [mine["id"]]})
    choose_password(page, owner["setupUrl"])
    log_in_by_keyboard(page, service.url, "ana@casa-azul.example")
    return mine


def test_webhooks_register_ping_pause_resume_redeliver(console_service: ConsoleService, page: Page,
                                                       receiver: Receiver) -> None:
    mine = logged_in_owner(console_service, page)
    page.goto(f"{console_service.url}/console/properties/{mine['id']}/webhooks")
    page.get_by_label("URL").fill(receiver.url)
    page.get_by_label("Description (optional)").fill("front desk PMS")
    page.get_by_role("button", name="Register").click()
    secret = page.locator("#webhook-secret").inner_text().strip()
    assert secret.startswith("whsec_")
    receiver.wait_for(1)
    headers, body = receiver.received[0]
    Webhook(secret).verify(body, headers)  # the ping, signed with the secret shown once
    assert json.loads(body)["type"] == "connectapi.ping"

    page.goto(f"{console_service.url}/console/properties/{mine['id']}/webhooks")
    expect(page.get_by_text(secret)).to_have_count(0)  # shown once, never again
    page.get_by_role("button", name=f"Pause {receiver.url}").click()
    expect(page.get_by_text("paused", exact=True)).to_be_visible()
    page.get_by_role("button", name=f"Send a test ping to {receiver.url}").click()
    save_screen(page, "webhooks")
    page.get_by_role("button", name=f"Resume {receiver.url}").click()
    receiver.wait_for(2)  # the ping that waited while paused
    assert len(set(receiver.ids())) == 2

    page.get_by_role("link", name="Deliveries").click()
    first = receiver.ids()[0]
    page.get_by_role("button", name=f"Redeliver {first}").click()
    receiver.wait_for(3)
    assert receiver.ids()[2] == first  # the same id again: receivers drop repeats
    page.goto(f"{console_service.url}/console/properties/{mine['id']}/webhooks")
    page.get_by_role("link", name="Deliveries").click()
    save_screen(page, "webhook-deliveries")


API = "/api/v1/connect-api/v1"


def api_call(service: ConsoleService, method: str, path: str, key: str, body: Any = None) -> httpx.Response:
    return httpx.request(method, f"{service.url}{API}{path}", json=body, timeout=30,
                         headers={"Authorization": f"Bearer {key}"})


def rate_until_pushed(service: ConsoleService, page: Page, key: str, base: str, plan: int, night: str, rate: str,
                      query: str = "") -> None:
    """A rate written with `key`, until the console's grid shows it in the record and at the
    channel manager (the columns after availability's two: the record's rate, the CM's)."""
    wrote = api_call(service, "PUT", "/rates", key, {"updates": [
        {"ratePlanId": plan, "dateFrom": night, "dateTo": night, "rate": rate, "currency": "EUR"}]})
    assert wrote.status_code == 202, wrote.text
    deadline = time.monotonic() + 60
    while True:
        page.goto(f"{base}/grid?from={night}&to={night}{query}")
        row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=night[5:], exact=False))
        cells = [c.strip() for c in row.first.locator("td").all_inner_texts()]
        if cells[2:4] == [rate, rate]:
            return
        assert time.monotonic() < deadline, f"the grid never showed the pushed rate: {cells}"
        time.sleep(0.5)


def test_keys_grid_and_bookings(console_service: ConsoleService, page: Page) -> None:
    """A key made in the console drives the API; a rate written with it shows on the grid
    with the channel manager's value beside it; a booking made with it is checked in from
    the bookings screen (then the API's cancel answers 409); its scopes narrowed, the API
    answers 403 SCOPE_MISSING; revoked, 401 API_KEY_REVOKED."""
    mine = logged_in_owner(console_service, page)
    base = f"{console_service.url}/console/properties/{mine['id']}"
    room, plan = mine["roomTypes"][0]["id"], mine["ratePlans"][0]["id"]

    page.goto(f"{base}/keys")
    page.get_by_label("Label").fill("front desk PMS")
    for scope in ("ari:read", "ari:write", "bookings:read", "bookings:write"):
        page.get_by_label(scope, exact=True).check()
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#key-secret").inner_text().strip()
    assert key.startswith("cak_live_")
    save_screen(page, "key-created")
    assert api_call(console_service, "GET", "/property", key).status_code == 200

    night = (date.today() + timedelta(days=3)).isoformat()
    after = (date.today() + timedelta(days=4)).isoformat()
    rate_until_pushed(console_service, page, key, base, plan, night, "135.00")
    save_screen(page, "grid")

    booked = api_call(console_service, "POST", "/bookings", key, {
        "externalReference": "WEB-1001", "checkIn": night, "checkOut": after, "currency": "EUR",
        "guest": {"name": "Ana Silva", "phone": "+351 912 345 678"},
        "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 2, "nightlyRate": "135.00"}]})
    assert booked.status_code == 201, booked.text
    booking = booked.json()["data"]
    page.goto(f"{base}/bookings")
    save_screen(page, "bookings")
    page.get_by_role("link", name=booking["reference"]).click()
    page.get_by_role("button", name="Check in").click()
    expect(page.get_by_role("cell", name="checked in")).to_be_visible()
    save_screen(page, "booking")
    cancel = api_call(console_service, "POST", f"/bookings/{booking['bookingId']}/cancel", key,
                      {"reason": "guest changed plans"})
    assert (cancel.status_code, cancel.json()["data"]["code"]) == (409, "BOOKING_NOT_CANCELLABLE")

    page.goto(f"{base}/keys")
    page.get_by_role("link", name="edit, rotate or revoke").click()
    page.get_by_label("bookings:write", exact=True).uncheck()
    page.get_by_role("button", name="Save").click()
    refused = api_call(console_service, "POST", "/bookings", key, {
        "externalReference": "WEB-1002", "checkIn": night, "checkOut": after, "currency": "EUR",
        "guest": {"name": "Bo", "phone": "+351 912 345 679"},
        "rooms": [{"roomTypeId": room, "ratePlanId": plan, "adults": 1, "nightlyRate": "135.00"}]})
    assert (refused.status_code, refused.json()["data"]["code"]) == (403, "SCOPE_MISSING")
    save_screen(page, "key-edit")

    page.get_by_role("link", name="Revoke this key…").click()
    page.get_by_role("button", name=re.compile("^Revoke key")).click()
    revoked = api_call(console_service, "GET", "/property", key)
    assert (revoked.status_code, revoked.json()["data"]["code"]) == (401, "API_KEY_REVOKED")
    page.goto(f"{base}/keys")
    expect(page.get_by_text(key)).to_have_count(0)  # the secret was shown once
    save_screen(page, "keys")

    for screen in ("notifications", "settings"):
        page.goto(f"{base}/{screen}")
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        save_screen(page, screen)


def console_rules() -> list[tuple[str, str]]:
    """Every console route of a property (path template, method), from the blueprint itself:
    a screen added later is covered without this list being touched."""
    from quart_trio import QuartTrio

    from connectapi.http import console

    app = QuartTrio("rules")
    app.register_blueprint(console.blueprint)
    found = []
    for rule in app.url_map.iter_rules():
        if "<int:property_id>" in rule.rule:
            for method in sorted((rule.methods or set()) & {"GET", "POST"}):
                found.append((rule.rule, method))
    return found


def test_an_owner_of_one_property_gets_404_for_every_page_and_action_of_another(
        console_service: ConsoleService, page: Page, receiver: Receiver) -> None:
    theirs = a_property(console_service, "Casa Verde")
    their_key = admin(console_service, "POST", f"/properties/{theirs['id']}/keys",
                      {"label": "theirs", "scopes": ["ari:read", "bookings:write"]})
    their_hook = admin(console_service, "POST", f"/properties/{theirs['id']}/webhooks", {"url": receiver.url})
    booked = api_call(console_service, "POST", "/bookings", their_key["key"], {
        "externalReference": "THEIRS-1", "checkIn": (date.today() + timedelta(days=5)).isoformat(),
        "checkOut": (date.today() + timedelta(days=6)).isoformat(), "currency": "EUR",
        "guest": {"name": "Bo", "phone": "+351 912 345 679"},
        "rooms": [{"roomTypeId": theirs["roomTypes"][0]["id"], "ratePlanId": theirs["ratePlans"][0]["id"],
                   "adults": 1, "nightlyRate": "99.00"}]})
    assert booked.status_code == 201, booked.text
    mine = logged_in_owner(console_service, page)
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    assert token

    ids = {"key_id": their_key["id"], "endpoint_id": their_hook["id"], "booking_id": booked.json()["data"]["bookingId"],
           "revision_id": "rev-1"}

    def url(template: str, property_id: int) -> str:
        path = template.replace("<int:property_id>", str(property_id))
        path = re.sub(r"<(?:int:)?(\w+)>", lambda m: str(ids[m.group(1)]), path)
        return console_service.url + path

    rules = console_rules()
    assert len(rules) >= 20, rules  # the screens are all there
    for template, method in rules:
        targets = [url(template, theirs["id"])]
        if re.search(r"<(?:int:)?\w+>", template.replace("<int:property_id>", "")):
            targets.append(url(template, mine["id"]))  # their object under my property
        for target in targets:
            if method == "GET":
                status = page.goto(target).status  # type: ignore[union-attr]
            else:
                status = page.request.post(target, form={"csrf": token}, max_redirects=0).status
            assert status == 404, (method, target, status)
    # Nothing of theirs changed: the key still works, the endpoint still active.
    assert api_call(console_service, "GET", "/property", their_key["key"]).status_code == 200
    assert admin(console_service, "GET", f"/properties/{theirs['id']}/webhooks")[0]["status"] == "active"

    # A form posted without its token is refused; a disabled owner cannot log in.
    refused = page.request.post(f"{console_service.url}/console/properties/{mine['id']}/keys", form={"label": "x"},
                                max_redirects=0)
    assert refused.status == 403
    owners = admin(console_service, "GET", "/owners")
    admin(console_service, "PATCH", f"/owners/{owners[0]['ownerId']}", {"disabled": True})
    page.goto(f"{console_service.url}/console/properties")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()  # its session ended
    page.get_by_label("E-mail").fill("ana@casa-azul.example")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Wrong e-mail or password.")).to_be_visible()


def test_the_test_data_switch(console_service: ConsoleService, page: Page) -> None:
    """The mode switch: test data under a banner of its own colour, a test key made there
    drives the test record, its rate reaches the test sandbox (the grid's channel column),
    and the live grid and keys show none of it."""
    mine = logged_in_owner(console_service, page)
    base = f"{console_service.url}/console/properties/{mine['id']}"
    plan = mine["ratePlans"][0]["id"]
    page.goto(f"{base}/keys")
    expect(page.locator(".test-banner")).to_have_count(0)
    page.get_by_role("link", name="Test data").click()
    expect(page.locator(".test-banner")).to_be_visible()
    page.get_by_label("Label").fill("sandbox PMS")
    for scope in ("ari:read", "ari:write"):
        page.get_by_label(scope, exact=True).check()
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#key-secret").inner_text().strip()
    assert key.startswith("cak_test_")
    assert api_call(console_service, "GET", "/property", key).json()["data"]["mode"] == "test"

    night = (date.today() + timedelta(days=5)).isoformat()
    # The test record's rate, and the test sandbox's beside it.
    rate_until_pushed(console_service, page, key, base, plan, night, "77.00", "&mode=test")
    expect(page.locator(".test-banner")).to_be_visible()
    save_screen(page, "test-mode")
    page.get_by_role("link", name="Back to live data").click()
    expect(page.locator(".test-banner")).to_have_count(0)
    page.goto(f"{base}/grid?from={night}&to={night}")
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=night[5:], exact=False))
    assert "77.00" not in " ".join(row.first.locator("td").all_inner_texts())
    page.goto(f"{base}/keys")
    expect(page.get_by_text("sandbox PMS")).to_have_count(0)
