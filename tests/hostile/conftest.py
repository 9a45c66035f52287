"""A project with the hostile models beside a good one (``hostile_models.py``)."""

from __future__ import annotations

from pathlib import Path

import childkit
import pytest
from hostilekit import start_probe

HOSTILE_MODELS = Path(__file__).with_name("hostile_models.py")


@pytest.fixture(autouse=True)
def _warm_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs here start warm (``tests/warmstart.py``): forked from an
    interpreter that imported torch, they still run, fork, crash and end as a user's do,
    their exit status and signals passed on whole. ``test_supervised_run.py``, whose
    subject is the supervisor's own process (who signals it, who its parent is), starts
    its runs as a user does."""
    monkeypatch.setattr(childkit, "warm_by_default", True)


@pytest.fixture
def hostile(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("cases")
    (pytester.path / "cases" / "hostile.py").write_text(HOSTILE_MODELS.read_text())
    return pytester


@pytest.fixture(params=["forked", "fresh interpreter"])
def one_process(request: pytest.FixtureRequest, hostile: pytest.Pytester) -> tuple[str, ...]:
    """The options of a supervised one-process run of ``hostile``, once with the session
    forked (pytest's process has one thread when it starts the session) and once a
    fresh interpreter (a plugin on the command line started a second)."""
    return start_probe(hostile, threaded=request.param == "fresh interpreter")
