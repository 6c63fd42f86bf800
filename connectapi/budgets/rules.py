"""The spec's rate budgets: their names, sizes and windows, and which requests each counts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

MINUTE = 60.0
MOST = 2**31 - 1  # the record counts limits as 32-bit integers
DAY = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Budget:
    name: str  # the `data.scope` of a 429 and the policy name in RateLimit headers
    limit: int
    window: float


# The Limits table of the spec, in the order the gates check them.
DEFAULT_LIMITS: dict[str, tuple[int, float]] = {
    "ip": (240, MINUTE),
    "global": (3000, MINUTE),
    "ip-auth": (20, MINUTE),
    "requests": (120, MINUTE),
    "writes": (30, MINUTE),
    "property": (300, MINUTE),
    "property-writes": (60, MINUTE),
    "cells": (20000, MINUTE),
    "bookings": (20, MINUTE),
    "property-bookings": (40, MINUTE),
    "property-bookings-day": (500, DAY),
}


class RequestKind(Enum):
    """What a route does, for the budgets it is charged to."""

    READ = "read"
    WRITE = "write"  # PUT of ARI
    BOOKING_CREATE = "booking-create"
    BOOKING_OTHER = "booking-other"  # cancel: a request, not a new booking


# Budgets kept per key, then per property, charged at the gates by request kind. Cells are
# charged by amount later; the three booking budgets later too (BOOKING_*_BUDGETS), after
# the repeat check, because a repeated externalReference charges nothing.
KEY_BUDGETS: dict[RequestKind, tuple[str, ...]] = {
    RequestKind.READ: ("requests",),
    RequestKind.WRITE: ("requests", "writes"),
    RequestKind.BOOKING_CREATE: ("requests",),
    RequestKind.BOOKING_OTHER: ("requests",),
}
PROPERTY_BUDGETS: dict[RequestKind, tuple[str, ...]] = {
    RequestKind.READ: ("property",),
    RequestKind.WRITE: ("property", "property-writes"),
    RequestKind.BOOKING_CREATE: ("property",),
    RequestKind.BOOKING_OTHER: ("property",),
}
BOOKING_KEY_BUDGETS: tuple[str, ...] = ("bookings",)
BOOKING_PROPERTY_BUDGETS: tuple[str, ...] = ("property-bookings", "property-bookings-day")
# A change of a booking (PATCH) sells and gives back nights as a new booking does, and its
# nights reach the channels the same way: it pays the two per-minute booking budgets. It
# makes no new booking, so the owner's daily count of them is left alone.
BOOKING_CHANGE_KEY_BUDGETS: tuple[str, ...] = ("bookings",)
BOOKING_CHANGE_PROPERTY_BUDGETS: tuple[str, ...] = ("property-bookings",)


@dataclass(frozen=True, slots=True)
class Budgets:
    """Budget sizes in force: the spec's defaults, with overrides from configuration."""

    limits: Mapping[str, tuple[int, float]]

    @classmethod
    def from_overrides(cls, text: str | None, minute: float | None = None) -> Budgets:
        """`requests=1000,global=100000` -> the defaults with those two replaced.

        `minute` replaces the 60-second window of the minute budgets: for tests over real
        processes only, which have no mock clock to move (the contract's window is 60 s).

        Raises ValueError for an unknown name or a value that is not a non-negative integer,
        so a typo in configuration stops the service instead of silently doing nothing.
        """
        if minute is not None and not minute > 0:
            raise ValueError("a window must be positive")
        limits = {name: (size, minute if minute is not None and window == MINUTE else window)
                  for name, (size, window) in DEFAULT_LIMITS.items()}
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or name not in limits:
                raise ValueError(f"unknown budget override {item!r}; budgets: {sorted(limits)}")
            try:
                size = int(value)
            except ValueError:
                raise ValueError(f"budget {name} needs an integer, got {value!r}") from None
            if size < 0:
                raise ValueError(f"budget {name} cannot be negative")
            if size > MOST:
                raise ValueError(f"budget {name} cannot be above {MOST}")
            limits[name] = (size, limits[name][1])
        return cls(limits)

    def get(self, name: str) -> Budget:
        limit, window = self.limits[name]
        return Budget(name, limit, window)
