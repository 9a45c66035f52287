"""Reading a capture's symbolic shapes without changing the program.

A placeholder's ``meta["val"]`` holds ``SymInt`` sizes for dynamic dims. Comparing
one with an int (``size == 4``, ``tuple(shape) != (4, 8)``) evaluates the
expression in the program's ``ShapeEnv``, which *records a guard*: the dim is
specialized in every program made from ``ep`` afterwards, and ``ep.module()``
then refuses every other size. So sizes are only ever inspected here: is it a
``SymInt``, which symbol, which range did export record for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.spec.dynamic import Placement


@dataclass(frozen=True)
class KeptDim:
    """How a capture kept one declared placement."""

    kind: str  # "symbolic", "static" or "absent" (no tensor placeholder for the input)
    size: int | None = None  # static: the size export baked in
    range: tuple[int, int | str] | None = None  # symbolic: ep.range_constraints, if any
    expr: str | None = None  # symbolic: the expression when it is not one symbol (2*s0)

    def describe(self) -> str:
        """``symbolic [1, 64]``, ``symbolic 2*s0``, ``symbolic``, ``static 4``, or absent."""
        if self.kind == "static":
            return f"static {self.size}"
        if self.kind == "absent":
            return "no placeholder"
        if self.range is not None:
            return f"symbolic [{self.range[0]}, {self.range[1]}]"
        return f"symbolic {self.expr}" if self.expr else "symbolic"


def kept_dims(record: CaptureRecord, placements: tuple[Placement, ...]) -> dict[Placement, KeptDim]:
    """Each placement as ``record``'s graph keeps it (Dynamo graphs have no ranges)."""
    program = getattr(record, "program", None)  # its graph, where the ranges belong
    graph = getattr(program, "graph_module", None) or getattr(record, "graph_module", None)
    nodes = {} if graph is None else {n.name: n for n in graph.graph.nodes}
    names = {p.target: p.name for p in record.placeholders if p.kind == "user_input"}
    ranges: Any = getattr(program, "range_constraints", {})
    kept: dict[Placement, KeptDim] = {}
    symbols: dict[str, str] = {}  # s27 -> batch: torch numbers symbols differently per version
    for placement in placements:
        node = nodes.get(names.get(placement.path, ""))
        meta = {} if node is None else node.meta
        value = meta.get("val", meta.get("example_value"))
        if not isinstance(value, torch.Tensor) or placement.index >= value.dim():
            kept[placement] = KeptDim("absent")
            continue
        size = value.shape[placement.index]
        if not isinstance(size, torch.SymInt):
            kept[placement] = KeptDim("static", size=int(size))
            continue
        expr = size.node.expr
        if expr.is_symbol:
            symbols.setdefault(str(expr), placement.dim)
        bounds = ranges.get(expr) if expr.is_symbol else None
        if bounds is None:
            kept[placement] = KeptDim("symbolic", expr=None if expr.is_symbol else str(expr))
            continue
        upper: int | str = int(bounds.upper) if bounds.upper.is_finite else "inf"
        kept[placement] = KeptDim("symbolic", range=(int(bounds.lower), upper))
    # A derived dim reads in the case's names (2*seq), the same on every torch.
    for placement, dim in kept.items():
        if dim.expr is not None:
            named = re.sub(r"\bs\d+\b", lambda m: symbols.get(m[0], "s"), dim.expr)
            kept[placement] = KeptDim("symbolic", expr=named)
    return kept


def same_static_shape(graph_shape: Any, shape: Any) -> bool:
    """Whether a placeholder's shape is ``shape``, its symbolic dims left to ``shapes``."""
    if len(graph_shape) != len(shape):
        return False
    return all(
        isinstance(want, torch.SymInt) or int(want) == int(got)
        for want, got in zip(graph_shape, shape, strict=True)
    )
