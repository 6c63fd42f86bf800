"""The `RateLimit` and `RateLimit-Policy` headers (IETF RateLimit draft, structured fields):
what the service says of its budgets on every answer, errors included."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# One member of a structured-field list: a token or a quoted string, then `;key=value` params.
_MEMBER = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z*][A-Za-z0-9_\-.:%*/]*))((?:\s*;\s*[a-z*][a-z0-9_\-.*]*'
                     r'(?:=(?:"(?:[^"\\]|\\.)*"|[^;,\s]+))?)*)\s*(?:,|$)')
_PARAM = re.compile(r';\s*([a-z*][a-z0-9_\-.*]*)(?:=("(?:[^"\\]|\\.)*"|[^;,\s]+))?')


def _members(value: str) -> dict[str, dict[str, str]]:
    """`"requests";r=116;t=60, "writes";r=28;t=60` as {name: {param: value}}; what cannot be
    read is left out (the headers are advice, never a reason to fail a call)."""
    found: dict[str, dict[str, str]] = {}
    position = 0
    while position < len(value):
        match = _MEMBER.match(value, position)
        if match is None or match.end() == position:
            break
        name = match.group(1) if match.group(1) is not None else match.group(2)
        found[name] = {p.group(1): (p.group(2) or "?1").strip('"') for p in _PARAM.finditer(match.group(3))}
        position = match.end()
    return found


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Budget:
    """One budget: `quota` requests per `window` seconds (RateLimit-Policy), `remaining`
    and `reset` seconds (RateLimit), each None when the answer did not say it."""

    name: str
    quota: int | None = None
    window: int | None = None
    remaining: int | None = None
    reset: int | None = None


@dataclass(frozen=True)
class RateLimit:
    """The budgets one answer told of. `remaining` and `reset` are the nearest to running out."""

    budgets: dict[str, Budget] = field(default_factory=dict)

    @property
    def remaining(self) -> int | None:
        known = [b.remaining for b in self.budgets.values() if b.remaining is not None]
        return min(known) if known else None

    @property
    def reset(self) -> int | None:
        """Seconds until the budget nearest to running out refills."""
        nearest = [b for b in self.budgets.values() if b.remaining is not None]
        if not nearest:
            return None
        return min(nearest, key=lambda b: (b.remaining, -(b.reset or 0))).reset

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimit:
        lowered = {k.lower(): v for k, v in headers.items()}
        policies = _members(lowered.get("ratelimit-policy", ""))
        states = _members(lowered.get("ratelimit", ""))
        budgets = {}
        for name in [*policies, *(n for n in states if n not in policies)]:
            policy, state = policies.get(name, {}), states.get(name, {})
            budgets[name] = Budget(name, _int(policy.get("q")), _int(policy.get("w")), _int(state.get("r")),
                                   _int(state.get("t")))
        return cls(budgets)
