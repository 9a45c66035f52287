"""Where an item's time went, as user properties the end-of-run table reads.

An item's duration includes whatever it built first: the case's subject (the model
and its eager run) and the capture it checks are made by the first item that needs
them and reused by the rest. So the item that made one says so, with the seconds it
took, and ``reports/slowest.py`` subtracts them from that item's duration to get the
check's own time. Properties (not a side channel) because they reach the xdist
controller with the reports, as ``exportcheck_capture_seconds`` does.

``exportcheck_capture_seconds`` (on every item of a capture) is the capture record's
own time; ``exportcheck_captured`` (on the one item that made it) is what making it
cost that item, the session's bookkeeping included.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Seconds the item spent building subjects (the model, then its eager run).
BUILD_PROPERTY = "exportcheck_build_seconds"
# {capture path: seconds} the item spent making captures.
CAPTURED_PROPERTY = "exportcheck_captured"
# On the first item a process runs: its time includes the imports it was first to need
# (torch's export and Dynamo modules, the checks': seconds, not the check's own).
FIRST_PROPERTY = "exportcheck_first_in_process"
_first_taken = False


def mark_if_first(item: Any) -> None:
    """Mark ``item`` if it is the first this process runs."""
    global _first_taken
    if not _first_taken:
        _first_taken = True
        item.set_property(FIRST_PROPERTY, True)


@contextmanager
def spent_building(item: Any) -> Iterator[None]:
    """Add the block's seconds to ``item``'s build time, however the block ends."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - started
        item.set_property(BUILD_PROPERTY, round(_get(item, BUILD_PROPERTY, 0.0) + seconds, 4))


@contextmanager
def spent_capturing(item: Any, capture: str) -> Iterator[None]:
    """Add the block's seconds to ``item``'s time making the ``capture`` capture."""
    started = time.perf_counter()
    try:
        yield
    finally:
        made = dict(_get(item, CAPTURED_PROPERTY, {}))
        made[capture] = round(made.get(capture, 0.0) + time.perf_counter() - started, 4)
        item.set_property(CAPTURED_PROPERTY, made)


def _get(item: Any, name: str, default: Any) -> Any:
    return next((value for key, value in item.user_properties if key == name), default)
