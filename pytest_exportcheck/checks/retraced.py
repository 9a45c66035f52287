"""A retraced program lifts what its capture lifted (part of the ``consistency`` item).

``retrace`` (``programs:``, ``capture/chains.py``) exports ``ep.module()`` again, as
PyTorch's ``test_retraceability.py`` does for every export test. Its values are
judged by parity and the stepped runs; here its signature is compared with the
capture's: the same parameters, buffers and constants lifted (by alias group: a
strict capture lifts a tied weight once where the non-strict retrace lifts it per
name), as many constants (a retrace lifts a tensor ``forward`` takes by default, or
one it makes, under a target of its own: ExportDB's ``optional_input``), and the same
user inputs in the same order. Placeholder names are not compared: a retrace names
them afresh.
"""

from __future__ import annotations

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord, Placeholder
from pytest_exportcheck.containment.failures import describe_exception
from pytest_exportcheck.spec import Case


def retrace_findings(case: Case, record: CaptureRecord) -> list[str]:
    from pytest_exportcheck.capture.chains import retraced_program
    from pytest_exportcheck.capture.export import ProgramRecord, normalize_signature

    if not isinstance(record, ProgramRecord) or not case.names_step("retrace"):
        return []
    try:
        retraced = retraced_program(record)
        theirs = normalize_signature(retraced, record.subject, record.captured_model)
    except Exception as exc:  # parity reports the retrace's own failure in full
        return [describe_exception(exc, context=f"retrace of {record.capture} raised")]
    groups = record.subject.tensor_groups
    return signature_differences(record.placeholders, theirs, record.capture, groups)


def signature_differences(
    original: list[Placeholder],
    retraced: list[Placeholder],
    capture: str,
    groups: dict[str, tuple[str, ...]],
) -> list[str]:
    def state(placeholders: list[Placeholder]) -> dict[tuple[str, str], str]:
        return {
            (p.kind, min(groups.get(p.target, (p.target,)))): p.target
            for p in placeholders
            if p.kind in STATE_KINDS and p.kind != "constant" and p.target
        }

    def constants(placeholders: list[Placeholder]) -> int:
        return sum(p.kind == "constant" for p in placeholders)

    def user_inputs(placeholders: list[Placeholder]) -> list[str]:
        return [str(p.target) for p in placeholders if p.kind == "user_input"]

    mine, theirs = state(original), state(retraced)
    where = f"retrace of {capture}"
    findings = [
        f"{where}: lifts no {kind} {mine[(kind, group)]}, which the capture lifts"
        for kind, group in sorted(mine.keys() - theirs.keys())
    ]
    findings += [
        f"{where}: lifts {kind} {theirs[(kind, group)]}, which the capture does not"
        for kind, group in sorted(theirs.keys() - mine.keys())
    ]
    if constants(original) != constants(retraced):
        findings.append(
            f"{where}: lifts {constants(retraced)} constant(s), where the capture lifts "
            f"{constants(original)}"
        )
    if user_inputs(original) != user_inputs(retraced):
        findings.append(
            f"{where}: takes user inputs {user_inputs(retraced)}, where the capture takes "
            f"{user_inputs(original)}"
        )
    return findings
