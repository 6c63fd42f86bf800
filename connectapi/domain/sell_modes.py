"""How a rate plan is sold (issue 44): per room, one price a night whatever the guests, or
per person, a price for each adult count from 1 to its room type's maxAdults. Fixed when
the plan is made (decision 0136): Channex's options are made with the plan, and the
prices the record holds are of one kind."""

from __future__ import annotations

from typing import Final, Literal

SellMode = Literal["per_room", "per_person"]  # as the record keeps it
ApiSellMode = Literal["perRoom", "perPerson"]  # as the API says it

PER_ROOM: Final = "per_room"
PER_PERSON: Final = "per_person"
API_NAMES: Final[dict[str, ApiSellMode]] = {"per_room": "perRoom", "per_person": "perPerson"}
RECORD_NAMES: Final[dict[str, SellMode]] = {"perRoom": "per_room", "perPerson": "per_person"}

# Channex holds a plan's occupancy options for 1 to 18 adults.
MOST_OCCUPANCIES: Final = 18

# The occupancy a per-room plan's one price is kept under in the record's rate cells.
ROOM_PRICE: Final = 0


def occupancies(sell_mode: str, max_adults: int) -> list[int]:
    """The adult counts a plan is priced for: 1 to maxAdults per person; maxAdults alone
    (Channex's one option, for the room's largest occupancy) per room."""
    return list(range(1, max_adults + 1)) if sell_mode == PER_PERSON else [max_adults]
