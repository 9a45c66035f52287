"""Each submodule of ``unflatten(ep)`` run on its own: the hierarchy check's per-call part.

The unflatten bugs users report most are submodules that are wrong when run
alone while the whole model is right: a submodule called twice, shared weights
mapped to one name, a root buffer passed into layers (pytorch/pytorch#132993,
#137013, #125192, #127643). PyTorch's own ``test_unflatten.py`` calls every
submodule. So every call eager makes to a submodule is recorded with hooks
(``localize.py``), and the same submodule of ``unflatten(ep)`` is called on
those very inputs::

    eager:      blocks.1(x1) -> y1          unflattened: blocks.1(x1) -> y1'   y1 == y1'?

Where one module's calls were traced into different graphs, unflatten keeps the
first as ``act`` and the next as ``act@1``: calls are matched to them by
position, and a finding says which was run. Unless export preserved a child's
calling convention (``preserve_module_call_signature``) it takes the tensors of
its inputs and returns its outputs' leaves, so leaves are compared in order;
a child of several tensor inputs orders them its own way (hf_bert's
``BertSelfOutput(hidden_states, input_tensor)``), so only single-tensor calls
are replayed and the others are notes. A child that cannot be called with
eager's arguments — its graph takes a symbolic size or a lifted buffer as an
extra argument, it was called with keyword arguments, or only inside a
``torch.cond`` branch — is a note naming why (printed with the item's
failures), not a finding.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.localize import Call, hooked_calls
from pytest_exportcheck.compare_values import Tolerance, compare_trees
from pytest_exportcheck.failures import Note


def check_submodules_alone(case: Any, record: Any) -> list[str]:
    """Findings (and notes) of every eager submodule call replayed on ``unflatten(ep)``."""
    subject = record.subject
    if subject.eager.mutated_state:
        return [
            Note(
                "submodules not run alone: forward mutates state "
                f"({', '.join(sorted(subject.eager.mutated_state))}), so a submodule's "
                "state when eager called it is not the state it starts from"
            )
        ]
    try:
        calls = hooked_calls(subject.model_copy(), subject.inputs_copy(), case.seed, grad=True)
    except Exception as exc:
        return [Note(f"submodules not run alone: a hooked eager run raised {type(exc).__name__}")]
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    cannot: dict[str, str] = {}
    for call in calls:
        try:
            unflat = record.fresh_unflattened()  # reset to its first state for every call
        except Exception as exc:  # the check's own unflatten finding says why
            findings.append(Note(f"submodules not run alone: unflatten raised {exc!r}"))
            break
        target, alias = _target(unflat, call)
        label = f"{call.fqn}" + (f" (call {call.index + 1}, run as {alias!r})" if alias else "")
        if target is None:
            cannot.setdefault(call.fqn, "not in the unflattened module (called only inside a "
                              "torch.cond branch, or inlined)")  # fmt: skip
            continue
        args, kwargs = call.inputs
        if kwargs:
            cannot.setdefault(
                call.fqn, f"eager called it with keyword arguments ({', '.join(kwargs)})"
            )
            continue
        # A child keeps eager's calling convention only where export preserved it
        # (preserve_module_call_signature); otherwise it takes the tensors of its
        # inputs and returns the leaves of its outputs, in pytree order.
        tensors = [leaf for leaf in pytree.tree_leaves(args) if isinstance(leaf, torch.Tensor)]
        if len(tensors) > 1:
            # Measured on hf_bert's BertSelfOutput(hidden_states, input_tensor): the child's
            # graph takes its inputs in its own order, not eager's.
            cannot.setdefault(
                call.fqn,
                f"it takes {len(tensors)} tensors, which a child's graph orders its own way "
                "unless export preserved its call signature (preserve_module_call_signature)",
            )
            continue
        try:
            with torch.no_grad():
                output = target(*tensors)
        except Exception as exc:
            why = f"called with eager's arguments it raised {type(exc).__name__}"
            cannot.setdefault(call.fqn, f"{why} (its graph may take a size or a buffer too)")
            continue
        problems = compare_trees(
            pytree.tree_leaves(call.output), pytree.tree_leaves(output), tolerance=tolerance,
            root=f"{label} output leaves", names=("eager", "unflattened"),
        )  # fmt: skip
        if problems:
            findings.append(
                f"{label} ({call.kind}) run alone on eager's inputs differs: {problems[0]}"
                + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
            )
    findings += [Note(f"{fqn} not run alone: {why}") for fqn, why in sorted(cannot.items())]
    return findings


def _target(unflat: torch.nn.Module, call: Call) -> tuple[torch.nn.Module | None, str]:
    """The unflattened module for ``call``: ``fqn@i`` for a later call traced apart."""
    modules = dict(unflat.named_modules(remove_duplicate=False))
    if call.index:
        alias = f"{call.fqn}@{call.index}"
        if alias in modules:
            return modules[alias], alias
    return modules.get(call.fqn), ""
