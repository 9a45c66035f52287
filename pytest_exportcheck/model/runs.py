"""Run a module for several steps on cloned inputs, recording what each step left behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from pytest_exportcheck.model.frozen_values import FrozenValues
from pytest_exportcheck.model.isolation import (
    clone_tree,
    detached,
    flat_inputs,
    seed_everything,
    snapshot_state,
)


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
    frozen: FrozenValues | None = None,
) -> list[Step]:
    """Call ``module`` ``steps`` times, each on a fresh clone of ``inputs``, seeded.

    Seeding here does not restore the caller's RNG state: callers run inside
    :func:`~pytest_exportcheck.model.isolation.seeded` (each item does), which does.

    ``eager=True`` runs with autograd enabled, the mode ``torch.export`` traces
    in (some modules take other paths under ``no_grad``, e.g. the nested-tensor
    fast path of ``nn.TransformerEncoder``); exported programs run without it.

    Each step keeps a copy of the state; with ``frozen`` (the subject's
    :class:`~pytest_exportcheck.model.frozen_values.FrozenValues`), state a step left
    as the model was built is shared, not copied: on a big model most of it.
    """
    owner = state_of if state_of is not None else module
    results = []
    for _ in range(steps):
        args, kwargs = clone_tree(inputs)
        seed_everything(seed)
        with torch.set_grad_enabled(eager):
            output = detached(module(*args, **kwargs))
        state = snapshot_state(owner, frozen) if isinstance(owner, torch.nn.Module) else {}
        results.append(Step(output, state, flat_inputs(args, kwargs)))
    return results
