"""Each submodule of ``unflatten(ep)`` run on its own: the hierarchy check's per-call part.

The unflatten bugs users report most are submodules that are wrong when run
alone while the whole model is right: a submodule called twice, shared weights
mapped to one name, a root buffer passed into layers (pytorch/pytorch#132993,
#137013, #125192, #127643). PyTorch's own ``test_unflatten.py`` calls every
submodule. So every call eager makes to a submodule is recorded with hooks
(``localize.py``), and the same submodule of ``unflatten(ep)`` is called as a
user would call it, with those very arguments and keywords::

    eager:      blocks.1(x1, mask=m) -> y1     unflattened: u.blocks[1](x1, mask=m) -> y1'

and judged: a call that raises where eager's does not is a finding (unless
eager's child raises on the same call too, outside its parent: a note), as is
a return in another container (``child_calls.py``: eager ``HeadOut``, the
child a bare ``Tensor``), values that differ (``child_outputs.py``), and, where
forward mutates state, the state the call leaves. Such a call starts from the
state eager's call found (a counter at its second call is at 1), set on a fresh
copy; the generator's too (Dropout in train mode).

Where one module's calls were traced into different graphs, unflatten keeps the
first as ``act`` and the next as ``act@1``: calls are matched to them by
position, and a finding says which was run. A child reading a dynamic size
takes it as an argument from its parent (measured on torch 2.13, also under
``preserve_module_call_signature``): no export avoids that, so such a child is
run as its parent calls it, with eager's tensor, and judged on that. A child of
several positional tensors is called with them as eager's was: its graph takes
them in its own order unless export preserved its signature, which a user's
call meets as wrong values. Where the case's ``preserve_signatures`` would keep
eager's convention, the finding says so (``keep_signature.py``). Not run, a note
naming why: a child called only inside a ``torch.cond`` branch.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.child_calls import (
    read_by_caller,
    render_call,
    return_change,
)
from pytest_exportcheck.checks.child_inputs import graph_inputs, lifted_inputs, short_error
from pytest_exportcheck.checks.child_outputs import match_child_outputs
from pytest_exportcheck.checks.keep_signature import (
    Remedy,
    hint_applies,
    keep_signature_hint,
    takes_sizes,
)
from pytest_exportcheck.checks.listdiff import capped
from pytest_exportcheck.checks.localize import Call, hooked_calls, pair_calls
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import Info, Note, exception_text
from pytest_exportcheck.model.isolation import clone_tree, module_state
from pytest_exportcheck.model.rng_state import under_rng


def check_submodules_alone(case: Any, record: Any) -> list[str]:
    """Findings (and notes) of every eager submodule call replayed on ``unflatten(ep)``."""
    subject = record.subject
    if next(subject.pristine_model.children(), None) is None:
        return []  # the root is all there is, and the outputs check runs it
    watch = frozenset(subject.eager.mutated_state)
    try:
        calls = hooked_calls(
            subject.model_copy(), subject.inputs_copy(), case.seed, grad=True, watch=watch
        )
    except Exception as exc:
        return [Note(f"submodules not run alone: a hooked eager run raised {type(exc).__name__}")]
    try:  # which unflattened module stands for each call (``localize.pair_calls``)
        ran = hooked_calls(record.fresh_unflattened(), subject.inputs_copy(), case.seed, False)
    except Exception:  # the unflattened module's own raise is the outputs finding
        ran = []
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    cannot: dict[str, str] = {}
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
        # Called as a user calls it, several positional tensors too: without a preserved
        # signature the child's graph takes them in its own order (hf_bert's
        # BertSelfOutput; u.inner(x, x * 2) against a graph of (mul, x)), which a user's
        # call meets as wrong values, so it is run and judged like any other.
        shown = render_call(path, args, kwargs)
        beyond = _beyond_the_case(case, call, calls, stand_in)
        remedy = Remedy(beyond, False) if beyond else Remedy(keep_signature_hint(call.fqn), True)
        judged = _replay(target, call, stand_in, record, tolerance, label, shown, remedy)
        if isinstance(judged, tuple):
            cannot.setdefault(call.fqn, judged[0])
        else:
            findings += judged
    findings += [Note(f"{fqn} not run alone: {why}") for fqn, why in sorted(cannot.items())]
    return findings


# A child reading a dynamic size takes it from its parent: no export keeps its convention.
_SIZED = Remedy(
    "its parent passes it a dynamic size, which torch does under "
    "preserve_module_call_signature too",
    keeps=False,
)


def _beyond_the_case(case: Any, call: Call, calls: list[Call], stand_in: Call | None) -> str:
    """Why no export of the case keeps ``call``'s calling convention ("" where naming the
    child in ``preserve_signatures`` is known to)."""
    if case.preserves(call.fqn):
        return "it is named in preserve_signatures already, and torch's unflatten still differs"
    if takes_sizes(stand_in, call):
        return _SIZED.text
    if not hint_applies(case, call.fqn, calls):
        count = sum(other.fqn == call.fqn for other in calls)
        return (
            f"eager calls it {count} times per forward, and a preserved child keeps one graph "
            "for every call and loses its own submodules' calls"
        )
    return ""


def _convention(text: str, remedy: Remedy) -> str:
    """A finding about the child's calling convention (a raise on eager's call, another
    return container): a finding with its remedy where the case can keep the convention,
    else a statement about torch's unflatten, told, never the case's failure (nothing the
    user changes turns it green)."""
    if remedy.keeps:
        return f"{text}; {remedy.text}"
    return Note(f"{text} (no export keeps its calling convention: {remedy.text}; told, not failed)")


def _replay(
    target: torch.nn.Module,
    call: Call,
    stand_in: Call | None,
    record: Any,
    tolerance: Tolerance,
    label: str,
    shown: str,
    remedy: Remedy,
) -> list[str] | tuple[str]:
    """The findings of one call run alone, or ``(why,)`` where it could not be run;
    ``remedy``: how the case keeps eager's calling convention, or why none does."""
    args, kwargs = clone_tree(call.inputs)
    unset = _restore(target, call.state_before)
    if unset:
        return (f"its state before the call could not be set on the unflattened module: {unset}",)
    head = f"{label} ({call.kind})"
    try:
        output = _run(target, call, args, kwargs)
    except Exception as exc:
        raised = short_error(exc, _first_line(exc))
        sized = _as_parent_calls(stand_in, call)
        if sized is not None:
            return _judge_as_parent_calls(
                record, call, sized, tolerance, label, head, shown, raised
            )
        eager_raised = _eager_raises(record, call)
        if eager_raised is not None:
            return (f"{shown} raises on eager's {call.fqn} too, outside its parent's forward "
                    f"({eager_raised})",)  # fmt: skip
        program = getattr(record, "program", None)
        state = lifted_inputs(target, program)
        if state:  # another module's state, passed in: no export keeps eager's convention
            remedy = Remedy("torch's unflatten passes that state in, under "
                            "preserve_module_call_signature too", keeps=False)  # fmt: skip
        return [
            _convention(
                f"{head}: {shown} raises {raised}; eager's {call.fqn} returns on the same call. "
                f"The unflattened {call.fqn} takes " + graph_inputs(target, call.inputs, program),
                remedy,
            )
        ]
    return _judge(target, call, output, tolerance, label, head, shown, remedy)


def _takes(target: torch.nn.Module) -> str:
    """The inputs the unflattened child's graph takes, by its own names (``mul, x``)."""
    return capped(list(getattr(target, "arg_names", None) or []))


def _judge(
    target: torch.nn.Module,
    call: Call,
    output: Any,
    tolerance: Tolerance,
    label: str,
    head: str,
    shown: str,
    remedy: Remedy,
) -> list[str]:
    findings: list[str] = []
    change = return_change(call.output, output)
    if change is None:  # one container: each value is read where eager's is
        problems = compare_trees(
            call.output, output, tolerance=tolerance, root=f"{label} output",
            names=("eager", "unflattened"),
        )  # fmt: skip
    else:  # values matched leaf by leaf (``child_outputs.py``), the container told apart
        problems, lost = match_child_outputs(
            call.output, output, tolerance=tolerance, root=f"{label} output"
        )
        read = read_by_caller(call.output, output)
        breaks = f": a caller of {shown}{read} breaks" if read else ""
        why = _why_not_returned(call, lost)
        findings.append(
            _convention(
                f"{head}: the return type changed: {shown} {change}{breaks}"
                + (f" ({why})" if why else ""),
                remedy,
            )
        )
    if problems:
        findings.append(
            f"{head} run alone on eager's inputs differs: {problems[0]}"
            + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
            + _order_told(target, call, remedy)
        )
    findings += _state_after(target, call, tolerance, head)
    return findings


def _order_told(target: torch.nn.Module, call: Call, remedy: Remedy) -> str:
    """Why values of a call of several positional tensors may differ, and the remedy: the
    graph takes them in its own order (its names are the parent's values: ``mul, x``)."""
    tensors = [t for t in pytree.tree_leaves(call.inputs[0]) if isinstance(t, torch.Tensor)]
    if len(tensors) < 2 or not remedy.keeps:
        return ""
    return (
        f"; it takes {len(tensors)} positional tensors, and the unflattened {call.fqn}'s graph "
        f"takes ({_takes(target)}), in its own order; {remedy.text}"
    )


def _why_not_returned(call: Call, lost: list[tuple[str, Any]]) -> str:
    """Why each eager output leaf the child does not return is missing, by what it is."""
    inputs = [t for t in pytree.tree_leaves(call.inputs) if isinstance(t, torch.Tensor)]
    reasons = []
    for path, leaf in lost:
        where = path or "the output"
        if not isinstance(leaf, torch.Tensor):
            reasons.append(f"{where} is a constant, which a graph does not return")
        elif any(_same(leaf, t) for t in inputs):
            reasons.append(f"{where} is the call's own input, which the child does not return")
        else:
            reasons.append(f"{where} is not returned: the parent does not use it")
    return capped(reasons, limit=4, sep="; ")


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


def _state_after(target: torch.nn.Module, call: Call, tolerance: Tolerance, head: str) -> list[str]:
    if not call.state_after:
        return []
    held = module_state(target)
    problems = []
    for name, want in call.state_after.items():
        if name not in held:
            problems.append(f"{name!r} is not held by the unflattened module")
            continue
        problems += compare_trees(
            want, held[name].detach(), tolerance=tolerance, root=repr(name),
            names=("eager", "unflattened"),
        )  # fmt: skip
    if not problems:
        return []
    return [
        f"{head} run alone from the state eager's call started from leaves other state: "
        + problems[0]
        + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
    ]


def _restore(module: torch.nn.Module, state: dict[str, torch.Tensor] | None) -> str:
    """Set ``state`` (by the module's own names) in place; why not, or ``""``."""
    if not state:
        return ""
    held = module_state(module)
    missing = [name for name in state if name not in held]
    if missing:
        return f"{capped(missing)} not held by it"
    try:
        with torch.no_grad():
            for name, value in state.items():
                held[name].copy_(value)
    except Exception as exc:
        return f"{type(exc).__name__}: {_first_line(exc)}"
    return ""


def _run(module: torch.nn.Module, call: Call, args: Any, kwargs: Any) -> Any:
    # Under the generator state eager's call started from: a call that draws random
    # numbers (Dropout in train mode) gives eager's output only there.
    with torch.no_grad(), under_rng(call.rng) if call.rng else nullcontext():
        return module(*args, **kwargs)


def _eager_raises(record: Any, call: Call) -> str | None:
    """What eager's own child raises on the same call, run alone (it may need something
    its parent's forward sets up), or None where it returns."""
    try:
        child = record.subject.model_copy().get_submodule(call.fqn)
        _restore(child, call.state_before)
        args, kwargs = clone_tree(call.inputs)
        _run(child, call, args, kwargs)
    except Exception as exc:
        return short_error(exc, _first_line(exc))
    return None


def _as_parent_calls(stand_in: Call | None, call: Call) -> tuple[Any, ...] | None:
    """The arguments the unflattened parent passes its child, with eager's tensor in place
    of its own, where they hold sizes eager's call did not pass (a dynamic size read
    in the child); else None."""
    if stand_in is None or call.inputs[1] or stand_in.inputs[1]:
        return None
    given = stand_in.inputs[0]
    sizes = [a for a in given if isinstance(a, int) and not isinstance(a, bool)]
    tensors = [i for i, a in enumerate(given) if isinstance(a, torch.Tensor)]
    eager = [a for a in call.inputs[0] if isinstance(a, torch.Tensor)]
    eager_sizes = [a for a in call.inputs[0] if isinstance(a, int) and not isinstance(a, bool)]
    if len(sizes) <= len(eager_sizes) or len(tensors) != 1 or len(eager) != 1:
        return None
    args = list(given)
    args[tensors[0]] = eager[0]
    return tuple(args)


def _judge_as_parent_calls(
    record: Any,
    call: Call,
    args: tuple[Any, ...],
    tolerance: Tolerance,
    label: str,
    head: str,
    shown: str,
    raised: str,
) -> list[str]:
    target, path = _target(record.fresh_unflattened(), call, None)
    if target is None:  # found a moment ago on another copy
        return []
    _restore(target, call.state_before)
    as_parent = render_call(path, clone_tree(args), {})
    try:
        output = _run(target, call, clone_tree(args), {})
    except Exception as exc:
        return [f"{head}: {as_parent}, as its parent calls it, raises "
                f"{short_error(exc, _first_line(exc))}"]  # fmt: skip
    found = _judge(target, call, output, tolerance, label, head, as_parent, _SIZED)
    told = Info(
        f"{label}: {shown} raises ({raised}): its graph takes the sizes it reads from its "
        f"parent, as torch's unflatten makes it for a dynamic size (also under "
        f"preserve_module_call_signature); run as {as_parent}"
        + (" it returns what eager's did" if not found else "")
    )
    return [*found, told]


def _first_line(exc: BaseException) -> str:
    return (exception_text(exc).strip().splitlines() or ["(no message)"])[0]


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
