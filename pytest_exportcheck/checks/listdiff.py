"""How two views of the same names differ: ordered lists, and groupings by identity."""

from __future__ import annotations

import difflib
from typing import Any


def list_diff(expected: list[str], actual: list[str], *, names: tuple[str, str]) -> str:
    """A unified diff, expected first: ``-`` lines are missing, ``+`` lines are extra."""
    lines = difflib.unified_diff(expected, actual, fromfile=names[0], tofile=names[1], lineterm="")
    return "\n".join(lines)


def partition_differences(
    eager: dict[str, Any], other: dict[str, Any], *, merged: str, split: str
) -> list[str]:
    """Where two groupings of the same names by identity disagree, one finding per group.

    ``eager`` and ``other`` map each name to an identity key; names with equal
    keys are one object. Linear in the number of names (models have thousands).
    """
    findings = []
    for grouping, against, message in ((eager, other, split), (other, eager, merged)):
        groups: dict[Any, list[str]] = {}
        for name, key in grouping.items():
            groups.setdefault(key, []).append(name)
        for names in groups.values():
            first = names[0]
            findings += [
                message.format(a=first, b=name)
                for name in names[1:]
                if against[name] != against[first]
            ]
    return findings
