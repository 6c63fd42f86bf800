"""A booking revision from the channel manager, checked as any input is (issue 41).

Channex relays what each OTA sends, and an account's feed can carry anything: one revision
with a 1,000-year stay once held its property's lock for minutes and wrote hundreds of
megabytes. So a revision is bounded twice (docs/decisions/0126-the-feed-is-input.md):

- **Before it is kept** (`bounded`): what the record keeps for review has every string cut
  at TEXT_KEPT characters, every list and object at MEMBERS_KEPT members, and the whole at
  BYTES_KEPT; each cut is recorded with the revision (`Cut`). A list or object cut, a number
  written as a string cut (its value changed: "000…0240.00" would read 0), or a revision
  kept only in outline, can no longer say what the OTA sold: it is refused.
- **Before anything is locked or written** (`screen`): the stay, the rooms and the amounts
  must be ones the property can hold. A refusal names the reason; the revision is kept as
  `refused`, the owner told, and it is acknowledged.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from typing_extensions import TypedDict

from .ari_write import HORIZON_DAYS
from .bookings import MAX_NIGHTS

TEXT_KEPT = 4000  # characters of a string (a guest's requests are the longest we expect)
# A string an amount, a count or a date could be read from (digits of any script, as
# Decimal and int read them), with a digit in it: its tail is its value. One character
# class and a search, each linear: a pattern with the class on both sides of a digit
# backtracked quadratically (a hostile feed's 40,000 digits and a letter took 22 s).
_NUMBER_CHARS = re.compile(r"[\s\d+\-.,:eE_]*")
_DIGIT = re.compile(r"\d")
MEMBERS_KEPT = 400  # items of a list, members of an object (a stay's `days` is at most 90)
BYTES_KEPT = 256 * 1024  # the whole revision as JSON, once its parts are bounded
CUTS_LISTED = 20  # cuts recorded with a revision; more are counted in the last
# What a revision too large to keep whole is kept by: what names it, bounded.
OUTLINE = ("id", "booking_id", "revision_id", "system_id", "property_id", "unique_id", "ota_reservation_code",
           "ota_name", "status", "arrival_date", "departure_date", "amount", "currency", "inserted_at")
OUTLINE_TEXT = 200
# The stay a property can hold: an arrival from a year back (a late cancellation of a
# past stay) to a month past the horizon (an OTA's horizon may run a little past ours),
# and the contract's own longest booking.
ARRIVAL_BACK = timedelta(days=365)
ARRIVAL_AHEAD = timedelta(days=HORIZON_DAYS + 30)
MAX_OTA_NIGHTS = MAX_NIGHTS
MAX_OTA_ROOMS = 100
MAX_GUESTS_A_ROOM = 100  # adults, or children, in one room: more is no booking
# An amount in major units: below the contract's own bound (ten integer digits).
AMOUNT_BOUND = Decimal(10) ** 10


class StoredCut(TypedDict):
    """A Cut as the record keeps it with its revision (ota_revisions.cut, a list of these)."""

    path: str
    size: int
    unit: str


@dataclass(frozen=True, slots=True)
class Cut:
    """A part of a revision cut before it was kept: where, how large it was, and in what."""

    path: str
    size: int
    unit: str  # characters, digits (of a number written as a string), items, members, or bytes (the whole)

    @property
    def structural(self) -> bool:
        """Whether what the OTA sold may be lost with it: anything but a text's tail."""
        return self.unit != "characters"

    def said(self) -> str:
        return f"{self.path or 'the revision'} ({self.size:,} {self.unit})"

    def as_json(self) -> StoredCut:
        return {"path": self.path, "size": self.size, "unit": self.unit}

    @classmethod
    def from_json(cls, value: StoredCut) -> Cut:
        return cls(str(value["path"]), int(value["size"]), str(value["unit"]))


def bounded(revision: dict[str, Any]) -> tuple[dict[str, Any], tuple[Cut, ...]]:
    """The revision as the record may keep it, and what was cut to make it so."""
    cuts: list[Cut] = []
    kept = _bound(revision, "", cuts)
    assert isinstance(kept, dict)
    size = stored_size(kept)
    if size > BYTES_KEPT:
        # Still too large (many parts each under their bound): only what a person recognises
        # it by, each bounded.
        kept = {name: value[:OUTLINE_TEXT] if isinstance(value, str) else value
                for name, value in kept.items() if name in OUTLINE and not isinstance(value, (dict, list))}
        cuts.append(Cut("", size, "bytes"))
    if len(cuts) > CUTS_LISTED:
        # The cuts that lose what was sold first (sorted stably), so that the last entry,
        # standing for the rest, is structural whenever any of the rest is.
        cuts.sort(key=lambda cut: not cut.structural)
        rest = cuts[CUTS_LISTED - 1:]
        cuts = [*cuts[:CUTS_LISTED - 1], Cut(f"{len(rest)} more parts", sum(c.size for c in rest), rest[0].unit)]
    return kept, tuple(cuts)


def stored_size(revision: dict[str, object]) -> int:
    """Bytes of the revision as the record keeps it (JSON text, non-ASCII escaped)."""
    return len(json.dumps(revision))


def _bound(value: Any, path: str, cuts: list[Cut]) -> Any:
    if isinstance(value, str):
        if len(value) > TEXT_KEPT:
            # The guest's own fields are read as contact details or dropped, never as an amount.
            number = not path.startswith("customer.") and _NUMBER_CHARS.fullmatch(value) and _DIGIT.search(value)
            cuts.append(Cut(path, len(value), "digits" if number else "characters"))
            return value[:TEXT_KEPT]
        return value
    if isinstance(value, dict):
        if len(value) > MEMBERS_KEPT:
            cuts.append(Cut(path, len(value), "members"))
        return {key[:TEXT_KEPT]: _bound(inner, _joined(path, key), cuts)
                for key, inner in list(value.items())[:MEMBERS_KEPT]}
    if isinstance(value, list):
        if len(value) > MEMBERS_KEPT:
            cuts.append(Cut(path, len(value), "items"))
        return [_bound(inner, f"{path}[{i}]", cuts) for i, inner in enumerate(value[:MEMBERS_KEPT])]
    return value


def _joined(path: str, key: str) -> str:
    # A path is shown to the owner and the operator: the feed's key names, bounded and printable.
    name = "".join(c if c.isprintable() else "?" for c in key[:40]) + ("…" if len(key) > 40 else "")
    return f"{path}.{name}" if path else name


@dataclass(frozen=True, slots=True)
class StayFacts:
    """What a revision is screened against: the property's today and, by the channel
    manager's room type id, how many rooms the property has of each it maps."""

    today: date
    rooms_by_cm_room_type: dict[str, int]


def lost_in_keeping(cuts: tuple[Cut, ...]) -> str | None:
    """Why a revision kept only in part cannot be applied (what it sold may be in the part
    cut), or None: checked before it is even read."""
    lost = [cut for cut in cuts if cut.structural]
    if lost:
        return f"it was too large to keep whole: {', '.join(cut.said() for cut in lost[:3])}"
    return None


def screen(arrival: date, departure: date, rooms: list[tuple[str | None, int, int]], amounts: list[Decimal],
           facts: StayFacts) -> str | None:
    """Why the property cannot take this revision, or None. `rooms` are (channel manager's
    room type id, adults, children), `amounts` the total and each room's."""
    return _stay(arrival, departure, facts.today) or _rooms(rooms, facts) or _amounts(amounts)


def _stay(arrival: date, departure: date, today: date) -> str | None:
    if arrival < today - ARRIVAL_BACK:
        return f"its arrival {arrival.isoformat()} is more than a year ago"
    if arrival > today + ARRIVAL_AHEAD:
        return f"its arrival {arrival.isoformat()} is past the horizon ({(today + ARRIVAL_AHEAD).isoformat()})"
    nights = (departure - arrival).days
    if nights > MAX_OTA_NIGHTS:
        return f"its stay of {nights:,} nights is longer than {MAX_OTA_NIGHTS}"
    return None


def _rooms(rooms: list[tuple[str | None, int, int]], facts: StayFacts) -> str | None:
    if len(rooms) > MAX_OTA_ROOMS:
        return f"it sells {len(rooms):,} rooms, more than {MAX_OTA_ROOMS} in one booking"
    for _, adults, children in rooms:
        if not (0 <= adults <= MAX_GUESTS_A_ROOM and 0 <= children <= MAX_GUESTS_A_ROOM):
            return f"a room of {_said(adults)} adults and {_said(children)} children"
    sold = Counter(room_type for room_type, _, _ in rooms if room_type is not None)
    for room_type, count in sorted(sold.items()):
        has = facts.rooms_by_cm_room_type.get(room_type)
        if has is not None and count > has:
            return f"it sells {count} rooms of a room type the property has {has} of"
    return None


def _said(count: int) -> str:
    """A count from the feed as a note shows it: bounded (it may have thousands of digits)."""
    return f"{count:,}" if abs(count) < 10**9 else ("more than" if count > 0 else "less than") + " a billion"


def _amounts(amounts: list[Decimal]) -> str | None:
    for amount in amounts:
        if not amount.is_finite():
            return "an amount that is not a number"
        if amount < 0:
            return f"a negative amount ({amount if amount > -AMOUNT_BOUND else 'ten or more integer digits'})"
        if amount >= AMOUNT_BOUND:
            return "an amount of ten or more integer digits"
    return None
