"""The time limit's refires: a swallowed limit fires again, but not inside torch's code."""

from __future__ import annotations

import contextlib
import time

import pytest

from pytest_exportcheck import stages
from pytest_exportcheck.stages import StageTimeout, time_limit


def busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def over(stage: str) -> str:
    return "over the limit"


def swallow_first_then(then: float) -> None:
    """The model that swallows the limit once, then keeps computing for ``then`` s."""
    with contextlib.suppress(StageTimeout):
        busy(5)
    busy(then)


def test_a_refire_inside_torch_waits_and_the_item_still_times_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    monkeypatch.setattr(stages, "_inside_torch", lambda frame: True)
    # Refires during the 0.6 s after the first firing land "inside torch": none raises
    # there, and the block still fails as a timeout when it ends.
    went_on = r"caught the time limit's exception 1 time\(s\) and went on"
    with pytest.raises(StageTimeout, match=went_on), time_limit(0.2, over):
        swallow_first_then(0.6)


def test_a_refire_deferred_too_often_raises_wherever_it_lands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    monkeypatch.setattr(stages, "MAX_DEFERRED_REFIRES", 2)
    monkeypatch.setattr(stages, "_inside_torch", lambda frame: True)
    started = time.monotonic()
    took = r"caught the time limit's exception 1 time\(s\) before"
    with pytest.raises(StageTimeout, match=took), time_limit(0.2, over):
        swallow_first_then(30)
    assert time.monotonic() - started < 5  # stopped, not run to its end


def test_a_refire_in_the_models_own_code_raises_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    started = time.monotonic()
    with pytest.raises(StageTimeout, match="before it took"), time_limit(0.2, over):
        swallow_first_then(30)
    assert time.monotonic() - started < 5
