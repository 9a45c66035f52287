"""Comparing stepped runs: what a check compares after each call of eager and a program."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.model.runs import Step
from pytest_exportcheck.model.subject import Subject


def lifted_state(record: CaptureRecord) -> set[str]:
    """Every FQN (with its aliases) the program lifts as a parameter, buffer or constant.

    State forward never reads is not lifted (strict export), and a runnable
    module need not carry it; everything lifted must be there and agree.
    """
    groups = record.subject.tensor_groups
    return {
        alias
        for p in record.placeholders
        if p.kind in STATE_KINDS and p.target
        for alias in groups.get(p.target, (p.target,))
    }


def fp64_output(subject: Subject, index: int, steps: int) -> Callable[[], Any]:
    """The output of float64 eager's step ``index``, run only if a comparison asks."""

    def output() -> Any:
        step = subject.fp64_step(index, steps)
        return None if step is None else step.output

    return output


def compare_step(
    want: Step,
    got: Step,
    label: str,
    lifted: set[str],
    groups: dict[str, tuple[str, ...]],
    tolerance: Tolerance,
    reference: Callable[[], Step | None] | None = None,
    state_tolerance: Tolerance | None = None,
) -> list[str]:
    """Differences after one step: outputs, every lifted parameter/buffer, tensor inputs.

    ``reference`` gives float64 eager's same step, for the policies that arbitrate;
    ``state_tolerance``, where given, is the one parameters and buffers are held to.
    """
    names = ("eager", label)

    def part(pick: Callable[[Step], Any]) -> Callable[[], Any] | None:
        if reference is None:
            return None
        return lambda: None if (step := reference()) is None else pick(step)

    problems = compare_trees(
        want.output, got.output, tolerance=tolerance, names=names,
        reference=part(lambda step: step.output),
    )  # fmt: skip
    for fqn, eager_value in want.state.items():
        # A module may keep one name of a tied/shared tensor; any alias will do.
        held = next((got.state[a] for a in groups.get(fqn, (fqn,)) if a in got.state), None)
        if held is None and fqn not in lifted:
            continue
        if held is None:
            problems.append(f"{label} has no parameter or buffer {fqn!r}")
            continue
        problems += compare_trees(
            eager_value, held, tolerance=state_tolerance or tolerance, root=f"state {fqn!r}",
            names=names,
            reference=part(lambda step, fqn=fqn: step.state.get(fqn)),
        )  # fmt: skip
    got_inputs = dict(got.inputs)
    for path, value in want.inputs:
        if isinstance(value, torch.Tensor):
            problems += compare_trees(
                value, got_inputs.get(path), tolerance=tolerance, root=f"input {path}",
                names=names, reference=part(lambda step, path=path: dict(step.inputs).get(path)),
            )  # fmt: skip
    return problems
