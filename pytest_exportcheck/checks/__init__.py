"""The checks: each is ``check(case, record) -> findings`` (an empty list means it passed).

To add a check: write ``checks/<name>.py`` with one such function, register it
in ``CHECKS`` and add its name to ``checkName`` in ``case.schema.json``.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_exportcheck.capture import CaptureRecord
from pytest_exportcheck.checks.hierarchy import check_hierarchy
from pytest_exportcheck.checks.mutation import check_mutation
from pytest_exportcheck.checks.parity import check_parity
from pytest_exportcheck.checks.signature import check_signature
from pytest_exportcheck.spec import Case

Check = Callable[[Case, CaptureRecord], list[str]]

CHECKS: dict[str, Check] = {
    "signature": check_signature,
    "hierarchy": check_hierarchy,
    "mutation": check_mutation,
    "parity": check_parity,
}
