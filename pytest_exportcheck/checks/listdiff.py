"""How two views of the same names differ: ordered lists, and groupings by identity."""

from __future__ import annotations

import difflib
from typing import Any


def list_diff(expected: list[str], actual: list[str], *, names: tuple[str, str]) -> str:
    """A unified diff, expected first: ``-`` lines are missing, ``+`` lines are extra."""
    lines = difflib.unified_diff(expected, actual, fromfile=names[0], tofile=names[1], lineterm="")
    return "\n".join(lines)


def side_by_side(
    expected: list[str], actual: list[str], *, names: tuple[str, str], context: int = 2
) -> str:
    """Expected and actual in two columns, lined up; the first column marks each row::

          expected                       | actual [export]
          p_fc1_weight: parameter -> ... | p_fc1_weight: parameter -> ...
        + (missing)                      | p_fc1_bias: parameter -> fc1.bias
        ! x: user_input -> args[0]       | x: user_input -> args[1]

    ``-`` only expected, ``+`` only actual, ``!`` a row that differs. Runs of
    matching rows longer than ``2 * context + 1`` keep ``context`` rows at each
    end and say how many they hide: a 210-module tree with 3 differences reads in
    a dozen lines, not 210.
    """
    rows = _rows(expected, actual)
    width = max([len(names[0]), *(len(a) for _, a, _ in rows)])
    lines = [f"  {names[0]:<{width}} | {names[1]}"]
    for mark, a, b in _collapsed(rows, context):
        if mark == "…":
            lines.append(f"  … {a} matching row{'s' if a != '1' else ''} …")
        else:
            lines.append(f"{mark} {a:<{width}} | {b}".rstrip())
    return "\n".join(lines)


def difference_counts(expected: list[str], actual: list[str]) -> str:
    """``2 missing, 1 extra, 1 differing; 207 matching`` for a headline."""
    rows = _rows(expected, actual)
    counts = {mark: sum(1 for m, _, _ in rows if m == mark) for mark in "-+! "}
    parts = [
        f"{counts[mark]} {word}"
        for mark, word in (("-", "missing"), ("+", "extra"), ("!", "differing"))
        if counts[mark]
    ]
    return f"{', '.join(parts)}; {counts[' ']} matching"


def _collapsed(rows: list[tuple[str, str, str]], context: int) -> list[tuple[str, str, str]]:
    kept: list[tuple[str, str, str]] = []
    index = 0
    while index < len(rows):
        if rows[index][0] != " ":
            kept.append(rows[index])
            index += 1
            continue
        end = index
        while end < len(rows) and rows[end][0] == " ":
            end += 1
        run = rows[index:end]
        head = context if index > 0 else 0
        tail = context if end < len(rows) else 0
        if len(run) > head + tail + 1:
            hidden = ("…", str(len(run) - head - tail), "")
            kept += [*run[:head], hidden, *run[len(run) - tail :]]
        else:
            kept += run
        index = end
    return kept


def _rows(expected: list[str], actual: list[str]) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = expected[i1:i2], actual[j1:j2]
        if tag == "equal":
            rows += [(" ", a, b) for a, b in zip(left, right, strict=True)]
            continue
        paired = min(len(left), len(right)) if tag == "replace" else 0
        rows += [("!", left[k], right[k]) for k in range(paired)]
        rows += [("-", a, "") for a in left[paired:]]
        rows += [("+", "", b) for b in right[paired:]]
    return rows


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


def capped(items: list[str], *, limit: int = 8, sep: str = ", ") -> str:
    """The first ``limit`` items and a count of the rest: a list of 150 buffer names
    reads ``a, b, c ... and 147 more``, on a line one can read."""
    if len(items) <= limit:
        return sep.join(items)
    return sep.join(items[:limit]) + f" ... and {len(items) - limit} more"
