"""Who is asking, for every console page: the session cookie, the owner behind it, the
CSRF check of every form, and the answers a console gives (HTML pages, not the API's
envelope).

The session id is a random 256-bit value in an HttpOnly, SameSite=Lax cookie (Secure when
the request came over HTTPS); the record keeps its SHA-256 only. Every state-changing form
carries the session's CSRF token; the two forms used before there is a session (login and
choosing a password) carry a token that must equal a cookie of their own (double submit).
"""

from __future__ import annotations

import hashlib
import hmac
import posixpath
from datetime import UTC, datetime
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

from quart import Response, g, redirect, render_template, request

from ...domain.errors import ApiError
from ...domain.owners import SESSION_IDLE, SESSION_TOUCH_EVERY, new_secret, session_over
from ...storage import owners, properties
from ...storage.owners import Owner
from ...storage.records import Property
from ..context import client_address, context
from ..shared.twin_records import test_record_of
from . import form as posted_form

PREFIX = "/console"
SESSION_COOKIE = "connectapi_console"
FORM_COOKIE = "connectapi_console_form"  # the double-submit token of the login and password forms
CSRF_FIELD = "csrf"
# What a console page may load and do: its own styles and script only, no inline script,
# no framing, forms posted to us only.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    # Pages show secrets once (a new key, an endpoint's secret): never kept by a cache.
    "Cache-Control": "no-store",
}

View = TypeVar("View", bound=Callable[..., Awaitable[Any]])


class ConsoleRefusal(Exception):
    """An answer of the console other than the page asked for: an HTML page with a status."""

    def __init__(self, status: int, title: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.retry_after = retry_after


def over_https() -> bool:
    """Whether the client reached us over HTTPS: the connection's scheme, or a trusted
    proxy's X-Forwarded-Proto."""
    if request.scheme == "https":
        return True
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return proto == "https" and context().proxies.is_proxy(request.remote_addr or "")


def set_cookie(response: Response, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(name, value, max_age=max_age, path=PREFIX, httponly=True, samesite="Lax",
                        secure=over_https())


def forget_cookie(response: Response, name: str) -> None:
    response.delete_cookie(name, path=PREFIX, httponly=True, samesite="Lax", secure=over_https())


async def load_session() -> None:
    """`g.owner` and `g.csrf` from the session cookie (None when there is none, or it is
    over); an idle one is ended here."""
    g.owner = None
    g.csrf = None
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id or len(session_id) > 100:
        return
    ctx = context()
    found = await owners.session(ctx.db, session_id)
    if found is None:
        return
    now = ctx.clock.now()
    if session_over(found.last_seen_at, now):
        await owners.end_session(ctx.db, session_id)
        return
    if now - found.last_seen_at >= SESSION_TOUCH_EVERY:
        await owners.touch_session(ctx.db, session_id, now)
    g.owner = found.owner
    g.csrf = found.csrf
    g.session_id = session_id


async def check_form_token() -> None:
    """Every POST to the console: not sent by another site (Sec-Fetch-Site, where the
    browser says), and its form's CSRF token the session's, or, with no session, the one
    made from the form cookie with the service's key (so a cookie planted by someone else,
    a sibling subdomain say, does not let them make a matching form).

    What can be judged without the body is judged first: a POST with neither a session nor
    a form cookie is refused before a byte of its body is read, and the form is read only
    within the console's limits (form.py)."""
    if request.method != "POST":
        return
    if request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
        raise _expired()
    if g.owner is not None:
        expected: str | None = g.csrf
    else:
        cookie = request.cookies.get(FORM_COOKIE)
        expected = _signed(cookie) if cookie and _cookie_shaped(cookie) else None
    if not expected:
        raise _expired()
    try:
        sent = (await posted_form.read()).get(CSRF_FIELD, "")
    except posted_form.FormRefused as refused:
        raise ConsoleRefusal(refused.status, FORM_TITLES[refused.status], refused.message[0].upper()
                             + refused.message[1:] + ".") from None
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise _expired()


FORM_TITLES = {408: "Too slow", 413: "Form too large", 415: "Not a form"}


def _cookie_shaped(cookie: str) -> bool:
    """A form cookie as `form_token` makes them (anything else was not ours)."""
    return 20 <= len(cookie) <= 100


def _expired() -> ConsoleRefusal:
    return ConsoleRefusal(403, "Form expired", "This form is no longer valid (it may be from an earlier session). "
                                               "Go back, reload the page and send it again.")


def _signed(cookie: str) -> str:
    """The form token of a form cookie: an HMAC with a key only the service has (derived
    from the operator token, which never leaves it)."""
    key = hashlib.sha256(b"connectapi console form\0" + context().operation.admin_token.encode()).digest()
    return hmac.new(key, cookie.encode(), hashlib.sha256).hexdigest()


def form_token() -> str:
    """The token to put in a form: the session's, or the one made from the form cookie (a
    new cookie when there is none, set on the answer by `after_page`)."""
    if g.get("owner") is not None:
        token: str = g.csrf
        return token
    existing = request.cookies.get(FORM_COOKIE)
    if existing and _cookie_shaped(existing):
        return _signed(existing)
    if g.get("new_form_token") is None:
        g.new_form_token = new_secret()
    return _signed(g.new_form_token)


def after_page(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    if g.get("new_form_token"):
        set_cookie(response, FORM_COOKIE, g.new_form_token, max_age=None)
    return response


def login_required(view: View) -> View:
    """The page needs an owner: without one, the login page, then back here."""
    @wraps(view)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        if g.get("owner") is None:
            return redirect(f"{PREFIX}/login?next={request.path}")
        return await view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def owner() -> Owner:
    found: Owner = g.owner
    return found


async def owned_property(property_id: int) -> Property:
    """One of the owner's properties, or 404: another property's pages do not exist for it."""
    if property_id not in owner().property_ids:
        raise not_found()
    prop = await properties.get_live_property(context().db, property_id)
    if prop is None:
        raise not_found()
    return prop


def console_mode() -> str:
    """The console's mode for this request: `test` shows and changes the property's test
    record (what test keys see); anything else is the live one."""
    return "test" if request.args.get("mode") == "test" else "live"


async def owned_record(property_id: int) -> tuple[Property, Property]:
    """The owned property, and the record this page shows of it: itself, or in test mode its
    test twin (made when first looked at: its availability as a new property's)."""
    prop = await owned_property(property_id)
    if console_mode() != "test":
        return prop, prop
    twin_id = await test_record_of(prop.id)
    twin = await properties.get_property(context().db, twin_id) if twin_id is not None else None
    if twin is None:
        raise not_found()
    return prop, twin


def not_found() -> ConsoleRefusal:
    return ConsoleRefusal(404, "Not found", "There is no such page.")


def safe_next(target: str | None) -> str:
    """Where to go after login: a console path of ours only (never another site, never a
    path that leaves the console once normalised, nothing a header could not carry)."""
    home = f"{PREFIX}/"
    if not target or len(target) > 500 or any(ord(c) < 32 or ord(c) == 127 for c in target):
        return home
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or "\\" in target or target.startswith("//"):
        return home
    # Judged as the browser will resolve it: `%2e%2e` is `..` to a browser, `%5c` may be
    # `/`. Decoded once, normalised, and sent back encoded with no dot segment left.
    decoded = unquote(parts.path)
    if "\\" in decoded or "%" in decoded or any(ord(c) < 32 or ord(c) == 127 for c in decoded):
        return home
    path = posixpath.normpath(decoded)
    if not (path + "/").startswith(home) or path.startswith("//"):
        return home
    return quote(path, safe="/") + (f"?{parts.query}" if parts.query else "")


# Pages of what a property's two records share (its settings, the owner's e-mails): shown
# in no mode, never under the test banner.
SHARED_TABS = ("/settings", "/notifications")


async def page(template: str, status: int = 200, **values: Any) -> Response:
    mode = "live" if values.get("tab") in SHARED_TABS else console_mode()
    body = await render_template(template, owner=g.get("owner"), csrf=form_token(), mode=mode,
                                 mode_query="?mode=test" if mode == "test" else "", shared_tabs=SHARED_TABS,
                                 **values)
    return Response(body, status=status, mimetype="text/html")


async def refusal_page(refusal: ConsoleRefusal) -> Response:
    response = await page("message.html", refusal.status, title=refusal.title, message=refusal.message)
    if refusal.retry_after is not None:
        response.headers["Retry-After"] = str(refusal.retry_after)
    return after_page(response)


async def error_page(status: int, message: str, retry_after: int | None = None) -> Response:
    """The app's own errors (404 of an unknown console path, 405, 500) on a console path."""
    titles = {404: "Not found", 405: "Not allowed", 408: "Too slow", 413: "Too large", 416: "Range not satisfiable", 429: "Too many requests",
              503: "Unavailable"}
    return await refusal_page(ConsoleRefusal(status, titles.get(status, "Something went wrong"), message,
                                             retry_after))


def utc_minute(moment: datetime) -> str:
    """An instant as the console's pages show it (the `utc` filter): in UTC, said so."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def utc_second(moment: datetime | None) -> str:
    """The same to the second (the `utc_second` filter; nothing for no instant)."""
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def is_console_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


async def admit() -> None:
    """The address's `ip` budget and the open share of `global`, as for any request."""
    entry = await context().budgets.keeper.admit(client_address(), needs_key=False)
    if entry.refusal is not None:
        raise as_console_refusal(entry.refusal)


def as_console_refusal(err: ApiError) -> ConsoleRefusal:
    if err.status == 429:
        return ConsoleRefusal(429, "Too many requests", "Too many requests from your address: wait a little and "
                              "try again.", err.retry_after_seconds)
    return ConsoleRefusal(err.status, "Refused", err.message)


SESSION_MAX_AGE = int(SESSION_IDLE.total_seconds())
