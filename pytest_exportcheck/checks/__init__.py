"""The checks: each is ``check(case, record) -> findings`` (an empty list means it passed).

To add a check: write ``checks/<name>.py`` with one such function, register it
in ``CHECKS``, add its name to ``checkName`` in ``case.schema.json`` and to
``ALL_CHECKS`` in ``spec/case.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from pytest_exportcheck.capture import CaptureRecord
from pytest_exportcheck.checks.hierarchy import check_hierarchy
from pytest_exportcheck.checks.lowered import check_lowered
from pytest_exportcheck.checks.mode import check_mode
from pytest_exportcheck.checks.moved import check_moved
from pytest_exportcheck.checks.mutation import check_mutation
from pytest_exportcheck.checks.parity import check_parity
from pytest_exportcheck.checks.shapes import check_shapes
from pytest_exportcheck.checks.signature import check_signature
from pytest_exportcheck.lowering import TARGETS, lowered_check, target_of
from pytest_exportcheck.spec import Case

Check = Callable[[Case, CaptureRecord], list[str]]

CHECKS: dict[str, Check] = {
    "signature": check_signature,
    "hierarchy": check_hierarchy,
    "mutation": check_mutation,
    "parity": check_parity,
    "shapes": check_shapes,
    "moved": check_moved,
    "mode": check_mode,
    # One check per lowering target (lowering/): lowered-inductor, lowered-aoti.
    **{lowered_check(name): partial(check_lowered, target=t) for name, t in TARGETS.items()},
}

# Checks that compare values have nothing to compare on the meta device.
VALUE_CHECKS = ("mutation", "parity", "shapes", "moved", "mode", *map(lowered_check, TARGETS))


def not_applicable(check: str, capture: str, device: str) -> str | None:
    """Why ``check`` cannot say anything here (reported as a skip, never a pass)."""
    from pytest_exportcheck.capture import not_applicable as path_not_applicable

    if device == "meta" and check in VALUE_CHECKS:
        return "meta tensors carry no values, so there is nothing to compare"
    if check == "consistency":
        return None
    target = target_of(check)
    if target is not None:
        return path_not_applicable(capture, "lowered") or target.unavailable(device)
    return path_not_applicable(capture, check)
