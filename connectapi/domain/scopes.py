"""Key scopes and what each route needs."""

from __future__ import annotations

ARI_READ = "ari:read"
ARI_WRITE = "ari:write"
BOOKINGS_READ = "bookings:read"
BOOKINGS_WRITE = "bookings:write"
BOOKINGS_PAYMENTS = "bookings:payments"

ALL_SCOPES: tuple[str, ...] = (ARI_READ, ARI_WRITE, BOOKINGS_READ, BOOKINGS_WRITE, BOOKINGS_PAYMENTS)
# Keys minted before the scoped-keys release hold exactly these.
LEGACY_SCOPES: tuple[str, ...] = (ARI_READ, ARI_WRITE)


def scope_problems(scopes: list[str]) -> list[str]:
    """Why a set of scopes cannot be granted, as messages; empty when it can."""
    problems = []
    unknown = [s for s in scopes if s not in ALL_SCOPES]
    if unknown:
        problems.append(f"unknown scopes {unknown}; allowed: {list(ALL_SCOPES)}")
    if len(set(scopes)) != len(scopes):
        problems.append("scopes repeat")
    if BOOKINGS_PAYMENTS in scopes and BOOKINGS_WRITE not in scopes:
        problems.append("bookings:payments needs bookings:write")
    return problems


def canonical(scopes: list[str]) -> list[str]:
    """Scopes in the one order we store and echo them."""
    return [s for s in ALL_SCOPES if s in scopes]
