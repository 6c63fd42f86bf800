"""Owners (issue 19): the admin routes that make them, the setup link, login and logout,
sessions, the lockout after failed logins, CSRF, and isolation between owners."""

from __future__ import annotations

from typing import Any

import trio

from connectapi.domain.owners import LOCKOUT_FAILURES
from connectapi.storage import notifications, owners

from .console_visitor import Visitor, logged_in, owner_with_password
from .harness import Harness, after_janitor_rounds, eventually

PASSWORD = "correct horse battery"


async def test_the_operator_makes_lists_changes_and_deletes_owners(api: Harness) -> None:
    a, b = await api.create_property(), await api.create_property(name="Casa Verde")
    made = await api.admin("POST", "/owners", {"email": "Ana@Hotel.example", "name": "Ana", "propertyIds": [a["id"]]})
    assert made.status == 201 and set(made.data) == {"ownerId", "setupUrl"}
    assert made.data["setupUrl"].startswith("http://localhost/console/setup/")
    again = await api.admin("POST", "/owners", {"email": "ana@hotel.EXAMPLE", "name": "Ana 2", "propertyIds": []})
    assert (again.status, again.code) == (409, "OWNER_EXISTS")
    unknown = await api.admin("POST", "/owners", {"email": "b@hotel.example", "name": "B", "propertyIds": [999999]})
    assert (unknown.status, unknown.code) == (400, "VALIDATION")
    extra = await api.admin("POST", "/owners", {"email": "c@hotel.example", "name": "C", "propertyIds": [],
                                                "role": "admin"})
    assert extra.code == "VALIDATION"
    assert [o["email"] for o in (await api.admin("GET", "/owners")).data] == ["Ana@Hotel.example"]

    owner_id = made.data["ownerId"]
    shown = (await api.admin("GET", f"/owners/{owner_id}")).data
    assert (shown["propertyIds"], shown["passwordSet"], shown["disabled"]) == ([a["id"]], False, False)
    changed = await api.admin("PATCH", f"/owners/{owner_id}", {"propertyIds": [a["id"], b["id"]], "name": "Ana S"})
    assert changed.data["propertyIds"] == sorted([a["id"], b["id"]]) and changed.data["name"] == "Ana S"
    reset = await api.admin("POST", f"/owners/{owner_id}/reset")
    assert reset.status == 200 and reset.data["setupUrl"] != made.data["setupUrl"]
    assert (await api.admin("DELETE", f"/owners/{owner_id}")).status == 200
    assert (await api.admin("GET", f"/owners/{owner_id}")).code == "OWNER_NOT_FOUND"
    assert (await api.admin("PATCH", "/owners/424242", {"name": "X"})).code == "OWNER_NOT_FOUND"


async def test_the_setup_link_is_emailed_used_once_and_not_kept_once_sent(api: Harness) -> None:
    prop = await api.create_property()
    made = await api.admin("POST", "/owners", {"email": "ana@hotel.example", "name": "Ana", "propertyIds": [prop["id"]]})
    link = made.data["setupUrl"]
    path = "/" + link.split("://", 1)[1].split("/", 1)[1]
    queued = await api.ctx.db.fetch("SELECT id, to_address, property_id FROM notifications "
                                    "WHERE kind = 'owner.setup'")
    assert [(r["to_address"], r["property_id"]) for r in queued] == [("ana@hotel.example", None)]
    assert await notifications.for_property(api.ctx.db, prop["id"]) == []  # not the property's to show

    visitor = Visitor(api)
    short = await visitor.submit(path, path, {"password": "too short", "confirm": "too short"})
    assert short.status == 400 and "at least 12 characters" in short.text
    differ = await visitor.submit(path, path, {"password": PASSWORD, "confirm": PASSWORD + "!"})
    assert differ.status == 400 and "differ" in differ.text
    done = await visitor.submit(path, path, {"password": PASSWORD, "confirm": PASSWORD})
    assert done.status == 200 and "Your password is set" in done.text
    used = await visitor.get(path)
    assert used.status == 404 and "not valid" in used.text

    # Sent (no SMTP server here: logged and marked sent), the e-mail keeps no link.
    async def sent_without_the_link() -> bool:
        row = await api.ctx.db.fetchrow("SELECT sent_at, body FROM notifications WHERE id = $1", queued[0]["id"])
        return row is not None and row["sent_at"] is not None and row["body"] == notifications.SENT_SECRET_BODY
    await eventually(sent_without_the_link, "the setup e-mail sent and its link dropped")


async def test_a_setup_link_expires_after_a_day(api: Harness) -> None:
    made = await api.admin("POST", "/owners", {"email": "ana@hotel.example", "name": "Ana", "propertyIds": []})
    path = "/" + made.data["setupUrl"].split("://", 1)[1].split("/", 1)[1]
    api.advance(24 * 3600 + 1)
    assert (await Visitor(api).get(path)).status == 404


async def test_login_logout_and_a_session_that_ends(api: Harness) -> None:
    prop = await api.create_property()
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [prop["id"]])
    anonymous = Visitor(api)
    sent_away = await anonymous.get("/console/properties")
    assert sent_away.status == 302 and sent_away.location == "/console/login?next=/console/properties"

    visitor = await logged_in(api, "ANA@hotel.example", PASSWORD)
    cookie = visitor.cookie("connectapi_console")
    assert cookie is not None
    listed = await visitor.get("/console/properties")
    assert listed.status == 200 and "Casa Azul" in listed.text and "in sync" in listed.text

    # Logged out: the same cookie, sent again, opens nothing.
    out = await visitor.post("/console/logout", {"csrf": listed.csrf()})
    assert out.status == 302 and out.location == "/console/login"
    thief = Visitor(api)
    thief.client.set_cookie("localhost", "connectapi_console", cookie, path="/console")
    assert (await thief.get("/console/properties")).status == 302

    # Twelve idle hours end a session.
    idle = await logged_in(api, "ana@hotel.example", PASSWORD)
    api.advance(11 * 3600)
    assert (await idle.get("/console/properties")).status == 200
    api.advance(12 * 3600)
    assert (await idle.get("/console/properties")).status == 302


async def test_the_session_cookie_and_the_page_headers(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = Visitor(api)
    form = await visitor.get("/console/login")
    answer = await visitor.post("/console/login", {"csrf": form.csrf(), "email": "ana@hotel.example",
                                                   "password": PASSWORD})
    cookies = answer.headers.get_all("Set-Cookie")
    session = [c for c in cookies if c.startswith("connectapi_console=")]
    assert len(session) == 1
    assert all(flag in session[0] for flag in ("HttpOnly", "SameSite=Lax", "Path=/console"))
    assert "Secure" not in session[0]  # plain HTTP here; over HTTPS it is Secure
    for page in (form, await visitor.get("/console/properties"), await visitor.get("/console/nowhere")):
        csp = page.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert page.headers["X-Content-Type-Options"] == "nosniff" and page.headers["Referrer-Policy"] == "no-referrer"
    unknown = await visitor.get("/console/nowhere")
    assert unknown.status == 404 and unknown.headers["Content-Type"].startswith("text/html")


async def test_a_new_session_id_at_every_login(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    first = await logged_in(api, "ana@hotel.example", PASSWORD)
    second = await logged_in(api, "ana@hotel.example", PASSWORD)
    assert first.cookie("connectapi_console") != second.cookie("connectapi_console")
    # A cookie planted before the login is not the session after it.
    planted = Visitor(api)
    planted.client.set_cookie("localhost", "connectapi_console", "planted-session-id-0123456789", path="/console")
    form = await planted.get("/console/login")
    await planted.post("/console/login", {"csrf": form.csrf(), "email": "ana@hotel.example", "password": PASSWORD})
    assert planted.cookie("connectapi_console") not in (None, "planted-session-id-0123456789")


async def test_a_form_without_its_token_is_refused(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = await logged_in(api, "ana@hotel.example", PASSWORD)
    refused = await visitor.post("/console/logout", {})
    assert refused.status == 403 and "no longer valid" in refused.text
    assert (await visitor.get("/console/properties")).status == 200  # still logged in
    wrong = await visitor.post("/console/logout", {"csrf": "x" * 43})
    assert wrong.status == 403
    # The login form too: without the form cookie's token, nothing is checked.
    stranger = Visitor(api)
    blind = await stranger.post("/console/login", {"email": "ana@hotel.example", "password": PASSWORD})
    assert blind.status == 403 and stranger.cookie("connectapi_console") is None


async def test_ten_failed_logins_make_the_account_wait(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    # From many addresses (so the address's own ip-auth budget is not what stops it).
    for n in range(LOCKOUT_FAILURES):
        bad = await Visitor(api, f"198.51.100.{100 + n}").submit(
            "/console/login", "/console/login", {"email": "ana@hotel.example", "password": "wrong password!"})
        assert bad.status == 401 and "Wrong e-mail or password" in bad.text
    waiting = await Visitor(api, "203.0.113.9").submit(
        "/console/login", "/console/login", {"email": "ana@hotel.example", "password": PASSWORD})
    assert waiting.status == 429 and "wait 15 minute(s)" in waiting.text and waiting.headers["Retry-After"] == "900"
    api.advance(15 * 60 + 1)
    await logged_in(api, "ana@hotel.example", PASSWORD, address="203.0.113.9")


async def test_failed_logins_count_against_the_address(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = Visitor(api, "192.0.2.50")
    statuses = []
    for n in range(25):  # ip-auth allows 20 a minute; each to another e-mail (no lockout)
        answer = await visitor.submit("/console/login", "/console/login",
                                      {"email": f"nobody{n}@hotel.example", "password": "wrong password!"})
        statuses.append(answer.status)
    assert statuses[:20] == [401] * 20 and 429 in statuses[20:]


async def test_a_disabled_owner_cannot_log_in_and_its_sessions_end(api: Harness) -> None:
    owner_id = await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = await logged_in(api, "ana@hotel.example", PASSWORD)
    assert (await api.admin("PATCH", f"/owners/{owner_id}", {"disabled": True})).data["disabled"] is True
    assert (await visitor.get("/console/properties")).status == 302
    refused = await Visitor(api).submit("/console/login", "/console/login",
                                        {"email": "ana@hotel.example", "password": PASSWORD})
    assert refused.status == 401
    assert (await api.admin("PATCH", f"/owners/{owner_id}", {"disabled": False})).data["disabled"] is False
    await logged_in(api, "ana@hotel.example", PASSWORD)


async def test_an_owner_sees_its_own_properties_only(api: Harness) -> None:
    a, b = await api.create_property(), await api.create_property(name="Casa Verde")
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [a["id"]])
    visitor = await logged_in(api, "ana@hotel.example", PASSWORD)
    listed = await visitor.get("/console/properties")
    assert "Casa Azul" in listed.text and "Casa Verde" not in listed.text
    own = await visitor.get(f"/console/properties/{a['id']}")
    assert own.status == 200 and "Casa Azul" in own.text and "in sync" in own.text
    other = await visitor.get(f"/console/properties/{b['id']}")
    assert other.status == 404 and "Casa Verde" not in other.text
    assert (await visitor.get("/console/properties/99999999")).status == 404


async def test_next_after_login_stays_in_the_console(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    for target, expected in (("/console/properties", "/console/properties"), ("https://evil.example/", "/console/"),
                             ("//evil.example/console/", "/console/"), ("/api/v1/admin/owners", "/console/"),
                             ("/console/../metrics", "/console/"), ("/console/a\r\nSet-Cookie: x=1", "/console/"),
                             ("/console/properties?x=1", "/console/properties?x=1"),
                             ("/console/%2e%2e/%2e%2e/api/v1/admin/owners", "/console/"),
                             ("/console/%2E%2E/metrics", "/console/"), ("/console/%5c%5cevil.example", "/console/"),
                             ("/console/%252e%252e/metrics", "/console/"),
                             ("/console/properties/%2e/1", "/console/properties/1")):
        visitor = Visitor(api)
        form = await visitor.get(f"/console/login?next={target}")
        answer = await visitor.post("/console/login", {"csrf": form.csrf(), "email": "ana@hotel.example",
                                                       "password": PASSWORD, "next": target})
        assert answer.location == expected, target


async def test_the_janitor_forgets_ended_sessions_old_failures_and_spent_links(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])  # its link is now used
    kept = await api.admin("POST", "/owners", {"email": "bo@hotel.example", "name": "Bo", "propertyIds": []})
    assert kept.status == 201  # Bo's link, unused
    await logged_in(api, "ana@hotel.example", PASSWORD)
    await Visitor(api).submit("/console/login", "/console/login", {"email": "x@hotel.example", "password": "nope!"})
    db = api.ctx.db

    async def counts() -> tuple[int, int, int]:
        return (await db.fetchval("SELECT count(*) FROM owner_sessions"),
                await db.fetchval("SELECT count(*) FROM owner_login_failures"),
                await db.fetchval("SELECT count(*) FROM owner_setup_links"))

    assert await counts() == (1, 1, 2)
    api.advance(3600)  # an hour: the failure is past the lockout's reach; the session and Bo's link are not
    await after_janitor_rounds(api, lambda: _equal(counts(), (1, 0, 1)), "the failure and the used link forgotten")
    api.advance(24 * 3600)  # the session idle past 12 hours, Bo's link expired
    await after_janitor_rounds(api, lambda: _equal(counts(), (0, 0, 0)), "the idle session and the expired link")


async def _equal(found: Any, expected: tuple[int, int, int]) -> bool:
    return bool(await found == expected)


async def test_parallel_wrong_passwords_are_counted_one_after_the_other(api: Harness) -> None:
    """Thirty wrong passwords for one e-mail at once, from thirty addresses: at most ten are
    checked (the lockout counts each before its password is), the rest wait."""
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitors = [Visitor(api, f"198.51.100.{100 + n}") for n in range(30)]
    forms = [await v.get("/console/login") for v in visitors]
    statuses: list[int] = []

    async def attempt(visitor: Visitor, token: str) -> None:
        answer = await visitor.post("/console/login", {"csrf": token, "email": "ana@hotel.example",
                                                       "password": "wrong password!"})
        statuses.append(answer.status)

    async with trio.open_nursery() as nursery:
        for visitor, form in zip(visitors, forms, strict=True):
            nursery.start_soon(attempt, visitor, form.csrf())
    assert sorted(statuses) == [401] * LOCKOUT_FAILURES + [429] * (30 - LOCKOUT_FAILURES)
    assert await api.ctx.db.fetchval("SELECT count(*) FROM owner_login_failures") == LOCKOUT_FAILURES


async def test_odd_input_at_the_login_is_refused_plainly(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    for email in ("ana\x00@hotel.example", "ana@hotel.example\r\nX-Bad: 1", "a" * 60_000):
        answer = await Visitor(api).submit("/console/login", "/console/login", {"email": email, "password": "x"})
        assert answer.status == 401 and "Wrong e-mail or password" in answer.text, email[:40]


async def test_a_login_that_raced_a_password_change_opens_no_session(api: Harness) -> None:
    owner_id = await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    found = await owners.password_hash_of(api.ctx.db, "ana@hotel.example")
    assert found is not None and found[1] is not None
    now = api.ctx.clock.now()
    assert await owners.open_session(api.ctx.db, owner_id, found[1], "s" * 43, "c" * 43, now)
    assert not await owners.open_session(api.ctx.db, owner_id, found[1] + "x", "t" * 43, "c" * 43, now)
    await api.admin("PATCH", f"/owners/{owner_id}", {"disabled": True})
    assert not await owners.open_session(api.ctx.db, owner_id, found[1], "u" * 43, "c" * 43, now)


async def test_a_login_form_token_is_the_services_not_the_cookies(api: Harness) -> None:
    """Someone who can plant the form cookie (a sibling subdomain) still cannot make a
    matching form: the token is signed with the service's key. Another site's POST is
    refused whatever it carries."""
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = Visitor(api)
    visitor.client.set_cookie("localhost", "connectapi_console_form", "planted-form-cookie-0123456789",
                              path="/console")
    forged = await visitor.post("/console/login", {"csrf": "planted-form-cookie-0123456789",
                                                   "email": "ana@hotel.example", "password": PASSWORD})
    assert forged.status == 403
    form = await visitor.get("/console/login")
    assert form.csrf() != "planted-form-cookie-0123456789"
    cross = await visitor.post("/console/login", {"csrf": form.csrf(), "email": "ana@hotel.example",
                                                  "password": PASSWORD}, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status == 403
    assert (await visitor.post("/console/login", {"csrf": form.csrf(), "email": "ana@hotel.example",
                                                  "password": PASSWORD})).status == 302


async def test_logging_in_again_ends_the_earlier_session(api: Harness) -> None:
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = await logged_in(api, "ana@hotel.example", PASSWORD)
    first = visitor.cookie("connectapi_console")
    form = await visitor.get("/console/login?next=/console/properties")
    assert form.status == 302  # logged in already: to the console
    await visitor.post("/console/login", {"csrf": (await visitor.get("/console/properties")).csrf(),
                                          "email": "ana@hotel.example", "password": PASSWORD})
    assert visitor.cookie("connectapi_console") != first
    assert await api.ctx.db.fetchval("SELECT count(*) FROM owner_sessions") == 1


async def test_the_console_without_its_slash(api: Harness) -> None:
    answer = await Visitor(api).get("/console")
    assert answer.status == 302 and answer.location == "/console/"
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


async def test_a_login_form_with_too_many_fields_is_refused_before_it_is_looked_at(api: Harness) -> None:
    """The console's forms have a dozen fields at most: past 50 the form is refused (a
    form of 349,000 empty fields held the event loop most of a second)."""
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [])
    visitor = Visitor(api)
    token = (await visitor.get("/console/login")).csrf()
    fields = {"csrf": token, "email": "ana@hotel.example", "password": PASSWORD}
    padded = {**fields, **{f"pad{i}": "" for i in range(47)}}  # 50 fields: taken
    assert (await visitor.post("/console/login", padded)).status == 302
    visitor = Visitor(api)
    token = (await visitor.get("/console/login")).csrf()
    over = {"csrf": token, "email": "ana@hotel.example", "password": PASSWORD, **{f"pad{i}": "" for i in range(48)}}
    answer = await visitor.post("/console/login", over)
    assert answer.status == 413 and "at most 50 fields" in answer.text
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert visitor.cookie("connectapi_console") is None


async def test_a_console_post_that_is_not_a_form_is_refused(api: Harness) -> None:
    visitor = Visitor(api)
    token = (await visitor.get("/console/login")).csrf()
    answer = await visitor.client.post("/console/login", json={"csrf": token, "email": "a@b.example"},
                                       scope_base={"client": (visitor.address, 40000)})
    assert answer.status_code == 415 and "takes forms only" in await answer.get_data(as_text=True)


async def test_doubled_slashes_get_the_consoles_answer_not_a_redirect_to_the_host_header(api: Harness) -> None:
    """Werkzeug merges slashes with a 308 of its own: no console headers, and a Location
    built from the Host header (a setup token riding to evil.example)."""
    prop = await api.create_property()
    await owner_with_password(api, "ana@hotel.example", PASSWORD, [prop["id"]])
    visitor = await logged_in(api, "ana@hotel.example", PASSWORD)
    for path in ("/console//login", f"/console/properties//{prop['id']}", "/console/setup//" + "t" * 43,
                 "/console/properties/" + str(prop["id"]) + "//keys"):
        answer = await visitor.client.get(path, headers={"Host": "evil.example"},
                                          scope_base={"client": (visitor.address, 40000)})
        assert answer.status_code == 404, (path, answer.status_code, answer.headers.get("Location"))
        assert "Location" not in answer.headers, path
        if path.startswith("/console"):
            assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"], path
            assert answer.headers["Cache-Control"] == "no-store", path
    doubled = await api.admin("GET", "//owners")
    assert doubled.status == 404 and doubled.body["data"]["code"] == "NOT_FOUND"
