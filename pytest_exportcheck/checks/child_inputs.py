"""What an unflattened child's graph takes, told against the call eager made.

A child that raises on eager's arguments usually takes something eager's call does
not pass: its parent hands it a size it reads (measured on torch 2.13, a
``sym_size_int_1`` placeholder, also under ``preserve_module_call_signature``), or
a buffer or parameter of another module that it reads (``b_scale``, a placeholder
of the root's own name). The graph's placeholders say which: a ``SymInt`` is a
size, a name the program's signature lifts is that state. A tensor the parent
computes has no such mark; where the graph takes more inputs than eager passes and
none is marked, this says it cannot tell which.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.listdiff import capped

# An error's first line in a finding: enough to recognise, not a page of torch's text.
MAX_ERROR = 200


def short_error(exc: BaseException, first_line: str) -> str:
    """``RuntimeError: Expected ...``, its first line capped at ``MAX_ERROR``."""
    line = first_line if len(first_line) <= MAX_ERROR else first_line[: MAX_ERROR - 1] + "…"
    return f"{type(exc).__name__}: {line}"


def graph_inputs(target: torch.nn.Module, call_inputs: Any, program: Any) -> str:
    """``(b_scale, x); besides eager's arguments it takes the buffer 'scale' (b_scale)``:
    the child's inputs by its own names and, where they can be told, those eager's
    call does not pass."""
    names = list(getattr(target, "arg_names", None) or [])
    taken = f"({capped(names)})"
    graph = getattr(target, "graph", None)
    if graph is None:
        return taken
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    extras = [
        f"a size its parent reads ({node.name})"
        for node in placeholders
        if isinstance(node.meta.get("val"), torch.SymInt)
    ]
    extras += lifted_inputs(target, program)
    passed = sum(
        isinstance(leaf, (torch.Tensor, int, float, bool))
        for leaf in pytree.tree_leaves(call_inputs)
    )
    if extras:
        return f"{taken}; besides eager's arguments it takes {capped(extras, sep='; ')}"
    if len(placeholders) > passed:
        return (
            f"{taken}: {len(placeholders)} inputs where eager passes {passed}, and which "
            "are not eager's cannot be told (no size or lifted state among them)"
        )
    return taken


def lifted_inputs(target: torch.nn.Module, program: Any) -> list[str]:
    """``the buffer 'scale' (b_scale)`` for each state of the program the child's graph
    takes as an input: another module's state it reads, which its parent passes in
    (also under ``preserve_module_call_signature``, measured on torch 2.13)."""
    graph = getattr(target, "graph", None)
    lifted = _lifted(program)
    nodes = [] if graph is None else graph.nodes
    return [
        f"{lifted[node.name]} ({node.name})"
        for node in nodes
        if node.op == "placeholder" and node.name in lifted
    ]


def _lifted(program: Any) -> dict[str, str]:
    """Placeholder name → ``the buffer 'scale'``, for the state the program lifts."""
    signature = getattr(program, "graph_signature", None)
    if signature is None:
        return {}
    kinds = (
        ("parameter", signature.inputs_to_parameters),
        ("buffer", signature.inputs_to_buffers),
        ("constant", signature.inputs_to_lifted_tensor_constants),
    )
    return {name: f"the {kind} {fqn!r}" for kind, table in kinds for name, fqn in table.items()}
