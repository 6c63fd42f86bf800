"""make check's property tests draw a share of their examples; make test all of them."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from .. import examples as examples_module


def reloaded(monkeypatch: pytest.MonkeyPatch, share: str | None) -> ModuleType:
    if share is None:
        monkeypatch.delenv("CONNECTAPI_EXAMPLES", raising=False)
    else:
        monkeypatch.setenv("CONNECTAPI_EXAMPLES", share)
    return importlib.reload(examples_module)


def test_a_share_scales_each_count_and_never_below_the_fewest(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        fifth = reloaded(monkeypatch, "0.2")
        assert [fifth.examples(n) for n in (1500, 150, 40, 5)] == [300, 30, fifth.FEWEST, 5]
        whole = reloaded(monkeypatch, None)
        assert [whole.examples(n) for n in (1500, 150, 40, 5)] == [1500, 150, 40, 5]
    finally:
        monkeypatch.undo()
        importlib.reload(examples_module)


@pytest.mark.parametrize("share", ["0", "-0.5", "1.5", "a fifth"])
def test_a_share_outside_what_it_can_be_is_refused(monkeypatch: pytest.MonkeyPatch, share: str) -> None:
    try:
        with pytest.raises(ValueError):
            reloaded(monkeypatch, share)
    finally:
        monkeypatch.undo()
        importlib.reload(examples_module)
