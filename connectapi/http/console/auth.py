"""Getting into the console: choosing a password through a setup link, logging in (with
the lockout after failed logins, and the address's `ip-auth` budget), logging out."""

from __future__ import annotations

import functools

import trio
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from quart import Response, g, redirect, request

from ...domain.owners import LOCKOUT_WAIT, LOCKOUT_WINDOW, PASSWORD_MAX, email_key, locked_until, new_secret, \
    password_problem
from ...storage import owners
from ..context import client_address, context
from . import form as posted_form
from .session import (
    FORM_COOKIE,
    PREFIX,
    SESSION_COOKIE,
    SESSION_MAX_AGE,
    ConsoleRefusal,
    as_console_refusal,
    forget_cookie,
    page,
    safe_next,
    set_cookie,
)

# argon2id with the library's defaults (RFC 9106's second recommended option).
HASHER = PasswordHasher()


@functools.cache
def _no_owner_hash() -> str:
    """Verified when there is no such owner, so that an unknown e-mail costs what a known one does."""
    return HASHER.hash(new_secret())

MOST_EMAIL = 254


# argon2 takes tens of milliseconds of CPU and 64 MiB on purpose: off the event loop, and
# two at a time at most (forty at once, trio's default, took 2 GiB and 5 s here), in a
# limiter of their own so that they never hold up the other work sent to threads.
HASHING = trio.CapacityLimiter(2)


async def _hash(password: str) -> str:
    hashed: str = await trio.to_thread.run_sync(HASHER.hash, password, limiter=HASHING)
    return hashed


async def _dummy_hash() -> str:
    made: str = await trio.to_thread.run_sync(_no_owner_hash, limiter=HASHING)
    return made


async def _verifies(password_hash: str, password: str) -> bool:
    def verify() -> bool:
        try:
            return HASHER.verify(password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    return await trio.to_thread.run_sync(verify, limiter=HASHING)


async def login_form() -> Response:
    if g.get("owner") is not None:
        return redirect(f"{PREFIX}/")  # type: ignore[return-value]
    return await page("login.html", next=safe_next(request.args.get("next")), email="", error=None)


async def login() -> Response:
    ctx = context()
    form = posted_form.posted()
    email = form.get("email", "")[:MOST_EMAIL].strip()
    password = form.get("password", "")[:PASSWORD_MAX + 1]
    target = safe_next(form.get("next"))
    address = client_address()
    # Every attempt is counted on the address before any work, checked and counted at once:
    # attempts sent in parallel cannot all pass a check made before any of them counted.
    refused = await ctx.budgets.keeper.attempt_auth(address)
    if refused is not None:
        raise as_console_refusal(refused)
    now = ctx.clock.now()
    found = None
    if _plain(email):
        # Read before the attempt is counted: a read the record fails (a 503) has judged
        # nothing, and must not count toward the e-mail's lockout.
        found = await owners.password_hash_of(ctx.db, email)
        until = await owners.count_attempt(ctx.db, email, now, now - LOCKOUT_WINDOW - LOCKOUT_WAIT,
                                           lambda failures: locked_until(failures, now))
        if until is not None:
            wait = max(1, int((until - now).total_seconds()))
            raise ConsoleRefusal(429, "Try again later", f"Too many failed logins for this e-mail: wait "
                                 f"{(wait + 59) // 60} minute(s) before trying again.", wait)
    good = False
    if found is None or found[1] is None or found[2]:
        await _verifies(await _dummy_hash(), password)  # the same work, whatever the reason
    else:
        good = await _verifies(found[1], password)
    if not good or found is None or found[1] is None:
        return await page("login.html", 401, next=target, email=email, error="Wrong e-mail or password.")
    owner_id, password_hash = found[0], found[1]
    # The right password: its failures go before anything else may fail, so that a record
    # failing from here on (a 503, and a retry) leaves this attempt counted as none.
    await owners.forget_failures(ctx.db, email_key(email))
    # A new session id at every login: one planted before it (session fixation) is worth nothing.
    session_id, csrf = new_secret(), new_secret()
    if not await owners.open_session(ctx.db, owner_id, password_hash, session_id, csrf, now):
        # The password changed, or the owner was disabled, while this one was checked.
        return await page("login.html", 401, next=target, email=email, error="Wrong e-mail or password.")
    if HASHER.check_needs_rehash(password_hash):
        await owners.replace_hash(ctx.db, owner_id, password_hash, await _hash(password))
    earlier = g.get("session_id")
    if earlier:
        await owners.end_session(ctx.db, earlier)
    response: Response = redirect(target)  # type: ignore[assignment]
    set_cookie(response, SESSION_COOKIE, session_id, SESSION_MAX_AGE)
    forget_cookie(response, FORM_COOKIE)
    return response


def _plain(email: str) -> bool:
    """An e-mail the record can hold and compare: no control characters (a NUL would be
    refused by PostgreSQL). Anything else is answered as an unknown e-mail."""
    return bool(email) and not any(ord(c) < 32 or ord(c) == 127 for c in email)


async def logout() -> Response:
    session_id = g.get("session_id")
    if session_id:
        await owners.end_session(context().db, session_id)
    response: Response = redirect(f"{PREFIX}/login")  # type: ignore[assignment]
    forget_cookie(response, SESSION_COOKIE)
    return response


async def setup_form(token: str) -> Response:
    ctx = context()
    found = await owners.owner_of_link(ctx.db, token[:100], ctx.clock.now())
    if found is None:
        raise _bad_link()
    return await page("setup.html", token=token, who=found, error=None)


async def setup(token: str) -> Response:
    ctx = context()
    form = posted_form.posted()
    password = form.get("password", "")[:PASSWORD_MAX + 1]
    found = await owners.owner_of_link(ctx.db, token[:100], ctx.clock.now())
    if found is None:
        raise _bad_link()
    problem = password_problem(password)
    if problem is None and password != form.get("confirm", ""):
        problem = "the two passwords differ"
    if problem is not None:
        return await page("setup.html", 400, token=token, who=found, error=problem[0].upper() + problem[1:] + ".")
    changed = await owners.set_password(ctx.db, token[:100], await _hash(password), ctx.clock.now())
    if changed is None:
        raise _bad_link()
    return await page("message.html", title="Password set",
                      message="Your password is set. Log in with your e-mail and the new password.",
                      link=(f"{PREFIX}/login", "Log in"))


def _bad_link() -> ConsoleRefusal:
    return ConsoleRefusal(404, "Link not valid", "This link is not valid: it was used already, it expired (links "
                          "work for 24 hours), or a newer one was sent. Ask your operator for a new link.")
