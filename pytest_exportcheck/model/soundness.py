"""Is eager fit to be the reference? NaN/Inf outputs, RNG dependence, non-determinism.

Every value check (mutation, parity, moved) takes eager as the truth. Three
kinds of eager make that truth worthless while every check still passes:

* an output holding **NaN or infinities**: NaN compares equal to NaN, so an
  exported program that computes garbage in the same places passes parity;
* an output that **changes with the RNG seed** (dropout left active, sampling):
  every run is seeded alike, so parity passes, but the model the user ships
  is not the one they think they test;
* an output that changes between **two identically seeded calls**
  (``torch.empty`` read before written, the clock, non-deterministic kernels
  beyond the case's tolerance): no comparison with it means anything.

So before a value check, eager runs twice more on fresh copies: once under
the case's seed and once under another. A difference beyond the case's own
tolerance, or a non-finite output, fails the value checks at the ``eager``
stage with what was seen. ``expect.parity.allow_nonfinite`` and
``expect.parity.random`` say a case means it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pytest_exportcheck.comparison.compare_values import (
    Tolerance,
    compare_trees,
    flatten_with_paths,
    untracked,
)
from pytest_exportcheck.containment.failures import EagerError
from pytest_exportcheck.spec import Case

#: One eager call on fresh copies of the model and inputs under the given seed.
SeededCall = Callable[[int], Any]


def unsound_eager(case: Case, device: str, first: Any, call: SeededCall) -> EagerError | None:
    """Why eager cannot be the reference for value checks; None when it can.

    ``first`` is the eager output every check starts from (the call under the
    case's seed); ``call`` makes another such call under a seed of its choosing.
    """
    parity = case.expect.parity
    if not parity.allow_nonfinite:
        found = nonfinite_outputs(first)
        if found:
            return EagerError(
                f"{case.location}: eager output holds non-finite values: {'; '.join(found)}. "
                "NaN matches NaN, so the value checks would pass on garbage. Fix the model or "
                "its inputs, or set `expect.parity.allow_nonfinite: true` if these values "
                "are the intended output"
            )
    if device == "meta":
        return None
    tolerance = Tolerance.of_case(case)
    with untracked():  # these comparisons are not the item's judgment
        again = compare_trees(
            first,
            call(case.seed),
            tolerance=tolerance,
            names=("first call", "second call"),
        )
        if again:
            return EagerError(
                f"{case.location}: eager is not deterministic: two calls under the same seed "
                f"on fresh copies differ beyond the case's tolerance ({_first(again)}). The "
                "output depends on something the seed does not fix (memory read before it "
                "is written, the clock, non-deterministic kernels); no comparison with it "
                "means anything"
            )
        if parity.random:
            return None
        other_seed = case.seed + 1
        reseeded = compare_trees(
            first,
            call(other_seed),
            tolerance=tolerance,
            names=(f"seed {case.seed}", f"seed {other_seed}"),
        )
    if reseeded:
        mode = f"the case builds it in {case.model.mode} mode"
        return EagerError(
            f"{case.location}: eager output depends on the RNG: calls under seeds "
            f"{case.seed} and {other_seed} differ ({_first(reseeded)}). Dropout or another "
            f"random op is active ({mode}); the value checks would pass only because every "
            "run is seeded alike. Set `mode: eval` under `model:`, or set "
            "`expect.parity.random: true` if a random forward is intended"
        )
    return None


def nonfinite_outputs(output: Any) -> list[str]:
    """``output[0]: 3 NaN, 1 inf of 16 elements`` for each floating leaf holding any."""
    found = []
    leaves, _ = flatten_with_paths(output)
    for path, leaf in leaves:
        if not isinstance(leaf, torch.Tensor) or leaf.device.type == "meta":
            continue
        if not (leaf.is_floating_point() or leaf.is_complex()):
            continue
        values = leaf.detach()
        nans = int(values.isnan().sum())
        infs = int(values.isinf().sum())
        if nans or infs:
            counts = ", ".join(
                f"{count} {what}" for count, what in ((nans, "NaN"), (infs, "inf")) if count
            )
            found.append(f"output{path}: {counts} of {values.numel()} elements")
    return found


def _first(findings: list[str]) -> str:
    more = f"; {len(findings) - 1} more" if len(findings) > 1 else ""
    return findings[0].splitlines()[0] + more
