"""What one item of a check of a given model comes to: its outcome, message and gaps.

Plain data, importing neither torch nor the checks. The item loop of the Python API
(``case_run.py``) builds these; ``api/results.py`` gathers them into a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_exportcheck.items.gaps import Gap

Outcome = Literal["passed", "failed", "skipped", "xfailed"]
# Left on the test's report by each call of the `exportcheck` fixture (api/check.py):
# that call's items, as `Report.to_json()` (read by reports/ and items/reproductions.py).
API_CALL_PROPERTY = "exportcheck_api_call"


@dataclass(frozen=True)
class ItemResult:
    """One (check, capture, device) of a call, named as the YAML item would be."""

    name: str
    check: str
    capture: str
    device: str
    outcome: Outcome
    # The skip reason, or the failure as the plugin's item prints it.
    message: str = ""
    headline: str = ""
    seconds: float = 0.0
    max_abs_err: float | None = None
    # Where it failed or xfailed: the [stage] its message starts with (an xfail's `stage:`).
    stage: str = ""
    # On a pass: what its check did not verify, as {check, what, why} (gaps.py); under
    # strict gaps such an item fails instead, naming them.
    gaps: tuple[dict[str, str], ...] = ()
    # How many tensor pairs its check compared at a tolerance (0: no values, so no
    # max_abs_err); None where the check did not run.
    compared: int | None = None
    # With ``repro=DIR``: its plain-torch script, and what its run said (or why none),
    # as the JSON report's ``repro`` / ``repro_outcome``.
    repro: str | None = None
    repro_outcome: str | None = None

    @property
    def gap_texts(self) -> list[str]:
        """Each gap as the terminal prints it: ``what: why``."""
        return [gap_text(gap) for gap in self.gaps]


def gap_text(gap: dict[str, str]) -> str:
    """``what: why``, as every surface of the plugin reads a gap (items/gaps.py)."""
    found = Gap.from_json(gap)
    return found.text() if found is not None else str(gap)
