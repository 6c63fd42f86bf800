"""Sends the e-mails of the outbox: over SMTP when configured, otherwise logged.

A row is written in the transaction of what it tells; this loop sends what is due after a
wake-up (a booking just committed) or every sweep, so a crash or an unreachable mail
server delays an e-mail and never loses one. A failed send is tried again with backoff.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from datetime import timedelta
from email.message import EmailMessage
from typing import Protocol

import trio

from ..domain.mail_settings import SmtpSettings
from ..domain.text import one_line
from ..engine import Clock, NextRound, RoundsActor, Wake
from ..storage import notifications
from ..storage.database import RECORD_AWAY, RECORD_BUSY, Database
from ..storage.records import Notification

log = logging.getLogger("connectapi.outbox")
# E-mails claimed at a time, and for how long: past the slowest a batch can take (each
# SMTP step has a 30 s timeout), so no other process sends them meanwhile.
BATCH = 10
CLAIM = timedelta(minutes=30)
RETRY_BASE = timedelta(minutes=1)
RETRY_MAX = timedelta(hours=1)


class Transport(Protocol):
    async def send(self, note: Notification) -> None: ...


class LoggingTransport:
    """No mail server configured: the e-mail is logged (recipient and subject) and counts as sent."""

    async def send(self, note: Notification) -> None:
        log.info("e-mail %s to %s: %s (no SMTP server configured; not sent)", note.kind, one_line(note.to_address),
                 one_line(note.subject))


class SmtpTransport:
    def __init__(self, settings: SmtpSettings, timeout: float = 30.0) -> None:
        self._settings = settings
        self._timeout = timeout

    async def send(self, note: Notification) -> None:
        message = EmailMessage()
        message["From"] = self._settings.sender
        message["To"] = note.to_address
        # A name stored before the rules, or the channel manager's channel name or reservation
        # code, may hold what breaks a header (CR/LF, U+2028, U+0085).
        message["Subject"] = one_line(note.subject)
        message.set_content(note.body)
        # Abandoned on cancel (a stop): the e-mail stays unsent in the outbox and goes later.
        await trio.to_thread.run_sync(self._send_blocking, message, abandon_on_cancel=True)

    def _send_blocking(self, message: EmailMessage) -> None:
        s = self._settings
        client: smtplib.SMTP
        if s.tls == "ssl":
            client = smtplib.SMTP_SSL(s.host, s.port, timeout=self._timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(s.host, s.port, timeout=self._timeout)
        with client:
            if s.tls == "starttls":
                client.starttls(context=ssl.create_default_context())
            if s.user and s.password:
                client.login(s.user, s.password)
            client.send_message(message)


class OutboxSender(RoundsActor[Wake]):
    """Rounds: every e-mail due, after a wake-up (a booking just committed) and every
    `sweep_seconds`."""

    name = "outbox"
    waits_out = RECORD_AWAY
    waits_out_briefly = RECORD_BUSY

    def __init__(self, db: Database, clock: Clock, transport: Transport, sweep_seconds: float = 30.0) -> None:
        self._db = db
        self._clock = clock
        self._transport = transport
        self.interval = sweep_seconds

    async def round(self) -> NextRound:
        await self.send_due()
        return NextRound()

    async def send_due(self) -> int:
        """Send every due e-mail; answers how many went out."""
        sent = 0
        while True:
            due = await notifications.due(self._db, BATCH, CLAIM.total_seconds(), shared=self._clock.shared_time())
            if not due:
                return sent
            for note in due:
                try:
                    await self._transport.send(note)
                except Exception as exc:  # noqa: BLE001 - any failure to send is this e-mail's, retried later
                    # One e-mail that cannot be sent (a mail server's refusal, a header the
                    # library will not build) must not stop the others behind it.
                    delay = min(RETRY_MAX, RETRY_BASE * 2 ** note.attempts)
                    log.warning("outbox: e-mail %d to %s failed (attempt %d): %s; next try in %s", note.id,
                                note.to_address, note.attempts + 1, type(exc).__name__, delay)
                    await notifications.mark_failed(self._db, note.id, f"{type(exc).__name__}: {exc}"[:500],
                                                    delay.total_seconds(), shared=self._clock.shared_time())
                else:
                    await notifications.mark_sent(self._db, note.id, self._clock.now())
                    sent += 1
