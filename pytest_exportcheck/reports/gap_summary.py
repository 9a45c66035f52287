"""The gaps of a run: passing items whose check verified less than it says, counted.

Read from the JSON report's items (``gaps``, see ``gaps.py``), so the terminal
section, the JSON ``gaps`` totals and the Markdown section say the same, with
or without xdist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_exportcheck.reports.results import PASSING

Item = Mapping[str, Any]
STRICT_HINT = "--exportcheck-strict-gaps (or ini exportcheck_strict_gaps = true) makes them fail"


@dataclass
class GapSummary:
    """Items with gaps, grouped by check (in the order first met; items by node id)."""

    by_check: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)

    @property
    def items(self) -> int:
        return sum(len(found) for found in self.by_check.values())

    @property
    def gaps(self) -> int:
        return sum(len(texts) for found in self.by_check.values() for _, texts in found)

    def counts(self) -> Counter[str]:
        """Gaps per check."""
        return Counter(
            {check: sum(len(t) for _, t in found) for check, found in self.by_check.items()}
        )

    def headline(self) -> str:
        """``3 passing items with 4 gaps (hierarchy 2, shapes 2)``."""
        items, gaps = self.items, self.gaps
        per_check = ", ".join(f"{check} {n}" for check, n in sorted(self.counts().items()))
        return (
            f"{items} passing item{'s' if items != 1 else ''} with {gaps} "
            f"gap{'s' if gaps != 1 else ''} ({per_check})"
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON report's ``gaps`` totals."""
        return {
            "items": self.items,
            "gaps": self.gaps,
            "by_check": dict(sorted(self.counts().items())),
        }


def gap_texts(item: Item) -> list[str]:
    """An item's gaps as ``what: why`` lines (none unless it passed)."""
    if item.get("outcome") not in PASSING:
        return []
    texts = []
    for gap in item.get("gaps") or []:
        if isinstance(gap, Mapping) and gap.get("what"):
            texts.append(f"{gap['what']}: {gap['why']}" if gap.get("why") else str(gap["what"]))
    return texts


def summarize(items: Iterable[Item]) -> GapSummary:
    summary = GapSummary()
    for item in sorted(items, key=lambda i: str(i["nodeid"])):
        texts = gap_texts(item)
        if texts:
            check = str(item.get("check") or "?")
            summary.by_check.setdefault(check, []).append((str(item["nodeid"]), texts))
    return summary


def render_text(summary: GapSummary, limit: int | None) -> list[str]:
    """The terminal section: the count, then each check's items with their gaps.

    ``limit`` caps the items listed per check (None: all; -v asks for that).
    """
    lines = [summary.headline() + "; " + STRICT_HINT]
    for check, found in sorted(summary.by_check.items()):
        lines.append(f"{check} ({len(found)} item{'s' if len(found) != 1 else ''}):")
        shown = found if limit is None else found[:limit]
        for nodeid, texts in shown:
            lines.append(f"  {nodeid}")
            lines += [f"      {text}" for text in texts]
        if len(shown) < len(found):
            lines.append(f"  … and {len(found) - len(shown)} more (-v lists them all)")
    return lines
