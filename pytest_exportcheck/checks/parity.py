"""parity: every way of running a capture reproduces eager's outputs.

The ways come from the capture path: ``ep.module()``, ``unflatten(ep)`` and the
decomposed program for ``export``; the graph module itself and the graph fed
eager state through its placeholders (its own calling convention) for
``dynamo``; the graph module for ``dynamo-legacy``; the joint graph's forward
outputs for ``aot-joint``, whose gradients are also compared with eager
autograd on the same inputs.

Each side runs on its own copy with cloned inputs, for ``expect.parity.steps``
calls (state-carrying models are compared after each). Outputs must have the
same pytree structure, dtypes and shapes, and values within tolerance (the
``torch.testing.assert_close`` per-dtype defaults unless the case sets
``atol``/``rtol``). Outputs whose largest magnitude is below 1000 x atol
are compared at their own scale, and constant outputs, which cannot fail any
comparison, hand the work to the submodule outputs (``signal.py``); with no
signal anywhere the item fails as vacuous. A constant output the program
builds from sizes alone, with a shape it computes (``sized.py``), carries
signal in that shape. A failure names the output leaf, the max
abs and rel error, the worst index, the mismatched/total count and the tolerance used (and, for
the ``fp64`` and ``cosine`` policies of ``tolerance.py``, the numbers that
policy compared — ``fp64`` against a float64 eager run, which the default
``auto`` policy also asks where allclose fails), and ends
with where the outputs start to differ (``localize.py``): the first submodule
whose output diverges while its inputs agree.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.joint import JointRecord
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.localize import first_divergence
from pytest_exportcheck.checks.signal import loose_atol, output_signal, signal_inside
from pytest_exportcheck.checks.steps import fp64_output
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.crashes import doing
from pytest_exportcheck.containment.failures import Note, describe_exception
from pytest_exportcheck.model.isolation import seed_everything
from pytest_exportcheck.spec import Case


def check_parity(case: Case, record: CaptureRecord) -> list[str]:
    subject = record.subject
    tolerance = Tolerance.of_case(case)
    steps = case.expect.parity.steps
    inputs = subject.inputs_copy()
    try:
        eager_steps = subject.eager_steps(steps)
    except Exception as exc:
        return [describe_exception(exc, context="eager raised")]
    output = eager_steps[0].output
    why, told = output_signal(record, output, tolerance)
    # Outputs that cannot tell a wrong program from a right one: the submodules must.
    findings: list[str] = signal_inside(record, tolerance, why) if why else []
    findings += told + loose_atol(output, tolerance)
    diverged: list[str] = []  # labels of the programs whose outputs differ
    for runnable in record.runnables():
        label = runnable.label
        try:
            with doing(label):  # the live progress line: which program is being made or run
                call, module = runnable.make()
                runs = subject.run(call, inputs, steps=steps, state_of=module)
        except Exception as exc:
            findings.append(describe_exception(exc, context=f"{label} raised"))
            continue
        for index, (want, got) in enumerate(zip(eager_steps, runs, strict=True), start=1):
            root = f"step {index}: output" if steps > 1 else "output"
            problems = compare_trees(
                want.output, got.output, tolerance=tolerance, root=root,
                names=("eager", label), reference=fp64_output(subject, index - 1, steps),
            )  # fmt: skip
            if problems and label not in diverged:
                diverged.append(label)
            findings += problems
    findings += record.programs_not_run()
    if isinstance(record, JointRecord):
        findings += _gradients(case, record, tolerance)
    findings += _where(record, tolerance, diverged)
    return findings


def _where(record: CaptureRecord, tolerance: Tolerance, diverged: list[str]) -> list[str]:
    """Where each program that diverged starts to: one more hooked run of eager and that
    program, unflattened, call by call. ``ep.module()`` runs the graph ``unflatten(ep)``
    does; one line when every program diverges at the same place."""
    programs = list(dict.fromkeys("unflatten(ep)" if p == "ep.module()" else p for p in diverged))
    where = {p: first_divergence(record, tolerance, program=p) for p in programs}
    if len(set(where.values())) <= 1:
        return [Note(f"where: {text}") for text in list(where.values())[:1]]
    return [Note(f"where ({program}): {text}") for program, text in where.items()]


def _gradients(case: Case, record: JointRecord, tolerance: Tolerance) -> list[str]:
    """The joint graph's parameter gradients vs eager autograd of the same loss.

    Gradients are compared per alias group: the joint graph takes a tied weight
    once per name and splits its gradient between them; eager accumulates one.
    """
    subject = record.subject
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    seed_everything(case.seed)
    try:
        with torch.enable_grad():
            leaves = pytree.tree_leaves(model(*args, **kwargs))
            leaves[case.loss_output or 0].backward()
    except Exception as exc:
        return [describe_exception(exc, context="eager backward of the loss output raised")]
    args, kwargs = subject.inputs_copy()
    seed_everything(case.seed)
    try:
        graph = record.gradients(args, kwargs)
    except Exception as exc:
        return [describe_exception(exc, context="the joint graph raised")]
    findings = []
    seen: set[str] = set()
    for fqn, parameter in model.named_parameters(remove_duplicate=False):
        group = subject.tensor_groups.get(fqn, (fqn,))
        if fqn in seen:
            continue
        seen.update(group)
        parts = [graph[name] for name in group if name in graph]
        if not parts:
            findings.append(f"the joint graph gives no gradient for {' / '.join(group)}")
            continue
        want = parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)
        findings += compare_trees(
            want, torch.stack(parts).sum(0), tolerance=tolerance,
            root=f"grad {' / '.join(group)}", names=("eager autograd", "joint graph"),
        )  # fmt: skip
    return findings
