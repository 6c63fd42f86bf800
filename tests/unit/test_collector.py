"""The collector as a serving process sets it (docs/decisions/0121-the-collector-set-for-serving.md)."""

from __future__ import annotations

import gc

from connectapi.collector import YOUNG_THRESHOLD, tune_for_serving


def test_what_exists_is_frozen_and_young_collections_come_rarer() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    made = [object() for _ in range(10)], {"a": [1]}  # containers that exist before it is set

    tune_for_serving()

    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 0
    tracked = {id(o) for o in gc.get_objects()}  # every generation's, the frozen ones left out
    assert all(gc.is_tracked(c) and id(c) not in tracked for c in made)


def test_the_other_thresholds_are_left_as_they_are() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 7, 3)
    others = gc.get_threshold()[1:]  # as this interpreter reads them back
    tune_for_serving()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, *others)
    gc.set_threshold(*before)
