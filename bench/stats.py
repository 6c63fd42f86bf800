"""Small statistics shared by the scenarios."""

from __future__ import annotations


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def thin(values: list[float], most: int = 5000) -> list[float]:
    """At most `most` of the values, evenly spread: enough for a distribution plot."""
    return values[:: max(1, len(values) // most)]
