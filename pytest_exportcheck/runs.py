"""Run a module for several steps on cloned inputs, recording what each step left behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from pytest_exportcheck.build import seed_everything
from pytest_exportcheck.isolation import clone_tree, flat_inputs, snapshot_state


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
    state_of: torch.nn.Module | None = None,
) -> list[Step]:
    """Call ``module`` ``steps`` times, each on a fresh clone of ``inputs``.

    The RNG is re-seeded before each call so that eager and exported runs of a
    model that draws random numbers see the same stream.
    """
    owner = state_of if state_of is not None else module
    results = []
    for _ in range(steps):
        args, kwargs = clone_tree(inputs)
        seed_everything(seed)
        with torch.no_grad():
            output = module(*args, **kwargs)
        state = snapshot_state(owner) if isinstance(owner, torch.nn.Module) else {}
        results.append(Step(output, state, flat_inputs(args, kwargs)))
    return results
