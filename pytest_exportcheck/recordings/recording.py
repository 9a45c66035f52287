"""Recorded expectations: files the plugin owns, one per case file, a section per torch minor.

``cases/state.yaml`` is written by people; ``cases/state.recorded.json`` by
``pytest --exportcheck --exportcheck-update`` only::

    {
      "format": 1,
      "case_file": "state.yaml",
      "torch": {
        "2.13": {
          "kv_cache": {
            "export": {
              "placeholders": [["b_k_cache", "buffer", "k_cache"], ["x", "user_input", "args[0]"]],
              "modules": [],
              "mutations": {"buffers": ["k_cache"], "parameters": [], "user_inputs": []}
            }
          }
        },
        "2.9": {...}
      }
    }

A run reads the section of the installed torch minor or, if it has none, the
newest older one (its differences then say "changed since torch 2.9"), or,
for a torch older than every section, the oldest newer one. An
update rewrites only the installed minor's section and only the (case,
capture) pairs that ran; other sections and deselected cases stay as they
were. The file is written once per run, by the xdist controller (or the only
process), atomically, and only if its text changes: updating twice in a row
changes nothing the second time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_exportcheck.recordings.atomic import (
    locked_directory,
    remove_stale_temporaries,
    stale_note,
    write_atomically,
)
from pytest_exportcheck.recordings.recording_schema import FORMAT, shape_problem
from pytest_exportcheck.spec.case import display_path
from pytest_exportcheck.spec.shown import shorten

SUFFIX = ".recorded.json"

# case name -> capture -> observation
Section = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Reference:
    """The section a run compares with, and how it relates to the run's torch minor."""

    minor: str
    section: Section
    relation: str  # "own", "older" (the newest older minor) or "newer" (the oldest newer)


# User properties of a recorded item: what it observed (JSON), and under
# --exportcheck-update which entry that is ([case file, case, capture]).
OBSERVATION = "exportcheck_observation"
RECORDED_ENTRY = "exportcheck_recorded_entry"


class RecordingError(Exception):
    """A recording file that cannot be read; it is never overwritten."""

    advice = "fix or delete it (--exportcheck-update will not overwrite it)"


class NewerRecordingError(RecordingError):
    """A recording of a format this version does not know: a newer one wrote it."""

    advice = "upgrade pytest-exportcheck to read it (this version will not overwrite it)"


# A recording is a few MB at most; past this, it is not one.
MAX_RECORDING_BYTES = 64 << 20


def recording_path(case_file: Path) -> Path:
    """``cases/state.yaml`` → ``cases/state.recorded.json``."""
    return case_file.with_name(case_file.stem + SUFFIX)


@dataclass
class Recording:
    path: Path
    case_file: str
    sections: dict[str, Section] = field(default_factory=dict)

    @classmethod
    def read(cls, case_file: Path) -> Recording:
        """The recording of ``case_file``; empty if there is none yet."""
        path = recording_path(case_file)
        if not path.exists():
            return cls(path, case_file.name)
        shown = display_path(path)
        if not path.is_file():
            raise RecordingError(f"{shown}: not a regular file")
        if path.stat().st_size > MAX_RECORDING_BYTES:
            raise RecordingError(f"{shown}: over {MAX_RECORDING_BYTES} bytes, not a recording")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except RecursionError:
            raise RecordingError(f"{shown}: nested too deeply to be a recording") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RecordingError(f"{shown}: unreadable ({type(exc).__name__}: {exc})") from None
        written = data.get("format") if isinstance(data, dict) else None
        if isinstance(written, int) and not isinstance(written, bool) and written > FORMAT:
            raise NewerRecordingError(
                f"{shown}: written by a newer pytest-exportcheck (recording format {written}; "
                f"this version reads format {FORMAT})"
            )
        problem = shape_problem(data)
        if problem:
            raise RecordingError(f"{shown}: not a recording of format {FORMAT} ({problem})")
        return cls(path, data["case_file"], data["torch"])

    def reference(self, minor: str) -> Reference | None:
        """What a run on torch ``minor`` compares with: its own section, else the newest
        older one, else (a torch older than anything recorded) the oldest newer one."""
        if minor in self.sections:
            return Reference(minor, self.sections[minor], "own")
        current = _version(minor)
        known = sorted((v, m) for m in self.sections if (v := _version(m)) is not None)
        if current is None or not known:
            return None
        older = [m for v, m in known if v < current]
        if older:
            return Reference(older[-1], self.sections[older[-1]], "older")
        newer = known[0][1]
        return Reference(newer, self.sections[newer], "newer")

    def updated(self, minor: str, observations: dict[str, dict[str, Any]]) -> Recording:
        """This recording with ``observations`` (case -> capture -> observation) in ``minor``."""
        section = {case: dict(captures) for case, captures in self.sections.get(minor, {}).items()}
        for case, captures in observations.items():
            section.setdefault(case, {}).update(captures)
        sections = {**self.sections, minor: section} if section else dict(self.sections)
        return Recording(self.path, self.case_file, sections)

    def without(self, entries: set[tuple[str, str, str]]) -> Recording:
        """This recording less ``entries`` ((minor, case, capture) each), in one pass: a
        recording of 40k stale entries took quadratic time removing them one by one."""
        sections: dict[str, Section] = {}
        for minor, section in self.sections.items():
            kept: Section = {}
            for case, captures in section.items():
                left = {c: o for c, o in captures.items() if (minor, case, c) not in entries}
                if left or not captures:
                    kept[case] = left
            sections[minor] = kept
        return Recording(self.path, self.case_file, sections)

    def render(self) -> str:
        data = {"format": FORMAT, "case_file": self.case_file, "torch": self.sections}
        return _dump(data, 0) + "\n"

    def write_if_changed(self) -> tuple[bool, list[str]]:
        """Atomically replace the file if its text changes: whether it did, and the stale
        temporary files of an interrupted earlier write that were removed."""
        text = self.render()
        try:
            if self.path.read_text(encoding="utf-8") == text:
                return False, remove_stale_temporaries(self.path)
        except FileNotFoundError:
            pass
        return True, write_atomically(self.path, text)


def _dump(value: Any, depth: int) -> str:
    """JSON with sorted keys, a mapping key per line and flat lists on one line (diff-friendly)."""
    pad = " " * depth
    if isinstance(value, dict) and value:
        items = [
            f"{pad} {json.dumps(key)}: {_dump(value[key], depth + 1)}" for key in sorted(value)
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        items = [f"{pad} {_dump(v, depth + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value)


def _version(minor: str) -> Version | None:
    try:
        return Version(minor)
    except InvalidVersion:
        return None


class RecordingStore:
    """One process's view: recordings read, observations made, files fully selected.

    Workers hand their part to the controller (``payload`` / ``merge``); only
    the controller, or a run without xdist, writes files (``write``).
    """

    def __init__(self, *, update: bool, minor: str) -> None:
        self.update = update
        self.minor = minor
        self._read: dict[Path, Recording | RecordingError] = {}
        # case file -> case -> capture -> observation
        self.observations: dict[str, dict[str, dict[str, Any]]] = {}
        self.collected: set[str] = set()
        # case file -> "case[capture]" of each recorded item selected: what a file's
        # update needs observed to be whole when the run was cut short.
        self.expected: dict[str, set[str]] = {}
        self.incomplete: set[str] = set()  # a recorded item of the file was deselected
        self.unwritten: list[Path] = []  # recordings the update could not write
        # case file -> case -> its captures (None: broken), as collection loaded them:
        # the stale check at the end need not load every case file again (it took the
        # xdist controller, which collects nothing, ~1 s at the end of every run).
        self.cases: dict[str, dict[str, list[str] | None]] = {}

    def recording(self, case_file: Path) -> Recording:
        """The file's recording (read once per process); raises RecordingError."""
        if case_file not in self._read:
            try:
                self._read[case_file] = Recording.read(case_file)
            except RecordingError as exc:
                self._read[case_file] = exc
        found = self._read[case_file]
        if isinstance(found, RecordingError):
            raise found
        return found

    def expect(self, case_file: Path, case: str, capture: str) -> None:
        """A recorded item of ``case_file`` was selected to run."""
        self.expected.setdefault(str(case_file), set()).add(f"{case}[{capture}]")

    def observe(self, case_file: Path, case: str, capture: str, observation: Any) -> None:
        per_case = self.observations.setdefault(str(case_file), {}).setdefault(case, {})
        per_case.setdefault(capture, observation)  # one per capture, whichever device first

    def loaded(self, case_file: Path, captures_by_case: dict[str, list[str] | None]) -> None:
        """What collection found in ``case_file``: each case's captures (None: broken)."""
        self.cases[str(case_file)] = captures_by_case

    def payload(self) -> str:
        return json.dumps(
            {
                "observations": self.observations,
                "collected": sorted(self.collected),
                "expected": {f: sorted(entries) for f, entries in self.expected.items()},
                "incomplete": sorted(self.incomplete),
                "cases": self.cases,
            }
        )

    def merge(self, payload: str) -> None:
        data = json.loads(payload)
        for case_file, cases in data["observations"].items():
            for case, captures in cases.items():
                for capture, observation in captures.items():
                    self.observe(Path(case_file), case, capture, observation)
        self.collected.update(data["collected"])
        for case_file, entries in data.get("expected", {}).items():
            self.expected.setdefault(case_file, set()).update(entries)
        self.incomplete.update(data["incomplete"])
        self.cases.update(data.get("cases", {}))

    def write(self, *, whole_run: bool) -> list[str]:
        """Write every touched recording file; one summary line per file."""
        lines = []
        for case_file in sorted(self.collected | set(self.observations)):
            lines += self._write_one(Path(case_file), whole_run=whole_run)
        return lines

    def stale_report(self) -> list[tuple[str, str]]:
        """Without --exportcheck-update: recorded entries the case files no longer have,
        as (recording file, what is stale) per file."""
        found = []
        for case_file in sorted(self.collected):
            try:
                recording = Recording.read(Path(case_file))
            except RecordingError:
                continue  # the file's recorded items already fail with the reason
            stale = _stale(recording, self.minor, self._captures_by_case(Path(case_file)))
            if stale:
                found.append((
                    display_path(recording.path),
                    f"recorded entries for cases or captures that no longer exist: "
                    f"{_show(stale)}; pytest --exportcheck --exportcheck-update on the whole "
                    "suite removes them",
                ))  # fmt: skip
        return found

    def _not_observed(self, case_file: Path) -> list[str]:
        observed = self.observations.get(str(case_file), {})
        seen = {f"{case}[{capture}]" for case, captures in observed.items() for capture in captures}
        return sorted(self.expected.get(str(case_file), set()) - seen)

    def _captures_by_case(self, case_file: Path) -> Mapping[str, Sequence[str] | None]:
        known = self.cases.get(str(case_file))
        return known if known is not None else _captures_by_case(case_file)

    def _write_one(self, case_file: Path, *, whole_run: bool) -> list[str]:
        # Read, merged and written under one lock: another run updating the same
        # recording meanwhile would otherwise have its entries overwritten.
        directory = recording_path(case_file).parent
        if not directory.is_dir():
            return self._write_one_locked(case_file, whole_run=whole_run)
        with locked_directory(directory):
            return self._write_one_locked(case_file, whole_run=whole_run)

    def _write_one_locked(self, case_file: Path, *, whole_run: bool) -> list[str]:
        try:
            recording = Recording.read(case_file)
        except RecordingError as exc:
            return [f"not written: {exc}; {exc.advice}"]
        observed = self.observations.get(str(case_file), {})
        missing = self._not_observed(case_file)
        if not whole_run and missing:
            # One rule with or without xdist: a cut-short run writes a file only if every
            # recorded item of it was observed, never a part of a section.
            return [
                f"not updated: {display_path(recording.path)}: the run was cut short before "
                f"{len(missing)} of its recorded item(s) ran ({shorten(', '.join(missing))}); "
                "it is as it was"
            ]
        stale = _stale(recording, self.minor, self._captures_by_case(case_file))
        complete = whole_run and str(case_file) not in self.incomplete
        remove = stale if complete else set()
        if not observed and not remove:
            return []
        updated = recording.updated(self.minor, observed).without(remove)
        count = sum(len(captures) for captures in observed.values())
        try:
            changed, removed = updated.write_if_changed()
        except OSError as exc:  # a read-only directory, a full disk: the run still reports
            self.unwritten.append(recording.path)
            why = exc.strerror or type(exc).__name__
            return [f"NOT WRITTEN: {display_path(recording.path)}: {why}; {count} entries lost"]
        line = f"{display_path(recording.path)}: torch {self.minor}, {count} entries recorded, " + (
            "written" if changed else "unchanged"
        )
        line += stale_note(removed)
        if stale:
            verb = "removed" if complete else "kept (not the whole suite ran)"
            line += f"; stale entries {verb}: {_show(stale)}"
        return [line]


def _stale(
    recording: Recording, minor: str, captures_by_case: Mapping[str, Sequence[str] | None]
) -> set[tuple[str, str, str]]:
    """(minor, case, capture) entries for cases the file lacks, or captures the case lacks now."""
    found = set()
    for section_minor, section in recording.sections.items():
        for case, captures in section.items():
            for capture in captures:
                if case not in captures_by_case:
                    found.add((section_minor, case, capture))
                elif section_minor == minor:
                    current = captures_by_case[case]
                    if current is not None and capture not in current:
                        found.add((section_minor, case, capture))
    return found


def _captures_by_case(case_file: Path) -> dict[str, tuple[str, ...] | None]:
    """Each case name of the file with its captures on this torch (None: the case is broken)."""
    from pytest_exportcheck.spec import SpecError, load_case_file

    try:
        loaded = load_case_file(case_file)
    except SpecError:
        return {}
    return {entry.name: entry.case.captures if entry.case else None for entry in loaded}


# Entries a message names at most; the rest are counted (800k stale entries printed
# one line of 24 million characters).
SHOWN_ENTRIES = 10


def _show(entries: set[tuple[str, str, str]]) -> str:
    ordered = sorted(entries)
    shown = ", ".join(
        f"{shorten(case)}[{shorten(capture)}] (torch {shorten(minor)})"
        for minor, case, capture in ordered[:SHOWN_ENTRIES]
    )
    rest = len(ordered) - SHOWN_ENTRIES
    return shown + (f" and {rest} more" if rest > 0 else "")
