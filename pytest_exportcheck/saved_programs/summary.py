"""The table of programs across torch versions: per loading minor and saving minor, how
many programs the older torch saved load and match under the later one, and every
difference grouped by cause with one example.

Read from the ``loaded-by-torch-<minor>.json`` files the loading runs wrote into the
programs directory (``items/program_saving.py``); ``benchmarks/torch_matrix.sh`` with
``PROGRAMS=DIR`` makes them, and ``python -m pytest_exportcheck versions --programs DIR
--write docs/versions.md`` puts the table between its markers.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

BEGIN = (
    "<!-- programs table: python -m pytest_exportcheck versions --programs DIR "
    "--write docs/versions.md -->"
)
END = "<!-- end of programs table -->"
LOADED_BY = re.compile(r"loaded-by-torch-(\d+)\.(\d+)\.json")
RAISED = re.compile(r" raised (\w+)")
NODE_TARGET = re.compile(r"deserializing node Node\(target='([\w.]+)'")


def cause_of(why: str) -> str:
    """A failure's headline → its cause: the stage, and what raised or what differs."""
    stage = re.match(r"\[(\w[\w-]*)\]", why)
    name = stage[1] if stage else "?"
    raised = RAISED.search(why)
    node = NODE_TARGET.search(why)  # which op a program failed to deserialize
    if raised and node:
        return f"{name}: {raised[1]} on {node[1]}"
    if raised:
        return f"{name}: {raised[1]}"
    if "output structure" in why or "output leaves" in why:
        return f"{name}: output structure differs"
    if "outside tolerance" in why or "differ" in why:
        return f"{name}: outputs differ"
    return f"{name}: {why.split(':')[0][:60]}"


def read_summaries(root: Path) -> dict[tuple[int, int], dict[str, Any]]:
    found = {}
    for path in sorted(root.glob("loaded-by-torch-*.json")):
        match = LOADED_BY.fullmatch(path.name)
        if match:
            found[(int(match[1]), int(match[2]))] = json.loads(path.read_text())
    return found


def render_markdown(root: Path) -> list[str]:
    lines = [
        "| loaded by | saved by | programs | load and match "
        "| differences (cause: count, example) |",
        "|---|---|---|---|---|",
    ]
    for minor, summary in sorted(read_summaries(root).items()):
        loader = summary.get("torch", f"{minor[0]}.{minor[1]}")
        by_saving = summary.get("by_saving_minor", {})
        if not by_saving:
            lines.append(f"| {loader} | (nothing older) | 0 | 0 | |")
        for saving in sorted(by_saving, key=lambda m: tuple(map(int, m.split(".")))):
            counts = by_saving[saving]
            # An XPASS(strict) loaded and matched: an xfail wrongly covered it (an xfail
            # for this torch's capture, before loaded items took only xfails naming them).
            failed = [f for f in counts.get("failed", []) if not _passed(f)]
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for failure in failed:
                groups[cause_of(failure["why"])].append(failure)
            differences = "; ".join(
                f"{cause}: {len(items)}, e.g. {_example(items[0])}"
                for cause, items in sorted(groups.items(), key=lambda g: -len(g[1]))
            )
            judged = counts.get("judged", 0)
            lines.append(
                f"| {loader} | {saving} | {judged} | {judged - len(failed)} | {differences} |"
            )
    return lines


def _passed(failure: dict[str, Any]) -> bool:
    return str(failure.get("why", "")).startswith("[XPASS(strict)]")


def _example(failure: dict[str, Any]) -> str:
    """The item and what went wrong: what raised, where something did (not the path)."""
    item = failure["item"].rpartition("/")[2]
    why = str(failure["why"])
    why = why.partition(" raised ")[2] or re.sub(r" \(/[^)]*\)", "", why)
    why = why.replace("|", "\\|")
    return f"`{item}`: {why[:120]}{'...' if len(why) > 120 else ''}"
