"""recorded: what a capture looks like equals what was recorded for this torch.

The observation of a (case, capture) — the exact placeholder list, the module
FQNs after ``unflatten`` (export paths, sorted) and the recorded mutation sets — is
compared with ``<case file>.recorded.json`` (see ``recording.py``): the section
of the installed torch minor, else the nearest one, whose differences then
read "differ from torch 2.9's recording (no recording for torch 2.12 yet)",
and are also grouped by kind for the run's summary (``drift.py``). A capture
that raises is an observation too (``observe_failure``), so a torch that breaks
or fixes it is a difference. Under ``--exportcheck-update`` the item records
its observation instead (the controller writes the files at the end).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord, DecompositionError
from pytest_exportcheck.capture.symbolic import kept_dims
from pytest_exportcheck.checks.listdiff import list_diff
from pytest_exportcheck.containment.failures import CaptureError, CaseError
from pytest_exportcheck.recordings.drift import Drift, drifts
from pytest_exportcheck.recordings.recording import (
    OBSERVATION,
    RECORDED_ENTRY,
    Recording,
    RecordingError,
    RecordingStore,
    recording_path,
)
from pytest_exportcheck.spec import Case

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_FAILURE_TEXT = 120


def observe(record: CaptureRecord) -> dict[str, Any]:
    """What is recorded of a capture: plain JSON, the same on every run of one torch."""
    modules: list[str] | str | None = None
    if isinstance(record, ProgramRecord):
        try:
            unflat = record.fresh_unflattened()
        except Exception as exc:
            modules = f"unflatten raised {type(exc).__name__}"
        else:
            # Sorted: torch 2.13's unflatten orders torch.cond branch modules
            # (true_graph_0, false_graph_0) differently from run to run; the order
            # itself is the hierarchy check's business (against eager's).
            modules = sorted(
                name for name, _ in unflat.named_modules(remove_duplicate=False) if name
            )
    mutations: dict[str, list[str]] | str | None
    try:
        recorded = record.mutations()
    except DecompositionError:
        mutations = "run_decompositions() raised"
    else:
        mutations = None
        if recorded is not None:
            mutations = {
                "buffers": sorted(recorded.buffers),
                "parameters": sorted(recorded.parameters),
                "user_inputs": sorted(recorded.user_inputs),
            }
    observation: dict[str, Any] = {
        "placeholders": [[p.name, p.kind, p.target] for p in record.placeholders],
        "modules": modules,
        "mutations": mutations,
    }
    if record.subject.case.dynamic is not None:
        observation["dims"] = observe_dims(record)
    return observation


def observe_dims(record: CaptureRecord) -> dict[str, str]:
    """Each declared placement as the capture keeps it: ``symbolic [1, 64]`` (the range
    export recorded), ``symbolic`` (a Dynamo graph: no ranges), ``static 3``."""
    spec = record.subject.case.dynamic
    assert spec is not None
    return {
        f"{placement.describe()} ({placement.dim})": kept.describe()
        for placement, kept in kept_dims(record, spec).items()
    }


@dataclass
class RecordedComparison:
    """The recorded check of one item: the section it compared with, and what differs."""

    against: str  # the torch minor of the section compared with
    findings: list[str] = field(default_factory=list)
    drifts: list[Drift] = field(default_factory=list)


def observe_failure(error: CaptureError) -> dict[str, str]:
    """What is recorded of a capture that raised: its kind, exception and first line.

    Addresses are masked so that the same failure records the same text on every
    run; the rest of the message (user frames, paths) is left out for the same reason.
    """
    cause = error.__cause__
    name = type(cause).__name__ if cause is not None else type(error).__name__
    text = str(cause if cause is not None else error.message).strip()
    first = _ADDRESS.sub("0x…", text.splitlines()[0] if text else "")
    if len(first) > _FAILURE_TEXT:
        first = first[: _FAILURE_TEXT - 1] + "…"
    return {"capture": f"[{error.kind}] {name}: {first}" if first else f"[{error.kind}] {name}"}


def check_recorded(
    case: Case,
    capture: str,
    recording: Recording,
    minor: str,
    observation: dict[str, Any],
) -> RecordedComparison | str:
    """What differs from the recording, or (a string) why there is nothing to compare with."""
    reference = recording.reference(minor)
    where = recording_path(case.path).name
    hint = "record it with pytest --exportcheck --exportcheck-update"
    if reference is None:
        return f"{where} has no section for any torch; {hint}"
    expected = reference.section.get(case.name, {}).get(capture)
    if expected is None:
        entry = f"{case.name}[{capture}]"
        return f"{where} has no entry for {entry} under torch {reference.minor}; {hint}"
    if reference.relation == "own":
        since = f"from the recording for torch {minor}"
    else:
        nearest = "nearest older" if reference.relation == "older" else "no older recording"
        since = (
            f"from torch {reference.minor}'s recording "
            f"(no recording for torch {minor} yet; {nearest})"
        )
    return RecordedComparison(
        against=reference.minor,
        findings=compare(expected, observation, since=since, where=where),
        drifts=drifts(capture, expected, observation),
    )


def compare(
    expected: dict[str, Any], actual: dict[str, Any], *, since: str, where: str
) -> list[str]:
    if "capture" in expected or "capture" in actual:  # a capture that raised, then or now
        if expected.get("capture") == actual.get("capture"):
            return []
        was = expected.get("capture", "succeeded")
        now = actual.get("capture", "succeeds")
        return [
            f"the capture's outcome differs {since} ({where}):\n  recorded: {was}\n  now: {now}"
        ]
    findings = []
    for aspect in ("placeholders", "modules", "mutations", "dims"):
        want, got = expected.get(aspect), actual.get(aspect)
        if want == got:
            continue
        if isinstance(want, list) and isinstance(got, list):
            detail = list_diff(
                [_line(x) for x in want], [_line(x) for x in got], names=("recorded", "now")
            )
        elif isinstance(want, dict) and isinstance(got, dict):
            detail = "\n".join(
                f"  {key}: recorded {want.get(key)}, now {got.get(key)}"
                for key in sorted(want.keys() | got.keys())
                if want.get(key) != got.get(key)
            )
        else:
            detail = f"  recorded {want!r}, now {got!r}"
        findings.append(f"{aspect} differ {since} ({where}):\n{detail}")
    return findings


def _line(entry: Any) -> str:
    if isinstance(entry, list) and len(entry) == 3:
        name, kind, target = entry
        return f"{name}: {kind}" + (f" -> {target}" if target is not None else "")
    return str(entry)


def record_or_compare(
    store: RecordingStore,
    case: Case,
    capture: str,
    observation: dict[str, Any],
    set_property: Callable[[str, Any], None],
) -> RecordedComparison | str | None:
    """What a recorded item does with its observation: record it (--exportcheck-update:
    None), or compare it with the recording (a RecordedComparison, or why there is nothing
    to compare with). The item's report carries what the controller needs: the
    observation (--exportcheck-compare diffs it between runs), the minor compared with
    and what drifted (the summary for a torch without recordings, ``reports/nearest.py``)."""
    try:
        recording = store.recording(case.path)
    except RecordingError as exc:
        raise CaseError(f"{exc}; {exc.advice}") from None
    set_property(OBSERVATION, json.dumps(observation, sort_keys=True))
    if store.update:
        store.observe(case.path, case.name, capture, observation)
        # With the report, so the controller has it even if this worker dies later.
        set_property(RECORDED_ENTRY, json.dumps([str(case.path), case.name, capture]))
        return None
    found = check_recorded(case, capture, recording, store.minor, observation)
    if isinstance(found, str):
        return found
    set_property("exportcheck_recorded_against", found.against)
    if found.drifts:
        set_property("exportcheck_drift", json.dumps([[d.kind, d.example] for d in found.drifts]))
    return found
