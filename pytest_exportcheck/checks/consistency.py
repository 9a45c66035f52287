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
"""

from __future__ import annotations

import fnmatch
import warnings

import torch

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord, DecompositionError
from pytest_exportcheck.capture.symbolic import kept_dims
from pytest_exportcheck.checks.differences import classify, unread_state
from pytest_exportcheck.checks.signature import is_traced_constant
from pytest_exportcheck.compare_values import Tolerance, compare_trees
from pytest_exportcheck.failures import ExportCheckWarning, describe_exception
from pytest_exportcheck.runs import run_steps
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.versions import accept_notes

Table = dict[str, dict[str, str]]  # row -> capture -> cell
NOT_COMPARED = "n/a"
CELL_WIDTH = 48


def consistency_table(case: Case, records: dict[str, CaptureRecord]) -> Table:
    """Every row of the table, differing or not (the scaffold reads it to write accepts)."""
    table: Table = {}
    table.update(_lifted(records))
    table.update(_mutated(records))
    table.update(_user_inputs(records))
    table.update(_dynamic_dims(case, records))
    table.update(_outputs(case, records))
    return table


def differing_rows(table: Table) -> list[str]:
    return [row for row, cells in table.items() if _differs(cells)]


def check_consistency(
    case: Case, records: dict[str, CaptureRecord], left_out: dict[str, str]
) -> list[str]:
    table = consistency_table(case, records)
    differing = differing_rows(table)
    accepted = {a.row: a for a in case.expect.accepted_differences}
    undeclared = [r for r in differing if not any(fnmatch.fnmatchcase(r, a) for a in accepted)]
    for pattern in accepted:
        if not any(fnmatch.fnmatchcase(row, pattern) for row in differing):
            # Attributed to the YAML line, so the warnings summary points there.
            warnings.warn_explicit(
                ExportCheckWarning(
                    f"{case.at(case.expect.consistency_line)}: accepted difference {pattern!r} "
                    f"did not occur between {', '.join(records)}: remove it from "
                    "expect.consistency.accept"
                ),
                ExportCheckWarning,
                filename=str(case.path),
                lineno=case.expect.consistency_line or case.line,
            )
    if not undeclared:
        return []
    subject = next(iter(records.values())).subject
    known, unexplained = classify(undeclared, table, unread_state(subject))
    header = f"captures disagree on {len(undeclared)} row(s) not in expect.consistency.accept"
    if left_out:
        header += "; left out: " + "; ".join(
            f"{capture} ({_first_line(why)})" for capture, why in left_out.items()
        )
    parts = [header + ":"]
    if unexplained:
        parts.append(render_table(unexplained, table, list(records)))
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


def _lifted(records: dict[str, CaptureRecord]) -> Table:
    """Per alias group of eager tensors: the names each capture lifts it under."""
    rows: Table = {}
    for capture, record in records.items():
        groups = record.subject.tensor_groups
        lifted: dict[str, list[str]] = {}
        for p in record.placeholders:
            if p.kind not in STATE_KINDS or not p.target or is_traced_constant(p.target):
                continue
            key = groups.get(p.target, (p.target,))[0]
            lifted.setdefault(key, []).append(f"{p.kind} {p.target}")
        for key, names in lifted.items():
            rows.setdefault(f"lifted: {key}", {})[capture] = ", ".join(names)
    for cells in rows.values():
        for capture in records:
            cells.setdefault(capture, "—")
    return dict(sorted(rows.items()))


def _mutated(records: dict[str, CaptureRecord]) -> Table:
    recorded: dict[str, set[str] | str] = {}
    for capture, record in records.items():
        try:
            mutations = record.mutations()
        except DecompositionError:
            recorded[capture] = f"{NOT_COMPARED} (run_decompositions raised)"
            continue
        if mutations is None:
            recorded[capture] = f"{NOT_COMPARED} (no records)"
            continue
        groups = record.subject.tensor_groups
        names = {
            f"mutated: {groups.get(fqn, (fqn,))[0]}"
            for fqn in mutations.buffers | mutations.parameters
        }
        names |= {f"mutated input: {path}" for path in mutations.user_inputs}
        recorded[capture] = names
    rows = sorted({row for names in recorded.values() if isinstance(names, set) for row in names})
    return {
        row: {
            capture: names if isinstance(names, str) else ("yes" if row in names else "no")
            for capture, names in recorded.items()
        }
        for row in rows
    }


def _user_inputs(records: dict[str, CaptureRecord]) -> Table:
    """The tensor user inputs each capture takes, in order. A capture that drops inputs
    forward never reads (Dynamo, which the signature check accepts too) is not a
    disagreement where it takes the others' inputs less some: its cell says which."""
    taken = {}
    for capture, record in records.items():
        tensors = {path for path, v in record.subject.flat_inputs if isinstance(v, torch.Tensor)}
        taken[capture] = [
            p.target or f"? ({p.name})"
            for p in record.placeholders
            if p.kind == "user_input" and (p.target in tensors or p.target is None)
        ]
    full = next(
        (paths for capture, paths in taken.items() if not records[capture].drops_unread_inputs),
        None,
    )
    cells = {}
    for capture, paths in taken.items():
        text = ", ".join(paths) or "(none)"
        dropped = [p for p in full or [] if p not in paths]
        kept_in_order = [p for p in full or [] if p in paths] == paths
        if records[capture].drops_unread_inputs and dropped and kept_in_order:
            text = f"{NOT_COMPARED}: {text or '(none)'}; drops unread {', '.join(dropped)}"
        cells[capture] = text
    return {"user inputs": cells}


def _dynamic_dims(case: Case, records: dict[str, CaptureRecord]) -> Table:
    """Per declared placement: whether each capture keeps the dim symbolic (ranges are the
    shapes check's: Dynamo graphs record none, which is no disagreement)."""
    if case.dynamic is None:
        return {}
    rows: Table = {}
    for capture, record in records.items():
        for placement, kept in kept_dims(record, case.dynamic).items():
            row = f"dynamic: {placement.describe()} ({placement.dim})"
            cell = {"symbolic": "symbolic", "absent": f"{NOT_COMPARED} (no placeholder)"}
            rows.setdefault(row, {})[capture] = cell.get(kept.kind, kept.describe())
    return rows


def _outputs(case: Case, records: dict[str, CaptureRecord]) -> Table:
    """One call of each capture's first way of running, against the first capture's."""
    tolerance = Tolerance.of_case(case)
    outputs = {}
    cells = {}
    for capture, record in records.items():
        runnable = record.runnables()[0]
        try:
            call, module = runnable.make()
            subject = record.subject
            (step,) = run_steps(
                call, subject.inputs_copy(), steps=1, seed=case.seed, state_of=module,
                frozen=subject.frozen_values,
            )  # fmt: skip
        except Exception as exc:
            cells[capture] = describe_exception(exc, context=f"{runnable.label} raised")
            continue
        outputs[capture] = step.output
    reference = next(iter(outputs), None)
    for capture, output in outputs.items():
        if capture == reference:
            cells[capture] = "reference"
            continue
        problems = compare_trees(
            outputs[reference], output, tolerance=tolerance, names=(reference, capture)
        )
        cells[capture] = problems[0] if problems else f"= {reference}"
    return {"outputs": {capture: cells[capture] for capture in records}}


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
