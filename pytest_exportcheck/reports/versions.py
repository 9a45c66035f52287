"""What changes between torch minors, read from the recordings: the table in docs/versions.md.

``python -m pytest_exportcheck versions cases`` reads every
``*.recorded.json`` under the paths given, orders the torch minors they hold
and, for each step from one recorded minor to the next, groups what changed
for the (case, capture) pairs recorded on both sides by kind (``drift.py``)::

    | torch | what changes | items | example |
    |---|---|---|---|
    | 2.9 → 2.10 | dynamo-legacy placeholder names | 26 | basics::mlp[dynamo-legacy]:
      L__self___fc1.weight now L__self___fc1_weight |
    | 2.9 → 2.10 | export-strict capture fails | 1 | inputs::dict_outputs[export-strict]:
      [other] AttributeError: 'UnspecializedNNModuleSource' object has no attribute … |

(rows folded here; each is one line of the table)

A capture that raised is recorded as such (``{"capture": "[kind] Error"}``),
so failures that come and go are rows too. A file without a section for one
of the two minors (transformers cases recorded on one torch only) adds no
row: nothing was compared. ``--exportcheck-compare`` between two runs' reports
groups its changed observations with the same kinds (``reports/compare_runs.py``).
Plain JSON in, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from packaging.version import InvalidVersion, Version

from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.recordings.drift import Drift, DriftGroup, drifts, group
from pytest_exportcheck.recordings.recording import SUFFIX, Recording, RecordingError


@dataclass(frozen=True)
class Step:
    """From one recorded torch minor to the next: what changed, grouped by kind."""

    before: str
    after: str
    compared: int  # (case, capture) pairs recorded on both sides
    groups: list[DriftGroup]


def recording_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every recording under ``paths`` (a file given directly counts too), sorted."""
    for path in paths:
        if path.is_file():
            yield path
        else:
            yield from sorted(path.rglob(f"*{SUFFIX}"))


def read_all(files: Iterable[Path]) -> list[Recording]:
    """The recordings of ``files``; raises RecordingError naming the first unreadable one."""
    recordings = []
    for file in files:
        case_file = file.with_name(file.name[: -len(SUFFIX)] + ".yaml")
        recordings.append(Recording.read(case_file))
    return recordings


def steps(recordings: list[Recording]) -> list[Step]:
    """One Step per pair of consecutive minors recorded anywhere, oldest first."""
    minors = sorted(
        {minor for recording in recordings for minor in recording.sections}, key=_sort_key
    )
    return [_step(recordings, a, b) for a, b in pairwise(minors)]


def _step(recordings: list[Recording], before: str, after: str) -> Step:
    found = []
    compared = 0
    for recording in recordings:
        if before not in recording.sections or after not in recording.sections:
            continue
        old, new = recording.sections[before], recording.sections[after]
        stem = Path(recording.case_file).stem
        for case in sorted(old.keys() | new.keys()):
            was, now = old.get(case, {}), new.get(case, {})
            for capture in sorted(was.keys() | now.keys()):
                who = f"{stem}::{case}[{capture}]"
                if capture not in was:  # a path torch gained, or a case added since
                    found.append((who, Drift(f"{capture} first recorded", f"none for {before}")))
                elif capture not in now:
                    found.append((who, Drift(f"{capture} no longer recorded", f"none for {after}")))
                else:
                    compared += 1
                    found += [(who, d) for d in drifts(capture, was[capture], now[capture])]
    return Step(before, after, compared, group(found))


def render_markdown(found: list[Step]) -> list[str]:
    """The table, one row per (step, kind); a step where nothing changed says so."""
    lines = ["| torch | what changes | items | example |", "|---|---|---|---|"]
    for step in found:
        label = f"{step.before} → {step.after}"
        if not step.groups:
            lines.append(f"| {label} | nothing ({step.compared} compared) | 0 | |")
        for g in step.groups:
            example = g.instance.replace("|", "\\|")
            lines.append(f"| {label} | {g.kind} | {len(g.items)} | {example} |")
    return lines


# The table's place in a Markdown file (--write): between these two lines.
BEGIN = (
    "<!-- versions table: python -m pytest_exportcheck versions cases --write docs/versions.md -->"
)
END = "<!-- end of versions table -->"


def with_table(text: str, table: list[str], begin: str = BEGIN, end: str = END) -> str | None:
    """``text`` with the lines between ``begin`` and ``end`` replaced by ``table``; None if
    it lacks the markers."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == begin]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        return None
    body = [f"{line}\n" for line in table]
    return "".join([*lines[: starts[0] + 1], *body, *lines[ends[0] :]])


def main(paths: list[Path], write: Path | None = None, programs: Path | None = None) -> int:
    """``python -m pytest_exportcheck versions``: print the table, or (``write``) put it
    into a Markdown file between the markers; 2 on an unreadable or unmarked file.
    ``programs``: the table of programs across versions, from that directory, instead."""
    if programs is not None:
        from pytest_exportcheck.saved_programs import summary

        table = summary.render_markdown(programs)
        return _print_or_write(table, write, summary.BEGIN, summary.END, "programs table")
    files = list(recording_files(paths))
    if not files:
        print(f"no *{SUFFIX} under {', '.join(map(str, paths))}")
        return 2
    try:
        recordings = read_all(files)
    except RecordingError as exc:
        print(f"error: {exc}")
        return 2
    return _print_or_write(render_markdown(steps(recordings)), write, BEGIN, END)


def _print_or_write(
    table: list[str], write: Path | None, begin: str, end: str, name: str = "versions table"
) -> int:
    if write is None:
        for line in table:
            print(line)
        return 0
    text = write.read_text(encoding="utf-8")
    updated = with_table(text, table, begin, end)
    if updated is None:
        print(f"error: {write} needs one line {begin!r} and, after it, one line {end!r}")
        return 2
    if updated != text:
        write_atomically(write, updated)
    print(f"{write}: {name} {'updated' if updated != text else 'unchanged'}")
    return 0


def _sort_key(minor: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(minor))
    except InvalidVersion:
        return (1, minor)
