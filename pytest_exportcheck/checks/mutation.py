"""mutation: what export says is mutated is what eager really mutated, and state keeps up.

The training IR that ``torch.export.export`` returns keeps in-place ops in the
graph and records no mutations; the decomposed (functional) program turns them
into extra outputs::

    # eager                      # ep.run_decompositions()
    self.count.add_(1)           add = torch.ops.aten.add.Tensor(b_count, 1)
                                 return (add, out)   # output kind BUFFER_MUTATION -> count

So for ``export`` the mutation records are read from ``run_decompositions()``
of a copy; ``aot-joint`` records them in its ``GraphSignature``; the Dynamo
paths keep in-place ops in the graph and record none (only the stepped runs
apply to them). Verified: the recorded buffer / parameter / user-input
mutations equal the set eager changed in one call (diffed on a private copy);
over ``steps`` calls, eager and each stateful way of running the capture
(``ep.module()``, ``unflatten(ep)``, the graph module, the graph fed eager
state, the joint graph) — each on its own copy with cloned inputs — agree on
outputs, every buffer and parameter, and mutated inputs;
``expect.mutated_buffers`` matches the recorded buffer mutations.
"""

from __future__ import annotations

import torch

from pytest_exportcheck.capture.record import CaptureRecord, DecompositionError, Mutations
from pytest_exportcheck.checks.steps import compare_step, lifted_state
from pytest_exportcheck.comparison.compare_values import Tolerance
from pytest_exportcheck.containment.failures import Info, describe_exception
from pytest_exportcheck.model.isolation import module_state
from pytest_exportcheck.spec import Case


def check_mutation(case: Case, record: CaptureRecord) -> list[str]:
    findings: list[str] = []
    recorded: Mutations | None = None
    try:
        recorded = record.mutations()
    except DecompositionError as exc:
        findings.append(f"cannot read mutation records: {exc}")
    else:
        # Paths that keep in-place ops in their graph (dynamo) record nothing to compare.
        if recorded is not None:
            findings += _recorded_mutations(case, record, recorded)
    findings += _stepped_runs(case, record)
    if not findings:
        findings += _unchanged_updates(case, record, recorded)
    return findings


def _unchanged_updates(case: Case, record: CaptureRecord, recorded: Mutations | None) -> list[str]:
    """The stepped runs prove nothing about an update that leaves the values as they were.

    ``self.buf.zero_()`` on a zero buffer, or a running statistic fed inputs
    that keep it where it is: a program that dropped the update would pass the
    stepped runs. Where the capture's records name the mutation, they are the
    evidence that it is kept (context, not a gap); where it keeps no records (the
    Dynamo paths), nothing shows the update is in the program: vacuous.
    """
    subject = record.subject
    mutated = sorted(subject.eager.mutated_state)
    if not mutated:
        return []
    steps = subject.eager_steps(case.expect.mutation_steps)
    before = module_state(subject.pristine_model)
    unchanged = [
        name
        for name in mutated
        if name in before
        and all(
            name in step.state and _same_values(step.state[name], before[name]) for step in steps
        )
    ]
    if not unchanged:
        return []
    what = (
        f"eager's update of {', '.join(unchanged)} leaves the values as they were over "
        f"{len(steps)} step(s), so the stepped runs cannot tell a program that drops it"
    )
    if recorded is not None:  # the records show it kept; the stepped runs, its values
        return [Info(f"note: {what}; {recorded.source} records the mutation, so it is kept")]
    return [
        f"vacuous: {what}, and {record.capture} keeps no mutation records. Give inputs "
        "(or parameters: `model.init: fan_in`) for which the update changes the state"
    ]


def _same_values(after: torch.Tensor, before: torch.Tensor) -> bool:
    if after.shape != before.shape or after.dtype != before.dtype:
        return False
    if after.device.type == "meta" or before.device.type == "meta":
        return False  # no values to compare: not evidence of an unchanged update
    return bool(torch.equal(after.detach().cpu(), before.detach().cpu()))


def _recorded_mutations(case: Case, record: CaptureRecord, recorded: Mutations) -> list[str]:
    groups = record.subject.tensor_groups
    state = recorded.buffers | recorded.parameters
    recorded_state = {alias for fqn in state for alias in groups.get(fqn, (fqn,))}
    observed = record.subject.eager
    source = recorded.source
    findings = []
    missing = sorted(observed.mutated_state - recorded_state)
    extra = sorted(recorded_state - observed.mutated_state)
    if missing:
        findings.append(
            f"eager mutated {', '.join(missing)} but {source} does not record it "
            f"(buffers_to_mutate: {_show(recorded.buffers)}, "
            f"parameters_to_mutate: {_show(recorded.parameters)})"
        )
    if extra:
        findings.append(
            f"{source} records mutation of {', '.join(extra)} but eager left it unchanged"
        )
    if recorded.user_inputs != observed.mutated_inputs:
        findings.append(
            f"user-input mutations differ: eager mutated {_show(observed.mutated_inputs)}, "
            f"{source} records {_show(recorded.user_inputs)} (user_inputs_to_mutate)"
        )
    expected = case.expect.mutated_buffers
    if expected is not None and set(expected) != recorded.buffers:
        where = f" ({case.at(case.expect.mutated_buffers_line)})"
        findings.append(
            f"expect.mutated_buffers{where} is {_show(expected)}, "
            f"{source} records {_show(recorded.buffers)}"
        )
    return findings


def _stepped_runs(case: Case, record: CaptureRecord) -> list[str]:
    subject = record.subject
    steps = case.expect.mutation_steps
    tolerance = Tolerance.of_case(case)
    inputs = subject.inputs_copy()
    try:
        eager_steps = subject.eager_steps(steps)
    except Exception as exc:
        return [describe_exception(exc, context="eager raised on a repeated call")]
    lifted = lifted_state(record)
    findings = record.programs_not_run()
    for runnable in record.runnables():
        if not runnable.stateful:
            continue
        label = runnable.label
        try:
            call, module = runnable.make()
            runs = subject.run(call, inputs, steps=steps, state_of=module)
        except Exception as exc:
            findings.append(describe_exception(exc, context=f"running {label} raised"))
            continue
        for index, (want, got) in enumerate(zip(eager_steps, runs, strict=True), start=1):
            problems = compare_step(
                want, got, label, lifted, subject.tensor_groups, tolerance,
                reference=lambda index=index: subject.fp64_step(index - 1, steps),
            )  # fmt: skip
            if problems:
                findings += [f"after step {index}/{steps}: {p}" for p in problems]
                break  # later steps only repeat a divergence that has already happened
    return findings


def _show(names: object) -> str:
    items = sorted(names) if not isinstance(names, list) else names  # type: ignore[call-overload]
    return "{" + ", ".join(items) + "}" if items else "{}"
