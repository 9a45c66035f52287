"""The time limit's firings: a swallowed limit fires again, but not inside torch's code, and
no firing raises in the middle of an import."""

from __future__ import annotations

import contextlib
import importlib
import sys
import time
from pathlib import Path

import pytest

from pytest_exportcheck.containment import stages
from pytest_exportcheck.containment.stages import StageTimeout, time_limit


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
    monkeypatch.setattr(stages, "MAX_DEFERRED_FIRINGS", 2)
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


def slow_module(where: Path, name: str, seconds: float) -> None:
    """A module whose body takes ``seconds``, then says it ran to its end."""
    (where / f"{name}.py").write_text(
        f"import time\ntime.sleep({seconds})\nimported_whole = True\n"
    )


def test_a_firing_inside_a_librarys_import_waits_for_the_import_to_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Raised in a library's body, the limit would leave it half-registered for every later
    # item of the process (an import that registers names in another module fails on the
    # next try): the firing waits, the import ends whole, and the block still times out.
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    monkeypatch.setattr(stages, "_library_roots", lambda: (f"{tmp_path}/",))
    slow_module(tmp_path, "slow_library", 0.5)
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "slow_library", raising=False)
    with pytest.raises(StageTimeout, match="over the limit"), time_limit(0.2, over):
        importlib.import_module("slow_library")
        busy(30)
    assert sys.modules["slow_library"].imported_whole


def test_a_model_file_that_hangs_in_its_import_is_stopped_there(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A case's own file is no library: its hang is the case's, stopped where it is.
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    # Waited for as a library's would be, it would end 10 s on (100 deferred ticks): far
    # from the 0.2 s limit, so a busy machine's stall cannot blur the two.
    monkeypatch.setattr(stages, "MAX_DEFERRED_FIRINGS", 100)
    slow_module(tmp_path, "hanging_model_file", 30)
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "hanging_model_file", raising=False)
    started = time.monotonic()
    with pytest.raises(StageTimeout, match="over the limit"), time_limit(0.2, over):
        importlib.import_module("hanging_model_file")
    assert time.monotonic() - started < 5
    assert "hanging_model_file" not in sys.modules


def test_an_import_that_never_ends_is_still_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    monkeypatch.setattr(stages, "MAX_DEFERRED_FIRINGS", 2)
    monkeypatch.setattr(stages, "_importing_a_library", lambda frame: True)
    started = time.monotonic()
    with pytest.raises(StageTimeout, match="over the limit"), time_limit(0.2, over):
        busy(30)
    assert time.monotonic() - started < 5


def test_a_firing_deferred_by_an_import_is_still_the_first_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing was swallowed yet: the tick after the import raises even inside torch's code
    # (waiting there is for refires only), so the block stops at once.
    monkeypatch.setattr(stages, "REFIRE_SECONDS", 0.1)
    # Deferred as a refire would be, it would stop 10 s on (100 ticks), not at once.
    monkeypatch.setattr(stages, "MAX_DEFERRED_FIRINGS", 100)
    importing = iter([True])
    monkeypatch.setattr(stages, "_importing_a_library", lambda frame: next(importing, False))
    monkeypatch.setattr(stages, "_inside_torch", lambda frame: True)
    started = time.monotonic()
    with pytest.raises(StageTimeout, match=r"over the limit$"), time_limit(0.2, over):
        busy(30)
    assert time.monotonic() - started < 5
