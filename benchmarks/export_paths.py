"""Keep only the export paths' items: what the floor (``floor.py``) does by hand.

The floor writes out the work of the ``export`` and ``export-strict`` captures
and of the checks signature, hierarchy, mutation and parity; it has no
hand-written counterpart (yet) for the Dynamo and AOT capture paths or for the
``consistency``, ``shapes``, ``recorded`` and ``moved`` items. The benchmark
therefore compares like with like: ``PYTHONPATH=benchmarks pytest -p
export_paths --exportcheck ...`` deselects every other item (reported as
deselected, as ``-k`` would).
"""

from __future__ import annotations

import pytest

EXPORT_PATHS = ("export", "export-strict")
# The checks the floor writes out (floor.CHECKS); shapes, recorded, moved and
# consistency have no counterpart there, and the floor skips a case with none of these.
FLOOR_CHECKS = ("signature", "hierarchy", "mutation", "parity")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        capture = getattr(item, "capture", None)
        on_floor = capture in EXPORT_PATHS and getattr(item, "check", "") in FLOOR_CHECKS
        (kept if on_floor or capture is None else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
