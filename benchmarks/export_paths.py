"""Keep only the export paths' items: what the floor (``floor.py``) does by hand.

The floor writes out the work of the ``export`` and ``export-strict`` captures
and of the checks they run; it has no hand-written counterpart (yet) for the
Dynamo and AOT capture paths or for the ``consistency`` item. The benchmark
therefore compares like with like: ``PYTHONPATH=benchmarks pytest -p
export_paths --exportcheck ...`` deselects every other item (reported as
deselected, as ``-k`` would).
"""

from __future__ import annotations

import pytest

EXPORT_PATHS = ("export", "export-strict")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        capture = getattr(item, "capture", None)
        on_export_path = capture in EXPORT_PATHS and getattr(item, "check", "") != "consistency"
        (kept if on_export_path or capture is None else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
