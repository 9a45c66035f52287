"""Run a module for several steps on cloned inputs, recording what each step left behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pytest_exportcheck.capture.record import STATE_KINDS
from pytest_exportcheck.compare import Tolerance, compare_trees
from pytest_exportcheck.isolation import clone_tree, flat_inputs, seeded, snapshot_state

if TYPE_CHECKING:
    from pytest_exportcheck.capture.record import CaptureRecord


@dataclass
class Step:
    """One call: its output, the module state after it, and the inputs after it."""

    output: Any
    state: dict[str, torch.Tensor]
    inputs: list[tuple[str, Any]]


def run_steps(
    module: Callable[..., Any],
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    *,
    steps: int,
    seed: int,
    eager: bool = False,
    state_of: torch.nn.Module | None = None,
) -> list[Step]:
    """Call ``module`` ``steps`` times, each on a fresh clone of ``inputs``, seeded.

    ``eager=True`` runs with autograd enabled, the mode ``torch.export`` traces
    in (some modules take other paths under ``no_grad``, e.g. the nested-tensor
    fast path of ``nn.TransformerEncoder``); exported programs run without it.
    """
    owner = state_of if state_of is not None else module
    results = []
    for _ in range(steps):
        args, kwargs = clone_tree(inputs)
        with seeded(seed), torch.set_grad_enabled(eager):
            output = module(*args, **kwargs)
        state = snapshot_state(owner) if isinstance(owner, torch.nn.Module) else {}
        results.append(Step(output, state, flat_inputs(args, kwargs)))
    return results


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
