r"""Reading a capture's symbolic shapes without changing the program.

A placeholder's ``meta["val"]`` holds ``SymInt`` sizes for dynamic dims. Comparing
one with an int (``size == 4``, ``tuple(shape) != (4, 8)``) evaluates the
expression in the program's ``ShapeEnv``, which *records a guard*: the dim is
specialized in every program made from ``ep`` afterwards, and ``ep.module()``
then refuses every other size. So sizes are only ever inspected here: is it a
``SymInt``, which symbol, which range did export record for it.

Where a guard narrowed a range, the program's ``ShapeEnv`` (reachable from any
of its ``SymInt``\ s) remembers where: ``var_to_range_sloc[s0].lower`` is the
frame of the guard that raised the lower bound::

    if x.shape[0] > 4:      # model.py:12 in forward  -> s0: [2, 64] became [5, 64]
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch.utils._sympy.numbers import int_oo

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement


@dataclass(frozen=True)
class KeptDim:
    """How a capture kept one declared placement."""

    kind: str  # "symbolic", "static" or "absent" (no tensor placeholder for the input)
    size: int | None = None  # static: the size export baked in
    range: tuple[int, int | str] | None = None  # symbolic: ep.range_constraints, if any
    expr: str | None = None  # symbolic: the expression when it is not one symbol (2*s0)
    # symbolic: the user frame of the guard that set each bound, where it was user code
    lower_at: str | None = None
    upper_at: str | None = None

    def describe(self) -> str:
        """``symbolic [1, 64]``, ``symbolic 2*s0``, ``symbolic``, ``static 4``, or absent."""
        if self.kind == "static":
            return f"static {self.size}"
        if self.kind == "absent":
            return "no placeholder"
        if self.range is not None:
            return f"symbolic [{self.range[0]}, {self.range[1]}]"
        return f"symbolic {self.expr}" if self.expr else "symbolic"


def kept_dims(record: CaptureRecord, spec: DynamicSpec) -> dict[Placement, KeptDim]:
    """Each placement as ``record``'s graph keeps it. Ranges come from
    ``ep.range_constraints``; a Dynamo graph has none, so its ``ShapeEnv``'s, where
    a declared min below 2 reads as declared (the ``ShapeEnv`` assumes every
    backed size is at least 2, as export's own ranges undo: 0/1 specialization)."""
    program = getattr(record, "program", None)  # its graph, where the ranges belong
    graph = getattr(program, "graph_module", None) or getattr(record, "graph_module", None)
    nodes: dict[str, Any] = {}
    for node in [] if graph is None else graph.graph.find_nodes(op="placeholder"):
        # Records name a placeholder by its node name (export) or target (Dynamo: L_x_).
        nodes[node.name] = nodes[str(node.target)] = node
    names = {p.target: p.name for p in record.placeholders if p.kind == "user_input"}
    ranges: Any = getattr(program, "range_constraints", {})
    kept: dict[Placement, KeptDim] = {}
    symbols: dict[str, str] = {}  # s27 -> batch: torch numbers symbols differently per version
    for placement in spec.placements:
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
        if expr.is_number:  # a SymInt a guard replaced by a constant: specialized
            kept[placement] = KeptDim("static", size=int(expr))
            continue
        if expr.is_symbol:
            symbols.setdefault(str(expr), placement.dim)
        if not expr.is_symbol:
            kept[placement] = KeptDim("symbolic", expr=str(expr))
            continue
        shape_env = size.node.shape_env
        bounds = ranges.get(expr) if program is not None else shape_env.var_to_range.get(expr)
        if bounds is None:
            kept[placement] = KeptDim("symbolic")
            continue
        lowest = _bound(bounds.lower)
        lower = lowest if isinstance(lowest, int) else 0
        if program is None and lower == 2 and placement.dim in spec.named:
            lower = min(lower, spec.named[placement.dim].min)
        upper = _bound(bounds.upper)
        where = getattr(shape_env, "var_to_range_sloc", {}).get(expr)
        kept[placement] = KeptDim(
            "symbolic",
            range=(lower, upper),
            lower_at=user_frame(getattr(where, "lower", None)),
            upper_at=user_frame(getattr(where, "upper", None)),
        )
    # A derived dim reads in the case's names (2*seq), the same on every torch.
    for placement, dim in kept.items():
        if dim.expr is not None:
            named = re.sub(r"\bs\d+\b", lambda m: symbols.get(m[0], "s"), dim.expr)
            kept[placement] = KeptDim("symbolic", expr=named)
    return kept


def _bound(value: Any) -> int | str:
    """A range bound as an int, or ``"inf"`` for an unbounded one.

    Export writes "no upper bound" as torch's ``int_oo`` (``IntInfinity``), which
    sympy calls finite (``int_oo.is_finite`` is True: it is an integer) and whose
    ``int()`` raises ``AttributeError: 'Infinity' object has no attribute '_mpf_'``;
    a Dynamo graph's ``ShapeEnv`` can hold ``sympy.oo``. Both are infinite here.
    """
    if value in (int_oo, -int_oo, sympy.oo, -sympy.oo) or value.is_infinite:
        return "inf"
    return int(value)


_TORCH_DIR = os.path.dirname(torch.__file__)


def user_frame(sloc: Any) -> str | None:
    """``model.py:12 in forward (if x.shape[0] > 4:)`` for a guard's ``SLoc`` (torch's
    ``torch._guards.SLoc``), None where torch set the bound itself.

    Strict export keeps the user frame as text (``"CODE  # FILE:LINE in FN"``);
    non-strict export has the user's ``FrameSummary`` as the framework frame.
    """
    if sloc is None:
        return None
    text = getattr(sloc, "maybe_user_loc", None)
    if isinstance(text, str) and "  # " in text:
        code, where = text.rsplit("  # ", 1)
        path, _, rest = where.partition(":")
        if rest and not os.path.exists(path):
            # torch shortens the path by the prefix it shares with torch's own, and can
            # cut into a name (/tmp/m.py -> mp/m.py): the file name alone is honest.
            where = f"{os.path.basename(path)}:{rest}"
        return f"{where} ({code.strip()})"
    frame = getattr(sloc, "framework_loc", None)
    if isinstance(frame, traceback.FrameSummary) and not frame.filename.startswith(_TORCH_DIR):
        where = f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"
        return f"{where} ({frame.line.strip()})" if frame.line else where
    return None


def same_static_shape(graph_shape: Any, shape: Any) -> bool:
    """Whether a placeholder's shape is ``shape``, its symbolic dims left to ``shapes``."""
    if len(graph_shape) != len(shape):
        return False
    return all(
        isinstance(want, torch.SymInt) or int(want) == int(got)
        for want, got in zip(graph_shape, shape, strict=True)
    )
