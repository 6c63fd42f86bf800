"""What every actor protocol builds on: asks that name their reply type, and the wake-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R", covariant=True)


class Ask(Generic[R]):
    """Base of a message that is answered with an `R`: `Mailbox.ask` returns it typed.

    Messages that are only told (no reply) do not derive from it.
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Wake:
    """Something may be waiting: run a round soon. One queued wake is as good as many."""
