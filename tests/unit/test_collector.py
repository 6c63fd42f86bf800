"""The collector as a serving process sets it (docs/decisions/0121-the-collector-set-for-serving.md)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from connectapi.collector import tune_for_serving

# Container objects made in a row: several young collections' worth at the interpreter's
# default first threshold (700), fewer than one at the serving process's.
CONTAINERS = 5_000


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    """The session's collector (tests/conftest.py tunes it) as it was, whatever the test does:
    its thresholds, and frozen or not."""
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count() > 0
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if frozen:
            gc.freeze()
        else:
            gc.unfreeze()


def young_collections_while_making(count: int) -> int:
    """How many collections (of any generation: each starts as a young one's turn) run while
    `count` containers are made and kept."""
    before = sum(generation["collections"] for generation in gc.get_stats())
    kept: list[list[object]] = [[] for _ in range(count)]
    after = sum(generation["collections"] for generation in gc.get_stats())
    assert len(kept) == count
    return int(after - before)


def test_what_exists_is_frozen_and_young_collections_come_rarer() -> None:
    assert gc.isenabled()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    made = [object() for _ in range(10)], {"a": [1]}  # containers that exist before it is set
    gc.collect()
    assert young_collections_while_making(CONTAINERS) >= CONTAINERS // 700 - 1  # the default's pace

    tune_for_serving()

    assert gc.get_freeze_count() > 0
    tracked = {id(o) for o in gc.get_objects()}  # every generation's, the frozen ones left out
    assert all(gc.is_tracked(c) and id(c) not in tracked for c in made)
    assert young_collections_while_making(CONTAINERS) == 0


def test_the_other_thresholds_are_left_as_they_are() -> None:
    gc.set_threshold(700, 7, 3)
    others = gc.get_threshold()[1:]  # as this interpreter reads them back
    tune_for_serving()
    assert gc.get_threshold()[1:] == others
