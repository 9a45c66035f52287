"""hierarchy: ``torch.export.unflatten`` gives back the eager module tree.

Eager ``Net`` with ``self.block = Block()`` (holding ``self.lin``) called once
becomes::

    UnflattenedModule            graph: x -> call_module[block] -> out
      block: InterpreterModule   graph: x -> call_module[lin] -> out
        lin: InterpreterModule   graph: x, weight, bias -> linear -> out

Verified: unflatten succeeds; ``named_modules(remove_duplicate=False)`` FQNs equal
eager's in order (or ``expect.modules``); modules shared in eager are shared in
the result and no others; ``state_dict`` keys and values equal eager's;
non-persistent buffers stay buffers; each submodule has as many ``call_module``
nodes as eager made forward calls to it; the module reproduces eager outputs;
and every submodule, run alone on the inputs eager gave it, returns what eager's
returned (``submodules.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.listdiff import (
    capped,
    difference_counts,
    partition_differences,
    side_by_side,
)
from pytest_exportcheck.checks.localize import base_fqn
from pytest_exportcheck.checks.steps import fp64_output
from pytest_exportcheck.checks.submodules import check_submodules_alone
from pytest_exportcheck.comparison.compare_values import (
    EXACT,
    Tolerance,
    compare_trees,
    untracked,
)
from pytest_exportcheck.containment.allocation import refusing_huge_tensors
from pytest_exportcheck.containment.failures import (
    ExportCheckWarning,
    Info,
    Note,
    describe_exception,
)
from pytest_exportcheck.spec import Case


def check_hierarchy(case: Case, record: CaptureRecord) -> list[str]:
    if not isinstance(record, ProgramRecord):  # the path's not_applicable keeps others out
        raise TypeError(f"hierarchy needs an ExportedProgram; {record.capture} gives none")
    try:
        unflat = record.fresh_unflattened()
    except Exception as exc:
        return [describe_exception(exc, context="torch.export.unflatten raised")]
    eager = record.subject.pristine_model
    findings: list[str] = []
    findings += _module_names(case, eager, unflat)
    findings += _sharing(eager, unflat)
    findings += _state(eager, unflat, record.subject.max_elements)
    findings += _call_counts(record, unflat)
    findings += _outputs(case, record, unflat)
    findings += check_submodules_alone(case, record)
    return findings


def _module_names(case: Case, eager: torch.nn.Module, unflat: torch.nn.Module) -> list[str]:
    named = [name for name, _ in unflat.named_modules(remove_duplicate=False) if name]
    # A later call traced into a graph of its own is kept as `act@1` beside `act`:
    # a call of `act`, not a module of its own (its calls are counted with act's).
    actual = [name for name in named if base_fqn(name) == name or base_fqn(name) not in named]
    if case.expect.modules is not None:
        expected, source = case.expect.modules, "expect.modules"
        source += f" ({case.at(case.expect.modules_line)})"
    else:
        expected = [name for name, _ in eager.named_modules(remove_duplicate=False) if name]
        source = "the eager module tree"
    if actual == expected:
        return []
    return [
        f"module FQNs after unflatten differ from {source} "
        f"({difference_counts(expected, actual)}):\n"
        + side_by_side(expected, actual, names=("expected", "unflattened"))
    ]


def _sharing(eager: torch.nn.Module, unflat: torch.nn.Module) -> list[str]:
    eager_mods = dict(eager.named_modules(remove_duplicate=False))
    unflat_mods = dict(unflat.named_modules(remove_duplicate=False))
    names = [n for n in eager_mods if n and n in unflat_mods]
    return partition_differences(
        {n: id(eager_mods[n]) for n in names},
        {n: id(unflat_mods[n]) for n in names},
        merged="{a!r} and {b!r} are two modules in eager but one after unflatten",
        split="{a!r} and {b!r} are one module in eager but two after unflatten",
    )


def _state(eager: torch.nn.Module, unflat: torch.nn.Module, max_elements: int | None) -> list[str]:
    try:
        # A model may override state_dict(): it is the model's code, run under the guard
        # its constructor ran under, and what it raises is the model's.
        with refusing_huge_tensors(max_elements):
            expected = eager.state_dict()
    except Exception as exc:
        return [describe_exception(exc, context="the model's own state_dict() raised")]
    actual = unflat.state_dict()
    findings = []
    missing = [k for k in expected if k not in actual]
    # `act@1.w` is `act.w` itself where a later call of `act` was traced apart
    # (measured: `u.get_submodule("n@1").w is u.n.w`): one tensor, not an extra.
    held = unflat.state_dict(keep_vars=True)  # the tensors themselves, not detached views
    extra = [k for k in actual if k not in expected and not _alias_of_call(k, held)]
    if missing:
        findings.append(f"state_dict keys missing after unflatten: {capped(missing)}")
    if extra:
        findings.append(f"state_dict keys only after unflatten: {capped(extra)}")
    # An identity check (unflatten keeps eager's very values), not a comparison at a
    # tolerance: the item's report names the tolerance its outputs were held to.
    with untracked():
        for key in expected.keys() & actual.keys():
            findings += compare_trees(
                expected[key], actual[key], tolerance=EXACT,
                root=f"state_dict[{key!r}]", names=("eager", "unflattened"),
            )  # fmt: skip
    unflat_buffers = {name for name, _ in unflat.named_buffers(remove_duplicate=False)}
    for name, _ in eager.named_buffers(remove_duplicate=False):
        if name in expected:
            continue
        if name not in unflat_buffers:
            findings.append(f"non-persistent buffer {name!r} is not a buffer after unflatten")
        elif name in actual:
            findings.append(f"non-persistent buffer {name!r} became persistent after unflatten")
    return findings


def _alias_of_call(key: str, actual: dict[str, Any]) -> bool:
    """Whether ``key`` (``act@1.w``) is the very tensor of the key its call is of (``act.w``)."""
    base = base_fqn(key)
    return base != key and base in actual and actual[base] is actual[key]


def _call_counts(record: ProgramRecord, unflat: torch.nn.Module) -> list[str]:
    """Calls per forward of each unflattened module vs eager forward calls (forward hooks).

    Counted per module *object*, from the ``call_module`` nodes: a node in a
    module's graph runs as often as that module does. ``unflatten`` may keep a
    block eager uses twice (``seq = [b, x, b]``) as one module with one ``fc``
    node, which runs twice per forward: 1 node, 2 calls, as in eager.
    """
    runs, findings = _runs_per_object(unflat)
    counted = record.subject.call_counts
    if counted.calls is None:
        # Not a finding about export: the count cannot be taken. Said, not hidden.
        warnings.warn(
            ExportCheckWarning(
                f"{record.subject.case.location}: call counts not compared: {counted.unavailable}"
            ),
            stacklevel=2,
        )
        return [*findings, Note(f"call counts not compared: {counted.unavailable}")]
    # Every unflattened module standing for an eager name: its own, and `name@k`
    # for later calls traced apart.
    stand_ins: dict[str, set[int]] = {}
    for uname, module in unflat.named_modules(remove_duplicate=False):
        stand_ins.setdefault(base_fqn(uname), set()).add(id(module))
    eager_calls = counted.calls
    reported: set[str] = set()
    for name, calls in eager_calls.items():
        if name in reported or name not in stand_ins:
            continue
        group = record.subject.module_groups[name]
        reported.update(group)
        # If unflatten split a shared module, its calls are spread over the copies
        # (the lost sharing is reported on its own); if it kept it, one object runs
        # for every name.
        copies = set().union(*(stand_ins.get(n, set()) for n in group))
        nodes = sum(runs.get(c, 0) for c in copies)
        if nodes == calls:
            continue
        label = " / ".join(repr(n) for n in group)
        if nodes < calls and name in counted.passthrough:
            # The program is right: a call that returns its input computes nothing to record.
            # Verified, so context and not a gap (field corpus: 2,188 of 4,489 gaps were these).
            kind = type(record.subject.pristine_model.get_submodule(name)).__name__
            findings.append(
                Info(
                    f"{label} ({kind}) is a no-op in this mode: eager's {calls} call(s) "
                    f"returned the input unchanged, so export records {nodes} call_module "
                    "node(s) for it; not compared"
                )
            )
            continue
        findings.append(
            f"{label}: eager called it {calls} time(s), the unflattened module "
            f"calls it {nodes} time(s) per forward (call_module nodes)"
        )
    return findings


def _runs_per_object(unflat: torch.nn.Module) -> tuple[dict[int, int], list[str]]:
    """How many times each module object runs per forward of ``unflat``, from its graphs:
    a ``call_module`` node runs once per run of the module whose graph holds it."""
    callers: dict[int, list[int]] = {}
    findings = []
    for prefix, module in unflat.named_modules():  # each object once
        graph = getattr(module, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            if node.op != "call_module":
                continue
            try:
                callee = module.get_submodule(node.target)
            except AttributeError:
                where = f"{prefix}.{node.target}" if prefix else node.target
                findings.append(f"call_module node {node.name!r} targets missing module {where!r}")
                continue
            callers.setdefault(id(callee), []).append(id(module))
    runs: dict[int, int] = {id(unflat): 1}

    def count(obj: int, seen: frozenset[int]) -> int:
        if obj not in runs:
            # A module that (through its children) calls itself would never end: not
            # something a graph of a traced forward holds, but not looped on either.
            runs[obj] = sum(count(c, seen | {obj}) for c in callers.get(obj, []) if c not in seen)
        return runs[obj]

    for _, module in unflat.named_modules():
        count(id(module), frozenset())
    return runs, findings


def _outputs(case: Case, record: ProgramRecord, unflat: torch.nn.Module) -> list[str]:
    tolerance = Tolerance.of_case(case)
    try:
        subject = record.subject
        (step,) = subject.run(unflat, subject.inputs_copy(), steps=1)
    except Exception as exc:
        return [describe_exception(exc, context="calling the unflattened module raised")]
    return compare_trees(
        record.subject.eager.output, step.output, tolerance=tolerance,
        names=("eager", "unflattened"), reference=fp64_output(record.subject, 0, 1),
    )  # fmt: skip
