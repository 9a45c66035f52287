"""consistency: a case's captures agree with each other once normalized.

One item per case and device compares every capture the case lists. Each
aspect becomes rows of a table, one column per capture; for a tied LM head::

    row                 export                                export-strict  dynamo
    lifted: emb.weight  parameter emb.weight, parameter ...   parameter ...  parameter emb.weight
    mutated: count      yes                                   yes            n/a (no records)
    user inputs         args[0]                               args[0]        args[0]
    outputs             reference                             = export       = export

Rows: which eager tensors (by alias group) each capture lifts and under which
names; which state and inputs its mutation records name (paths without records
are ``n/a`` and do not count); the tensor user inputs in order; outputs of one
call, each compared with the first capture's. A row whose cells differ fails
the item unless ``expect.consistency.accept`` names it (wildcards allowed);
an accepted row that no longer differs is reported as a warning.

The table is built from one :class:`CaptureSummary` per capture, which needs
only that capture (and its subject): under xdist each capture's worker writes
its summary where it ran, and the consistency item compares the summaries
(``capture_summaries.py``), so a case's captures need not share one worker.
"""

from __future__ import annotations

import fnmatch
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord, DecompositionError
from pytest_exportcheck.capture.symbolic import kept_dims
from pytest_exportcheck.checks.differences import classify, unread_state
from pytest_exportcheck.checks.retraced import retrace_findings
from pytest_exportcheck.checks.usage_scopes import is_traced_constant
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import ExportCheckWarning, describe_exception
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.versions import accept_notes

if TYPE_CHECKING:
    from pytest_exportcheck.model.subject import Subject

Table = dict[str, dict[str, str]]  # row -> capture -> cell
NOT_COMPARED = "n/a"
CELL_WIDTH = 48


@dataclass
class CaptureSummary:
    """What one capture contributes to the table, computed from that capture alone.

    Picklable (its output is a tree of tensors), so the worker that made the capture
    can hand it to the worker that runs the consistency item.
    """

    lifted: dict[str, str]  # row -> this capture's cell
    mutated: set[str] | str  # the rows it records as mutated, or why it records none
    user_inputs: list[str]  # the tensor user inputs it takes, in order
    drops_unread_inputs: bool
    dynamic: dict[str, str] = field(default_factory=dict)  # row -> cell, declared dims only
    output: Any = None  # one call's output; ``output_error`` instead when the call raised
    output_error: str | None = None
    retraced: list[str] = field(default_factory=list)  # how its retrace differs (retraced.py)


def summarize(case: Case, record: CaptureRecord) -> CaptureSummary:
    """One capture's cells and output: all the table needs of it."""
    output, error = _one_call(case, record)
    return CaptureSummary(
        lifted=_lifted(record),
        mutated=_mutated(record),
        user_inputs=_user_inputs(record),
        drops_unread_inputs=record.drops_unread_inputs,
        dynamic=_dynamic_dims(case, record),
        output=output,
        output_error=error,
        retraced=retrace_findings(case, record),
    )


def consistency_table(case: Case, records: dict[str, CaptureRecord]) -> Table:
    """Every row of the table, differing or not (the scaffold reads it to write accepts)."""
    return table_of(case, {capture: summarize(case, r) for capture, r in records.items()})


def table_of(case: Case, summaries: dict[str, CaptureSummary]) -> Table:
    """The table, one column per capture in the case's order."""
    table: Table = {}
    table.update(_lifted_rows(summaries))
    table.update(_mutated_rows(summaries))
    table.update(_user_input_rows(summaries))
    table.update(_dynamic_rows(summaries))
    table.update(_output_rows(case, summaries))
    return table


def differing_rows(table: Table) -> list[str]:
    return [row for row, cells in table.items() if _differs(cells)]


def check_consistency(
    case: Case, summaries: dict[str, CaptureSummary], left_out: dict[str, str], subject: Subject
) -> list[str]:
    """Findings of the consistency item; ``subject`` is the case's eager side on the device."""
    retraced = [line for summary in summaries.values() for line in summary.retraced]
    if len(summaries) < 2:  # a capture and its retrace only
        return retraced
    return retraced + _table_findings(case, summaries, left_out, subject)


def _table_findings(
    case: Case, summaries: dict[str, CaptureSummary], left_out: dict[str, str], subject: Subject
) -> list[str]:
    table = table_of(case, summaries)
    differing = differing_rows(table)
    accepted = {a.row: a for a in case.expect.accepted_differences}
    undeclared = [r for r in differing if not any(fnmatch.fnmatchcase(r, a) for a in accepted)]
    for pattern in accepted:
        if not any(fnmatch.fnmatchcase(row, pattern) for row in differing):
            # Attributed to the YAML line, so the warnings summary points there.
            warnings.warn_explicit(
                ExportCheckWarning(
                    f"{case.at(case.expect.consistency_line)}: accepted difference {pattern!r} "
                    f"did not occur between {', '.join(summaries)}: remove it from "
                    "expect.consistency.accept"
                ),
                ExportCheckWarning,
                filename=str(case.path),
                lineno=case.expect.consistency_line or case.line,
            )
    if not undeclared:
        return []
    known, unexplained = classify(undeclared, table, unread_state(subject), subject.tensor_groups)
    header = f"captures disagree on {len(undeclared)} row(s) not in expect.consistency.accept"
    if left_out:
        header += "; left out: " + "; ".join(
            f"{capture} ({_first_line(why)})" for capture, why in left_out.items()
        )
    parts = [header + ":"]
    if unexplained:
        parts.append(render_table(unexplained, table, list(summaries)))
    if known:
        parts.append("known differences, each with the accept entry that silences it:")
        parts += ["  " + k.render().replace("\n", "\n  ") for k in known]
    notes = accept_notes(case, undeclared)
    return ["\n".join([*parts, *notes])]


def _first_line(text: str, limit: int = 100) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _differs(cells: dict[str, str]) -> bool:
    compared = {text for text in cells.values() if not text.startswith(NOT_COMPARED)}
    if "reference" in compared:  # the outputs row: a cell differs when it is not "= ..."
        return any(not t.startswith("= ") for t in compared if t != "reference")
    return len(compared) > 1


def _lifted(record: CaptureRecord) -> dict[str, str]:
    """Per alias group of eager tensors: the names this capture lifts it under."""
    groups = record.subject.tensor_groups
    lifted: dict[str, list[str]] = {}
    for p in record.placeholders:
        if p.kind not in STATE_KINDS or not p.target or is_traced_constant(p.target):
            continue
        key = groups.get(p.target, (p.target,))[0]
        lifted.setdefault(key, []).append(f"{p.kind} {p.target}")
    return {f"lifted: {key}": ", ".join(names) for key, names in lifted.items()}


def _lifted_rows(summaries: dict[str, CaptureSummary]) -> Table:
    rows: Table = {}
    for capture, summary in summaries.items():
        for row, cell in summary.lifted.items():
            rows.setdefault(row, {})[capture] = cell
    for cells in rows.values():
        for capture in summaries:
            cells.setdefault(capture, "—")
    return dict(sorted(rows.items()))


def _mutated(record: CaptureRecord) -> set[str] | str:
    try:
        mutations = record.mutations()
    except DecompositionError:
        return f"{NOT_COMPARED} (run_decompositions raised)"
    if mutations is None:
        return f"{NOT_COMPARED} (no records)"
    groups = record.subject.tensor_groups
    names = {
        f"mutated: {groups.get(fqn, (fqn,))[0]}" for fqn in mutations.buffers | mutations.parameters
    }
    return names | {f"mutated input: {path}" for path in mutations.user_inputs}


def _mutated_rows(summaries: dict[str, CaptureSummary]) -> Table:
    recorded = {capture: summary.mutated for capture, summary in summaries.items()}
    rows = sorted({row for names in recorded.values() if isinstance(names, set) for row in names})
    return {
        row: {
            capture: names if isinstance(names, str) else ("yes" if row in names else "no")
            for capture, names in recorded.items()
        }
        for row in rows
    }


def _user_inputs(record: CaptureRecord) -> list[str]:
    tensors = {path for path, v in record.subject.flat_inputs if isinstance(v, torch.Tensor)}
    return [
        p.target or f"? ({p.name})"
        for p in record.placeholders
        if p.kind == "user_input" and (p.target in tensors or p.target is None)
    ]


def _user_input_rows(summaries: dict[str, CaptureSummary]) -> Table:
    """The tensor user inputs each capture takes, in order. A capture that drops inputs
    forward never reads (Dynamo, which the signature check accepts too) is not a
    disagreement where it takes the others' inputs less some: its cell says which."""
    full = next((s.user_inputs for s in summaries.values() if not s.drops_unread_inputs), None)
    cells = {}
    for capture, summary in summaries.items():
        paths = summary.user_inputs
        text = ", ".join(paths) or "(none)"
        dropped = [p for p in full or [] if p not in paths]
        kept_in_order = [p for p in full or [] if p in paths] == paths
        if summary.drops_unread_inputs and dropped and kept_in_order:
            text = f"{NOT_COMPARED}: {text or '(none)'}; drops unread {', '.join(dropped)}"
        cells[capture] = text
    return {"user inputs": cells}


def _dynamic_dims(case: Case, record: CaptureRecord) -> dict[str, str]:
    """Per declared placement: whether this capture keeps the dim symbolic (ranges are the
    shapes check's: Dynamo graphs record none, which is no disagreement)."""
    if case.dynamic is None:
        return {}
    cells = {}
    for placement, kept in kept_dims(record, case.dynamic).items():
        row = f"dynamic: {placement.describe()} ({placement.dim})"
        cell = {"symbolic": "symbolic", "absent": f"{NOT_COMPARED} (no placeholder)"}
        cells[row] = cell.get(kept.kind, kept.describe())
    return cells


def _dynamic_rows(summaries: dict[str, CaptureSummary]) -> Table:
    rows: Table = {}
    for capture, summary in summaries.items():
        for row, cell in summary.dynamic.items():
            rows.setdefault(row, {})[capture] = cell
    return rows


def _one_call(case: Case, record: CaptureRecord) -> tuple[Any, str | None]:
    """One call of the capture's first way of running: its output, or what it raised."""
    runnable = record.runnables()[0]
    try:
        call, module = runnable.make()
    except Exception as exc:
        return None, describe_exception(exc, context=f"{runnable.label} raised")
    try:
        subject = record.subject
        (step,) = subject.run(call, subject.inputs_copy(), steps=1, state_of=module)
    except Exception as exc:
        return None, describe_exception(exc, context=f"{runnable.label} raised")
    finally:
        # Made again, a runnable is reset to the capture's state as made: under xdist this
        # call comes first, and a Dynamo graph module runs on the record's own tensors,
        # which the signature check reads after it.
        runnable.make()
    return step.output, None


def _output_rows(case: Case, summaries: dict[str, CaptureSummary]) -> Table:
    """Each capture's output against the first capture's that has one."""
    tolerance = Tolerance.of_case(case)
    outputs = {c: s.output for c, s in summaries.items() if s.output_error is None}
    reference = next(iter(outputs), None)
    cells = {}
    for capture, summary in summaries.items():
        if summary.output_error is not None:
            cells[capture] = summary.output_error
        elif capture == reference:
            cells[capture] = "reference"
        else:
            problems = compare_trees(
                outputs[reference], summary.output, tolerance=tolerance, names=(reference, capture)
            )
            cells[capture] = problems[0] if problems else f"= {reference}"
    return {"outputs": cells}


def render_table(rows: list[str], table: Table, captures: list[str]) -> str:
    """Rows by captures, columns padded; long cells cut at ``CELL_WIDTH``."""

    def cut(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"

    lines = [["row", *captures]] + [
        [row, *(cut(table[row].get(c, "")) for c in captures)] for row in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
