"""The texts of the e-mails the service sends: subjects and plain-text bodies, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True, slots=True)
class Email:
    kind: str  # what the admin notifications route lists
    subject: str
    body: str


@dataclass(frozen=True, slots=True)
class BookingFacts:
    property_name: str
    reference: str
    external_reference: str | None
    check_in: date
    check_out: date
    rooms: int
    guest_name: str
    total: str  # formatted amount
    currency: str


def _stay(f: BookingFacts) -> str:
    nights = (f.check_out - f.check_in).days
    return (f"{f.check_in.isoformat()} to {f.check_out.isoformat()} ({nights} night{'s' if nights != 1 else ''}, "
            f"{f.rooms} room{'s' if f.rooms != 1 else ''})")


def owner_booking_created(f: BookingFacts) -> Email:
    return Email("booking.created", f"New booking {f.reference} for {f.property_name}",
                 f"A booking came in through the Connect API.\n\n"
                 f"Reference: {f.reference}\nTheir reference: {f.external_reference or '-'}\n"
                 f"Guest: {f.guest_name}\nStay: {_stay(f)}\nTotal: {f.total} {f.currency}\n")


def owner_booking_cancelled(f: BookingFacts, reason: str | None) -> Email:
    return Email("booking.cancelled", f"Booking {f.reference} cancelled at {f.property_name}",
                 f"A booking was cancelled through the Connect API; its nights are open again.\n\n"
                 f"Reference: {f.reference}\nTheir reference: {f.external_reference or '-'}\n"
                 f"Guest: {f.guest_name}\nStay: {_stay(f)}\nReason: {reason or '-'}\n")


def owner_booking_modified(before: BookingFacts, after: BookingFacts, changed: list[str]) -> Email:
    return Email("booking.modified", f"Booking {after.reference} changed at {after.property_name}",
                 f"A booking was changed through the Connect API ({', '.join(changed)}).\n\n"
                 f"Reference: {after.reference}\nTheir reference: {after.external_reference or '-'}\n"
                 f"Guest: {after.guest_name}\nStay: {_stay(after)}\nTotal: {after.total} {after.currency}\n\n"
                 f"Before: {before.guest_name}, {_stay(before)}, total {before.total} {before.currency}\n")


def guest_confirmation(f: BookingFacts) -> Email:
    return Email("guest.confirmation", f"Your booking at {f.property_name}: {f.reference}",
                 f"Dear {f.guest_name},\n\nyour booking at {f.property_name} is confirmed.\n\n"
                 f"Reference: {f.reference}\nStay: {_stay(f)}\nTotal: {f.total} {f.currency}\n")


def owner_endpoint_paused(property_name: str, url: str) -> Email:
    return Email("webhook.paused", f"Webhooks to {url} are paused ({property_name})",
                 f"Deliveries to {url} have failed for a day, so the endpoint is paused.\n\n"
                 f"Events keep queueing and are sent, in order, once you resume it in the admin interface.\n")


def owner_ota_unapplied(property_name: str, reservation_code: str, channel: str, why: str) -> Email:
    """An OTA revision the service kept but could not apply: the owner must act on it."""
    return Email("ota.unapplied", f"OTA booking {reservation_code} needs you ({property_name})",
                 f"A booking revision from {channel} (reservation {reservation_code}) reached the service but "
                 f"could not be applied: {why}.\n\n"
                 f"It is kept and listed among the property's OTA revisions in the admin interface. "
                 f"Check the booking with {channel} and in the PMS.\n")


def owner_ota_amounts(property_name: str, reservation_code: str, channel: str, reference: str,
                      disagreements: list[str]) -> Email:
    """An OTA booking whose amounts do not add up: told as the OTA sent them, never mended."""
    said = "".join(f"- {one}\n" for one in disagreements)
    return Email("ota.amounts", f"OTA booking {reservation_code}: its amounts do not add up ({property_name})",
                 f"{channel} sent reservation {reservation_code} (PMS {reference}) with amounts that do not add "
                 f"up:\n{said}\nThe booking is in the PMS and its webhook carries the amounts as {channel} sent "
                 f"them. Check them with {channel} before you charge the guest.\n")


def owner_ota_overbooked(property_name: str, reservation_code: str, channel: str, reference: str,
                         nights: list[str]) -> Email:
    return Email("ota.overbooked", f"Overbooking: {channel} sold {reservation_code} with no room left "
                                   f"({property_name})",
                 f"{channel} sold reservation {reservation_code} (PMS {reference}) on nights that had no room left: "
                 f"{', '.join(nights)}.\n\nThe booking is in the PMS; find the guest a room or agree a change "
                 f"with {channel}.\n")


def owner_channel_refused(property_name: str, cells: int, example: str) -> Email:
    """Values the channel manager refused (once per property and day): they have not
    reached the channels, and the service keeps offering them."""
    return Email("channel.refused", f"The channel manager refused {cells} value(s) ({property_name})",
                 f"The channel manager refused {cells} of the property's values, so the channels do not show them. "
                 f"It said: {example}\n\n"
                 f"The service offers them again, less and less often, and sends them as soon as they are "
                 f"taken; the console's channel page lists them. A rate plan or room type closed or unmapped "
                 f"on the channel manager is the usual cause.\n")


def owner_setup(name: str, link: str, valid_hours: int, reset: bool) -> Email:
    """The link an owner chooses a password at (a first one, or a new one after a reset)."""
    what = "choose a new password" if reset else "choose your password and open the console"
    return Email("owner.setup", "Your connectapi console" + (": password reset" if reset else " access"),
                 f"Hello {name},\n\nFollow this link to {what}:\n\n{link}\n\n"
                 f"It works once, for {valid_hours} hours. If you did not expect this e-mail, ignore it.\n")
