"""A project with the hostile models beside a good one (``hostile_models.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

HOSTILE_MODELS = Path(__file__).with_name("hostile_models.py")


@pytest.fixture
def hostile(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("cases")
    (pytester.path / "cases" / "hostile.py").write_text(HOSTILE_MODELS.read_text())
    return pytester
