"""Owners of properties and how they get into the console: the bodies of the admin routes,
the password rule, the lockout after failed logins, and how long links and sessions live.
No I/O: the clock's instants are passed in."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import Field, StrictBool

from .admin_models import Email, Name, Strict
from .ids import MAX_ID

# A setup link (first password, or a reset) is good this long, once.
SETUP_LINK_VALID = timedelta(hours=24)
# A session the owner has not used this long is over.
SESSION_IDLE = timedelta(hours=12)
# The last time a session was seen is written at most this often (a write per page otherwise).
SESSION_TOUCH_EVERY = timedelta(minutes=1)
# This many failed logins for one e-mail within the window, and the account waits.
LOCKOUT_FAILURES = 10
LOCKOUT_WINDOW = timedelta(minutes=15)
LOCKOUT_WAIT = timedelta(minutes=15)
PASSWORD_MIN = 12
# argon2 hashes any length; a bound keeps a megabyte password from costing a megabyte of work.
PASSWORD_MAX = 256
MOST_PROPERTIES = 1000

PropertyIds = Annotated[list[Annotated[int, Field(ge=1, le=MAX_ID)]], Field(max_length=MOST_PROPERTIES)]


class OwnerIn(Strict):
    email: Email
    name: Name
    propertyIds: PropertyIds


class OwnerChange(Strict):
    name: Name | None = None
    propertyIds: PropertyIds | None = None
    disabled: StrictBool | None = None


def email_key(email: str) -> str:
    """How e-mails are compared: one owner per address, whatever its case."""
    return email.strip().lower()


def password_problem(password: str) -> str | None:
    """Why a chosen password is refused, or None."""
    if len(password) < PASSWORD_MIN:
        return f"the password must be at least {PASSWORD_MIN} characters"
    if len(password) > PASSWORD_MAX:
        return f"the password must be at most {PASSWORD_MAX} characters"
    if password.strip() == "":
        return "the password cannot be only spaces"
    return None


def locked_until(failures: list[datetime], now: datetime) -> datetime | None:
    """When an e-mail may try again, if its recent failures lock it: the 10th failure within
    any 15 minutes starts a 15-minute wait from that failure."""
    recent = sorted(f for f in failures if f > now - LOCKOUT_WINDOW - LOCKOUT_WAIT)
    for i in range(LOCKOUT_FAILURES - 1, len(recent)):
        if recent[i] - recent[i - LOCKOUT_FAILURES + 1] <= LOCKOUT_WINDOW:
            until = recent[i] + LOCKOUT_WAIT
            if until > now:
                return until
    return None


def session_over(last_seen: datetime, now: datetime) -> bool:
    return now - last_seen >= SESSION_IDLE


def new_secret() -> str:
    """A setup link's token or a session id: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def digest(secret: str) -> bytes:
    """What the record keeps of a handed-out secret: enough to recognise it, never to use it."""
    return hashlib.sha256(secret.encode()).digest()
