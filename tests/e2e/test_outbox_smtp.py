"""The owner's e-mails over real SMTP (an aiosmtpd server), with retries when it is down."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from email import message_from_bytes
from email.message import Message
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiosmtpd.controller import Controller

from connectapi.actors.outbox import OutboxSender, SmtpTransport
from connectapi.domain.mail_settings import SmtpSettings
from connectapi.storage import notifications
from connectapi.storage.database import Database

from .test_serve_process import free_port


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


class SteppedClock:
    """A fake Clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return (self.at - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds()

    def today(self, zone: ZoneInfo) -> date:
        return self.at.astimezone(zone).date()

    def shared_time(self) -> float | None:
        return self.at.timestamp()


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
def running_server(inbox: Inbox, smtp_port: int) -> Iterator[Controller]:
    # A plain asyncio loop of its own: the policy trio-asyncio installs must not serve this thread.
    controller = Controller(inbox, loop=asyncio.SelectorEventLoop(), hostname="127.0.0.1", port=smtp_port)
    yield controller
    try:
        controller.stop()
    except AssertionError:
        pass  # never started


async def enqueue(db: Database, clock: SteppedClock) -> None:
    property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                    "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")

    async def work(conn: Any) -> None:
        await notifications.enqueue(conn, property_id, None, "booking.created", "owner@casa-azul.example",
                                    "New booking PMS-1-000001", "A booking came in.", clock.now())

    await db.transaction(work)


async def test_owner_mail_goes_out_over_smtp_and_waits_while_the_server_is_down(
        db: Database, running_server: Controller, inbox: Inbox, smtp_port: int) -> None:
    clock = SteppedClock()
    sender = OutboxSender(db, clock, SmtpTransport(SmtpSettings.from_url(
        f"smtp://127.0.0.1:{smtp_port}", "connectapi@casa-azul.example"), timeout=5))
    await enqueue(db, clock)

    # The server is not up yet: the e-mail stays in the outbox with a retry time.
    assert await sender.send_due() == 0
    row = await db.fetchrow("SELECT sent_at, attempts, last_error, next_attempt_at FROM notifications")
    assert row is not None
    assert row["sent_at"] is None and row["attempts"] == 1 and row["last_error"]
    assert row["next_attempt_at"] == clock.now() + timedelta(minutes=1)

    running_server.start()
    assert await sender.send_due() == 0  # not due before its retry time
    clock.at += timedelta(minutes=1)
    assert await sender.send_due() == 1
    assert [(m["To"], m["From"], m["Subject"]) for m in inbox.messages] == [
        ("owner@casa-azul.example", "connectapi@casa-azul.example", "New booking PMS-1-000001")]
    assert await db.fetchval("SELECT sent_at FROM notifications") == clock.now()
    assert await sender.send_due() == 0  # sent once


def test_smtp_urls() -> None:
    plain = SmtpSettings.from_url("smtp://mail.example:2525", "a@b.example")
    assert (plain.host, plain.port, plain.tls, plain.user) == ("mail.example", 2525, "none", None)
    secure = SmtpSettings.from_url("smtps://user%40x:p%3Ass@mail.example", "a@b.example")
    assert (secure.port, secure.tls, secure.user, secure.password) == (465, "ssl", "user@x", "p:ss")
    assert "p:ss" not in repr(secure)
    assert SmtpSettings.from_url("smtp://mail.example?starttls=1", "a@b.example").port == 587
    with pytest.raises(ValueError):
        SmtpSettings.from_url("http://mail.example", "a@b.example")


async def test_subjects_with_what_breaks_a_header_still_go_out_cleaned(
        db: Database, running_server: Controller, inbox: Inbox, smtp_port: int) -> None:
    """A CR/LF, U+2028 or U+0085 in a subject (a channel name or reservation code from the
    channel manager, a name stored before the rules) made the message fail to build; each
    goes out on one line, and the e-mail behind it too."""
    clock = SteppedClock()
    sender = OutboxSender(db, clock, SmtpTransport(SmtpSettings.from_url(
        f"smtp://127.0.0.1:{smtp_port}", "connectapi@casa-azul.example"), timeout=5))
    property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                    "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
    subjects = ["OTA booking BookingCom\r\nBcc: thief@example.com", "Refused\u2028revision", "Over\x85booked",
                "New booking PMS-1-000002"]

    async def work(conn: Any) -> None:
        for subject in subjects:
            await notifications.enqueue(conn, property_id, None, "booking.created", "owner@casa-azul.example",
                                        subject, "A booking came in.", clock.now())

    await db.transaction(work)
    running_server.start()
    assert await sender.send_due() == 4
    assert [m["Subject"] for m in inbox.messages] == [
        "OTA booking BookingCom Bcc: thief@example.com", "Refused revision", "Over booked", "New booking PMS-1-000002"]
    assert all(m["Bcc"] is None for m in inbox.messages)
