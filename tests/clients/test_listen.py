"""`connectapi listen` / `python -m connectapi_client listen` (issue 45): a test record's
events forwarded to a local URL, signed with the listener's own secret, with nothing
registered at the service; a live key refused; every listener gets every event."""

from __future__ import annotations

import datetime
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from connectapi_client import Client, listen, models, verify_webhook

from .conftest import Live

ROOT = Path(__file__).parents[2]


@contextmanager
def listening(live: Live, key: str, path: str) -> Iterator[list[str]]:
    """A listener forwarding to the test receiver's `path`, in a thread, until the block ends;
    yields the lines it printed (once it printed Ready)."""
    lines: list[str] = []
    ready, done = threading.Event(), threading.Event()

    def say(line: str) -> None:
        lines.append(line)
        if line.startswith("Signing secret:"):
            ready.set()

    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(listen(
        api=live.url, key=key, forward_to=live.receiver.url + path, say=say, keep_on=lambda: not done.is_set())))
    thread.start()
    try:
        assert ready.wait(30) or status, f"never ready: {lines}"
        yield lines
    finally:
        done.set()
        thread.join(60)  # the listener's ask ends within its wait (25 s)
    assert status == [0], lines


def secret_of(lines: list[str]) -> str:
    return next(line.removeprefix("Signing secret: ") for line in lines if line.startswith("Signing secret: "))


def test_a_test_booking_reaches_every_listener_signed_with_its_own_secret(live: Live) -> None:
    keyed = live.keyed("test")
    client = Client(base_url=live.url, api_key=keyed.key)
    night = datetime.date.today() + datetime.timedelta(days=60)
    with listening(live, keyed.key, "/listen-a") as first, listening(live, keyed.key, "/listen-b") as second:
        assert first[0].startswith(f"Ready! Forwarding the test events of property {keyed.property['id']}")
        sent = client.test_helpers.ota_booking({
            "roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id, "checkIn": night.isoformat(),
            "checkOut": (night + datetime.timedelta(days=2)).isoformat(), "guest": {"name": "Marta"}})
        got = {path: live.receiver.wait_for(path, 1)[0] for path in ("/listen-a", "/listen-b")}
    for path, lines in (("/listen-a", first), ("/listen-b", second)):
        event = verify_webhook(got[path].raw, got[path].headers, secret_of(lines))
        assert event.type == "channel.booking.created" and isinstance(event.data.booking, models.WebhookBooking)
        # The helper's answer names the booking as the event does.
        assert (event.data.booking.reference, event.data.booking.channel.reservation_code) == (
            sent.reference, sent.reservation_code)
        assert any("channel.booking.created" in line and line.endswith("[204]") for line in lines), lines
    assert secret_of(first) != secret_of(second)
    # Nothing was registered at the service.
    assert live.admin.get(f"/properties/{keyed.property['id']}/webhooks").json()["data"] == []


def test_a_live_key_is_refused_by_the_service_command(live: Live) -> None:
    """`connectapi listen` with a live key: one line saying a test key is needed, status 2."""
    keyed = live.keyed("live")
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "connectapi"), "listen", "--api", live.url,
                           "--forward-to", "http://127.0.0.1:9/none"], env={"CONNECTAPI_API_KEY": keyed.key,
                                                                             "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "connectapi listen: a test key is needed (cak_test_…): this key is a live one, and only a test record's "
        "events are forwarded"]
    assert keyed.key not in done.stdout


def test_the_client_package_listens_from_the_command_line_too(live: Live) -> None:
    keyed = live.keyed("test")
    listener = subprocess.Popen([sys.executable, "-m", "connectapi_client", "listen", "--api", live.url,
                                 "--forward-to", live.receiver.url + "/listen-cli"],
                                env={"CONNECTAPI_API_KEY": keyed.key, "PATH": "/usr/bin:/bin"},
                                stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None
        ready = listener.stdout.readline()
        assert ready.startswith("Ready! Forwarding the test events"), ready
        secret = listener.stdout.readline().removeprefix("Signing secret: ").strip()
        night = datetime.date.today() + datetime.timedelta(days=70)
        Client(base_url=live.url, api_key=keyed.key).test_helpers.ota_booking({
            "roomTypeId": keyed.room_type_id, "ratePlanId": keyed.rate_plan_id, "checkIn": night.isoformat(),
            "checkOut": (night + datetime.timedelta(days=1)).isoformat(), "guest": {"name": "Ana"}})
        delivered = live.receiver.wait_for("/listen-cli", 1)[0]
        assert verify_webhook(delivered.raw, delivered.headers, secret).type == "channel.booking.created"
        assert "channel.booking.created" in listener.stdout.readline()
    finally:
        listener.terminate()
        listener.wait(30)


def test_what_would_fail_at_the_first_event_is_refused_before_ready() -> None:
    said: list[str] = []
    assert listen(api="http://127.0.0.1:9", key="cak_test_x", forward_to="ftp://localhost/hook",
                  say=said.append) == 2
    assert listen(api="http://127.0.0.1:9", key="cak_test_x", forward_to="http://localhost:8000/hook",
                  secret="whsec_not base64!", say=said.append) == 2
    assert len(said) == 2 and not any(line.startswith("Ready") for line in said), said
    assert "whsec_not" not in " ".join(said)  # a secret is never echoed
