"""recorded: what a capture looks like equals what was recorded for this torch.

The observation of a (case, capture) — the exact placeholder list, the module
FQNs after ``unflatten`` (export paths, sorted) and the recorded mutation sets — is
compared with ``<case file>.recorded.json`` (see ``recording.py``): the section
of the installed torch minor, else the newest older one, whose differences
then read "changed since torch 2.9". Under ``--exportcheck-update`` the item
records its observation instead (the controller writes the files at the end).
"""

from __future__ import annotations

from typing import Any

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord, DecompositionError
from pytest_exportcheck.checks.listdiff import list_diff
from pytest_exportcheck.recording import Recording, recording_path
from pytest_exportcheck.spec import Case


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
    return {
        "placeholders": [[p.name, p.kind, p.target] for p in record.placeholders],
        "modules": modules,
        "mutations": mutations,
    }


def check_recorded(
    case: Case,
    record: CaptureRecord,
    recording: Recording,
    minor: str,
    observation: dict[str, Any],
) -> list[str] | str:
    """Findings, or (a string) why there is nothing recorded to compare with."""
    reference = recording.reference(minor)
    where = recording_path(case.path).name
    hint = "record it with pytest --exportcheck --exportcheck-update"
    if reference is None:
        return f"{where} has no section for torch {minor} or older; {hint}"
    section_minor, section = reference
    expected = section.get(case.name, {}).get(record.capture)
    if expected is None:
        entry = f"{case.name}[{record.capture}]"
        return f"{where} has no entry for {entry} under torch {section_minor}; {hint}"
    since = (
        f"differ from the recording for torch {minor}"
        if section_minor == minor
        else f"changed since torch {section_minor} (no recording for torch {minor} yet)"
    )
    return compare(expected, observation, since=since, where=where)


def compare(
    expected: dict[str, Any], actual: dict[str, Any], *, since: str, where: str
) -> list[str]:
    findings = []
    for aspect in ("placeholders", "modules", "mutations"):
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
        findings.append(f"{aspect} {since} ({where}):\n{detail}")
    return findings


def _line(entry: Any) -> str:
    if isinstance(entry, list) and len(entry) == 3:
        name, kind, target = entry
        return f"{name}: {kind}" + (f" -> {target}" if target is not None else "")
    return str(entry)
