"""An item's plain-torch reproduction (``--exportcheck-repro``) in words, for every report.

The JSON report keeps ``repro`` (the script's path) and ``repro_outcome`` (what its run
said, ``repro/confirm.py``; or why none was written) as they are; the Markdown report,
the GitHub annotations and the HTML page show the outcome in these words, so all three
say it alike. An outcome that contradicts the plugin's verdict (the script does not
reproduce a failure, or still shows the finding an XPASS(strict) passed) is what a
reader must not miss: :func:`contradicts` tells them apart, and each report marks them.
Pure text, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_exportcheck.repro.confirm import (
    NO_VERDICT,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    XPASS_GONE,
    XPASS_SHOWS,
)

CONTRADICTING = frozenset({NOT_REPRODUCED, XPASS_SHOWS})

WORDS = {
    REPRODUCED: "reproduced in plain torch",
    NOT_REPRODUCED: (
        "not reproduced outside the plugin: this verdict may be the plugin's own error"
    ),
    NO_VERDICT: "the plain-torch reproduction reached no verdict (it raised or ran too long)",
    NOT_RUN: "written, not run (--exportcheck-repro-run=no)",
    XPASS_GONE: "the xfail's finding is gone in plain torch too",
    XPASS_SHOWS: (
        "the xfail's finding still shows in plain torch: this pass may be the plugin's own error"
    ),
}


def has_reproduction(item: Mapping[str, Any]) -> bool:
    """Whether the item carries a reproduction or a word on why it has none."""
    return bool(item.get("repro") or item.get("repro_outcome"))


def contradicts(outcome: str | None) -> bool:
    """Plain torch says otherwise than the plugin's verdict: it may be the plugin's error."""
    return outcome in CONTRADICTING


def described(outcome: str | None) -> str:
    """The outcome as a sentence; one this module does not know (``no plain reproduction
    yet: <why>``, a newer plugin's) as it is."""
    if not outcome:
        return "written"
    return WORDS.get(outcome, outcome)


def line(repro: str | None, outcome: str | None) -> str | None:
    """``reproduction: <outcome in words>: <path>`` (no path where none was written);
    None where the item has neither."""
    if not repro and not outcome:
        return None
    said = f"reproduction: {described(outcome)}"
    return f"{said}: {repro}" if repro else said
