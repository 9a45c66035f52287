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

from contextlib import nullcontext
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.child_outputs import compare_child_outputs
from pytest_exportcheck.checks.localize import Call, hooked_calls, pair_calls
from pytest_exportcheck.comparison.compare_values import Tolerance
from pytest_exportcheck.containment.failures import Note
from pytest_exportcheck.model.rng_state import under_rng


def check_submodules_alone(case: Any, record: Any) -> list[str]:
    """Findings (and notes) of every eager submodule call replayed on ``unflatten(ep)``."""
    subject = record.subject
    if next(subject.pristine_model.children(), None) is None:
        return []  # the root is all there is, and the outputs check runs it
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
    try:  # which unflattened module stands for each call (``localize.pair_calls``)
        ran = hooked_calls(record.fresh_unflattened(), subject.inputs_copy(), case.seed, False)
    except Exception:  # the unflattened module's own raise is the outputs finding
        ran = []
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    cannot: dict[str, str] = {}
    dropped: dict[str, list[str]] = {}
    # A no-op in this mode (Identity, eval Dropout) returned its input object: nothing to
    # replay, and unflatten keeps no graph to call (its stand-in raises NotImplementedError).
    passthrough = subject.call_counts.passthrough
    for call, stand_in in pair_calls(calls, ran, subject.module_groups):
        if call.fqn in passthrough:
            continue
        try:
            unflat = record.fresh_unflattened()  # reset to its first state for every call
        except Exception as exc:  # the check's own unflatten finding says why
            findings.append(Note(f"submodules not run alone: unflatten raised {exc!r}"))
            break
        target, path = _target(unflat, call, stand_in)
        label = call.fqn
        if call.index or path != call.fqn:
            label += f" (call {call.index + 1}, run as {path!r})"
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
            # Under the generator state eager's call started from: a call that draws
            # random numbers (Dropout in train mode) gives eager's output only there.
            with torch.no_grad(), under_rng(call.rng) if call.rng else nullcontext():
                output = target(*tensors)
        except Exception as exc:
            why = f"called with eager's arguments it raised {type(exc).__name__}"
            cannot.setdefault(call.fqn, f"{why} (its graph may take a size or a buffer too)")
            continue
        problems, lost = compare_child_outputs(
            call.output, output, tolerance=tolerance, root=f"{label} output"
        )
        if lost:
            dropped.setdefault(call.fqn, lost)
        if problems:
            findings.append(
                f"{label} ({call.kind}) run alone on eager's inputs differs: {problems[0]}"
                + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
            )
    findings += [Note(f"{fqn} not run alone: {why}") for fqn, why in sorted(cannot.items())]
    findings += [
        Note(
            f"{fqn}: output {', '.join(lost)} not compared: unflatten returns only the "
            "outputs the parent uses"
        )
        for fqn, lost in sorted(dropped.items())
    ]
    return findings


def _target(
    unflat: torch.nn.Module, call: Call, stand_in: Call | None
) -> tuple[torch.nn.Module | None, str]:
    """The unflattened module for ``call`` and its FQN: the one that stood for it in the
    unflattened module's own run, else the module of its name (``fqn@i`` for call i)."""
    modules = dict(unflat.named_modules(remove_duplicate=False))
    if stand_in is not None and stand_in.fqn in modules:
        return modules[stand_in.fqn], stand_in.fqn
    if call.index:
        alias = f"{call.fqn}@{call.index}"
        if alias in modules:
            return modules[alias], alias
    return modules.get(call.fqn), call.fqn
