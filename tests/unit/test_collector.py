"""The collector as a serving process sets it (docs/decisions/0121-the-collector-set-for-serving.md)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from connectapi.collector import YOUNG_THRESHOLD, tune_for_serving


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    """Each test changes the process's collector: it is put back whatever happens."""
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count() > 0
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if frozen:
            gc.freeze()


def test_what_exists_is_frozen_and_young_collections_come_rarer() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    assert gc.get_freeze_count() == 0 and gc.get_threshold()[0] != YOUNG_THRESHOLD  # the call changes both
    made = [object() for _ in range(10)], {"a": [1]}  # containers that exist before it is set

    tune_for_serving()

    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 0
    tracked = {id(o) for o in gc.get_objects()}  # every generation's, the frozen ones left out
    assert all(gc.is_tracked(c) and id(c) not in tracked for c in made)


def test_the_other_thresholds_are_left_as_they_are() -> None:
    gc.set_threshold(700, 7, 3)
    others = gc.get_threshold()[1:]  # as this interpreter reads them back
    tune_for_serving()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, *others)
