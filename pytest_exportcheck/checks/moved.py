"""moved: a CPU export moved with ``move_to_device_pass`` behaves like eager on the device.

The record this check reads is the CPU capture after ``move_to_device_pass``
(see ``capture/moved.py``); eager runs on its own copy on the same device.
Over ``expect.parity.steps`` calls (at least one), outputs, every lifted
parameter and buffer, and mutated inputs must agree within tolerance.
"""

from __future__ import annotations

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.steps import compare_step, lifted_state
from pytest_exportcheck.comparison.compare_values import Tolerance
from pytest_exportcheck.containment.failures import describe_exception
from pytest_exportcheck.spec import Case


def check_moved(case: Case, record: CaptureRecord) -> list[str]:
    if not isinstance(record, ProgramRecord):  # the path's not_applicable keeps others out
        raise TypeError(f"moved needs an ExportedProgram; {record.capture} gives none")
    subject = record.subject
    steps = case.expect.parity.steps
    tolerance = Tolerance.of_case(case)
    inputs = subject.inputs_copy()
    label = f"moved to {record.device}"
    try:
        eager_steps = subject.eager_steps(steps)
        moved_steps = subject.run(record.fresh_module(), inputs, steps=steps)
    except Exception as exc:
        return [describe_exception(exc, context=f"running the program {label} raised")]
    lifted = lifted_state(record)
    for index, (want, got) in enumerate(zip(eager_steps, moved_steps, strict=True), start=1):
        problems = compare_step(
            want, got, label, lifted, subject.tensor_groups, tolerance,
            reference=lambda index=index: subject.fp64_step(index - 1, steps),
        )  # fmt: skip
        if problems:
            return [f"after step {index}/{steps}: {p}" for p in problems]
    return []
