"""Readable diffs of ordered lists (placeholders, module FQNs) for check findings."""

from __future__ import annotations

import difflib


def list_diff(expected: list[str], actual: list[str], *, names: tuple[str, str]) -> str:
    """A unified diff, expected first: ``-`` lines are missing, ``+`` lines are extra."""
    lines = difflib.unified_diff(expected, actual, fromfile=names[0], tofile=names[1], lineterm="")
    return "\n".join(lines)
