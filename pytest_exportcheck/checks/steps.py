"""Comparing stepped runs: what a check compares after each call of eager and a program."""

from __future__ import annotations

import torch

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord
from pytest_exportcheck.compare import Tolerance, compare_trees
from pytest_exportcheck.runs import Step


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


def compare_step(
    want: Step,
    got: Step,
    label: str,
    lifted: set[str],
    groups: dict[str, tuple[str, ...]],
    tolerance: Tolerance,
) -> list[str]:
    """Differences after one step: outputs, every lifted parameter/buffer, tensor inputs."""
    names = ("eager", label)
    problems = compare_trees(want.output, got.output, tolerance=tolerance, names=names)
    for fqn, eager_value in want.state.items():
        # A module may keep one name of a tied/shared tensor; any alias will do.
        held = next((got.state[a] for a in groups.get(fqn, (fqn,)) if a in got.state), None)
        if held is None and fqn not in lifted:
            continue
        if held is None:
            problems.append(f"{label} has no parameter or buffer {fqn!r}")
            continue
        problems += compare_trees(
            eager_value, held, tolerance=tolerance, root=f"state {fqn!r}", names=names
        )
    got_inputs = dict(got.inputs)
    for path, value in want.inputs:
        if isinstance(value, torch.Tensor):
            problems += compare_trees(
                value, got_inputs.get(path), tolerance=tolerance, root=f"input {path}", names=names
            )
    return problems
