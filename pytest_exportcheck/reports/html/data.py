"""The data the HTML page is drawn from: the report, its matrix layout, the versions table.

The page's script draws every view from one JSON object; this module makes it.
The grid's rows, columns, order and check letters come from ``matrix.py``, the
same as the terminal and Markdown matrix, so the three never disagree about
where an item sits; the script only places each item at its ``[row, column]``.
Plain JSON in and out, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from pytest_exportcheck.reports import matrix as matrix_mod
from pytest_exportcheck.reports import repro_outcomes
from pytest_exportcheck.reports.results import OUTCOMES, ItemResult
from pytest_exportcheck.spec.case import LOWERED_CHECKS

_RESULT_FIELDS = tuple(f.name for f in fields(ItemResult))


def page_data(
    doc: Mapping[str, Any],
    versions: Mapping[str, Any] | None,
    scripts: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Everything the page shows. ``versions``: see :func:`versions_view`; None when the
    case files' recordings were not looked for (the page says so). ``scripts``: the
    reproduction scripts by path (``files.scripts_view``)."""
    items = [_with_reproduction(item) for item in doc.get("items", [])]
    layout = _layout(items)
    return finite(
        {
            "run": doc.get("run", {}),
            "totals": doc.get("totals", {}),
            "gaps": doc.get("gaps"),
            "items": items,
            "comparison": doc.get("comparison"),
            "matrix": layout,
            "versions": versions,
            "outcomes": list(OUTCOMES),
            "symbols": matrix_mod.SYMBOLS,
            "scripts": dict(scripts or {}),
            "contradicted": sum(bool(item.get("repro_contradicts")) for item in items),
        }
    )


def _with_reproduction(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """The item, with its reproduction's outcome in the reports' words (``repro_said``)
    and whether plain torch contradicts its verdict, where it has one."""
    if not repro_outcomes.has_reproduction(item):
        return item
    outcome = item.get("repro_outcome")
    return {
        **item,
        "repro_said": repro_outcomes.described(outcome),
        "repro_contradicts": repro_outcomes.contradicts(outcome),
    }


def _result(item: Mapping[str, Any]) -> ItemResult:
    # Fields a newer report adds (where, tolerance, text) are not the matrix's concern.
    values = {name: item.get(name) for name in _RESULT_FIELDS}
    values["duration"] = values["duration"] or 0.0
    return ItemResult(**values)


def _layout(items: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The grid: its rows and columns as ``matrix.build`` orders them, and each item's
    ``[row, column]`` (column -1: a broken case's row, which has one wide cell).

    Unlike the text matrix, a column no item has (a check a capture path never ran)
    is left out: the page has no alignment to keep, and 15 checks under 5 paths are
    too wide to show empty. Lowering is a case's choice (``lower:``), so a column of a
    target (``lowered``) is empty in every row of a case that lowers nothing; such a
    row (``lowers`` false) draws those columns as one blank span instead of a cell
    each, and the grid stays aligned.
    """
    results = [_result(item) for item in items]
    matrix = matrix_mod.build(results)
    row_index = {(r.file, r.case, r.device): i for i, r in enumerate(matrix.rows)}
    used: set[tuple[str, str]] = set()
    lowering_rows: set[int] = set()
    keys: list[tuple[int, tuple[str, str] | None]] = []
    for result in results:
        device = None if result.broken else result.device
        row = row_index[(result.file, matrix_mod.row_label(result), device)]
        if result.broken:
            keys.append((row, None))
            continue
        assert result.check is not None
        column = (
            ("", matrix_mod.CONSISTENCY)
            if result.check == matrix_mod.CONSISTENCY
            else (result.capture or "?", result.check)
        )
        used.add(column)
        keys.append((row, column))
        if result.check in LOWERED_CHECKS:
            lowering_rows.add(row)
    order = [(capture, check) for capture in matrix.captures for check in matrix.checks]
    if matrix.consistency:
        order.append(("", matrix_mod.CONSISTENCY))
    columns = [column for column in order if column in used]
    column_index = {column: i for i, column in enumerate(columns)}
    return {
        "columns": [
            {
                "capture": capture,
                "check": check,
                "letter": matrix.letters[check],
                "lowered": check in LOWERED_CHECKS,
            }
            for capture, check in columns
        ],
        "devices": matrix.devices,
        "per_device": matrix.per_device,
        "rows": [_row(r, i in lowering_rows) for i, r in enumerate(matrix.rows)],
        "cells": [[row, -1 if column is None else column_index[column]] for row, column in keys],
    }


def _row(row: matrix_mod.Row, lowers: bool) -> dict[str, Any]:
    return {
        "file": row.file, "case": row.case, "line": row.line, "device": row.device,
        "broken": row.broken, "lowers": lowers,
    }  # fmt: skip


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as strings: a report may hold them (a parity
    error of ``inf``), and the browser's JSON.parse refuses them as numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {key: finite(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
