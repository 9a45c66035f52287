"""mutation: what export says is mutated is what eager really mutated, and state keeps up.

The training IR that ``torch.export.export`` returns keeps in-place ops in the
graph and records no mutations; the decomposed (functional) program turns them
into extra outputs::

    # eager                      # ep.run_decompositions()
    self.count.add_(1)           add = torch.ops.aten.add.Tensor(b_count, 1)
                                 return (add, out)   # output kind BUFFER_MUTATION -> count

So the mutation records are read from ``run_decompositions()`` of a copy.
Verified: the recorded buffer / parameter / user-input mutations equal the set
eager changed in one call (diffed on a private copy); over ``steps`` calls,
eager, ``ep.module()`` and ``unflatten(ep)`` — each on its own copy with cloned
inputs — agree on outputs, every buffer and parameter, and mutated inputs;
``expect.mutated_buffers`` matches the recorded buffer mutations.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pytest_exportcheck.capture.record import CaptureRecord, DecompositionError
from pytest_exportcheck.checks.steps import compare_step, lifted_state
from pytest_exportcheck.compare import Tolerance
from pytest_exportcheck.failures import describe_exception
from pytest_exportcheck.runs import run_steps
from pytest_exportcheck.spec import Case

DIALECT = "the decomposed program (ep.run_decompositions())"


def check_mutation(case: Case, record: CaptureRecord) -> list[str]:
    findings: list[str] = []
    try:
        decomposed = record.decomposed
    except DecompositionError as exc:
        findings.append(f"cannot read mutation records: {exc}")
    else:
        findings += _recorded_mutations(case, record, decomposed)
    findings += _stepped_runs(case, record)
    return findings


def _recorded_mutations(
    case: Case, record: CaptureRecord, decomposed: torch.export.ExportedProgram
) -> list[str]:
    signature = decomposed.graph_signature
    recorded_buffers = set(signature.buffers_to_mutate.values())
    # parameters_to_mutate exists from torch 2.9; before it, parameter mutation was unsupported.
    recorded_params = set(getattr(signature, "parameters_to_mutate", {}).values())
    groups = record.subject.tensor_groups
    recorded_state = {alias for fqn in recorded_buffers | recorded_params for alias in groups[fqn]}
    observed = record.subject.eager
    findings = []
    missing = sorted(observed.mutated_state - recorded_state)
    extra = sorted(recorded_state - observed.mutated_state)
    if missing:
        findings.append(
            f"eager mutated {', '.join(missing)} but {DIALECT} does not record it "
            f"(buffers_to_mutate: {_show(recorded_buffers)}, "
            f"parameters_to_mutate: {_show(recorded_params)})"
        )
    if extra:
        findings.append(
            f"{DIALECT} records mutation of {', '.join(extra)} but eager left it unchanged"
        )

    # user_inputs_to_mutate names placeholders; the case speaks of input paths.
    paths = [path for path, _ in record.subject.flat_inputs]
    path_of = dict(zip(signature.user_inputs, paths, strict=False))
    recorded_inputs = {path_of.get(n, n) for n in signature.user_inputs_to_mutate.values()}
    if recorded_inputs != observed.mutated_inputs:
        findings.append(
            f"user-input mutations differ: eager mutated {_show(observed.mutated_inputs)}, "
            f"{DIALECT} records {_show(recorded_inputs)} (user_inputs_to_mutate)"
        )

    expected = case.expect.mutated_buffers
    if expected is not None and set(expected) != recorded_buffers:
        where = f" ({case.at(case.expect.mutated_buffers_line)})"
        findings.append(
            f"expect.mutated_buffers{where} is {_show(expected)}, "
            f"{DIALECT} records {_show(recorded_buffers)}"
        )
    return findings


def _stepped_runs(case: Case, record: CaptureRecord) -> list[str]:
    subject = record.subject
    steps = case.expect.mutation_steps
    tolerance = Tolerance(case.expect.parity.atol, case.expect.parity.rtol)
    inputs = subject.inputs_copy()
    try:
        eager_steps = subject.eager_steps(steps)
    except Exception as exc:
        return [describe_exception(exc, context="eager raised on a repeated call")]
    lifted = lifted_state(record)
    findings = []
    sides: list[tuple[str, Callable[[], torch.nn.Module]]] = [
        ("ep.module()", record.fresh_module),
        ("unflatten(ep)", record.fresh_unflattened),
    ]
    for label, make in sides:
        try:
            runs = run_steps(make(), inputs, steps=steps, seed=case.seed)
        except Exception as exc:
            findings.append(describe_exception(exc, context=f"running {label} raised"))
            continue
        for index, (want, got) in enumerate(zip(eager_steps, runs, strict=True), start=1):
            problems = compare_step(want, got, label, lifted, subject.tensor_groups, tolerance)
            if problems:
                findings += [f"after step {index}/{steps}: {p}" for p in problems]
                break  # later steps only repeat a divergence that has already happened
    return findings


def _show(names: object) -> str:
    items = sorted(names) if not isinstance(names, list) else names  # type: ignore[call-overload]
    return "{" + ", ".join(items) + "}" if items else "{}"
