"""parity: eager, ``ep.module()``, ``unflatten(ep)`` and the decomposed program agree.

Each side runs on its own copy with cloned inputs, for ``expect.parity.steps``
calls (state-carrying models are compared after each). Outputs must have the
same pytree structure, dtypes and shapes, and values within tolerance (the
``torch.testing.assert_close`` per-dtype defaults unless the case sets
``atol``/``rtol``). A failure names the output leaf, the max abs and rel error,
the worst index, the mismatched/total count and the tolerance used.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.compare import Tolerance, compare_trees
from pytest_exportcheck.failures import describe_exception
from pytest_exportcheck.runs import run_steps
from pytest_exportcheck.spec import Case


def check_parity(case: Case, record: CaptureRecord) -> list[str]:
    subject = record.subject
    tolerance = Tolerance(case.expect.parity.atol, case.expect.parity.rtol)
    steps = case.expect.parity.steps
    inputs = subject.inputs_copy()
    try:
        eager_steps = subject.eager_steps(steps)
    except Exception as exc:
        return [describe_exception(exc, context="eager raised")]
    sides: list[tuple[str, Callable[[], torch.nn.Module]]] = [
        ("ep.module()", record.fresh_module),
        ("unflatten(ep)", record.fresh_unflattened),
        ("decomposed", record.fresh_decomposed_module),
    ]
    findings = []
    for label, make in sides:
        try:
            module = make()
            runs = run_steps(module, inputs, steps=steps, seed=case.seed)
        except Exception as exc:
            findings.append(describe_exception(exc, context=f"{label} raised"))
            continue
        for index, (want, got) in enumerate(zip(eager_steps, runs, strict=True), start=1):
            root = f"step {index}: output" if steps > 1 else "output"
            findings += compare_trees(
                want.output, got.output, tolerance=tolerance, root=root, names=("eager", label)
            )
    return findings
