"""The Reconciler's protocol: rounds on its own timer, and a check of one property on demand."""

from __future__ import annotations

from dataclasses import dataclass

from ...engine import Ask, Wake


@dataclass(frozen=True, slots=True)
class Checked:
    """Cells of each resource marked dirty again because the channel manager held them
    differently; `error` (and no counts) when its grid could not be read."""

    marked: dict[str, int]
    error: str | None = None
    retry_at: float | None = None  # the account's read budget is spent until then: not compared yet


@dataclass(frozen=True, slots=True)
class CheckProperty(Ask[Checked]):
    property_id: int


ReconcilerMessage = Wake | CheckProperty
