"""Tolerance policies: when a leaf of an exported output counts as equal to eager's.

``allclose`` is ``torch.testing.assert_close``'s per-dtype rule, optionally
allowing a fraction of elements outside it. ``cosine`` accepts a minimum cosine
similarity. ``fp64`` arbitrates against a float64 eager run, as Dynamo's
accuracy checker does: low-precision eager is not the truth either, so the
exported result passes if it is no further from the fp64 reference than eager
itself, times a multiplier::

    rmse(exported, ref64) <= fp64_multiplier * rmse(eager, ref64) + atol / 10

``auto`` (the default) is ``allclose``, and where allclose fails, ``fp64``
decides. Why: eager's kernels are not the truth. cuDNN's GRU on an H100 is
1.3e-4 away from float64 while the decomposed program is 1e-7 away; a plain
``allclose`` blames the export for eager's noise. The float64 run is made only
for a comparison that allclose failed, so passing cases pay nothing.

A case sets a policy for all outputs and may override it per dtype and device
(``expect.parity.overrides``); the first matching override wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

# (rtol, atol) per dtype, the defaults of torch.testing.assert_close; other dtypes compare exactly.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
POLICIES = ("auto", "allclose", "fp64", "cosine")
DEFAULT_FP64_MULTIPLIER = 2.0
DEFAULT_COSINE = 0.99


@dataclass(frozen=True)
class Override:
    """Policy fields for outputs of one dtype and/or device (``None``: keep the case's)."""

    dtype: str | None = None  # canonical torch name: float32, bfloat16, ...
    device: str | None = None  # a kind (cuda) or a name (cuda:1)
    fields: tuple[tuple[str, Any], ...] = ()

    def matches(self, dtype: torch.dtype, device: torch.device) -> bool:
        name = f"{device.type}:{device.index}" if device.index is not None else device.type
        dtype_ok = self.dtype is None or self.dtype == str(dtype).removeprefix("torch.")
        device_ok = self.device is None or self.device in (device.type, name)
        return dtype_ok and device_ok


@dataclass(frozen=True)
class Tolerance:
    """Case overrides; ``None`` atol/rtol fall back to the per-dtype default."""

    atol: float | None = None
    rtol: float | None = None
    source: str = "case tolerance"
    policy: str = "auto"
    max_mismatch: float = 0.0  # fraction of elements allowed outside allclose
    fp64_multiplier: float = DEFAULT_FP64_MULTIPLIER
    cosine: float = DEFAULT_COSINE
    overrides: tuple[Override, ...] = ()
    # Tiny leaves compared at their own scale (compare_values.own_scale); off for state
    # a lowering target recomputes in another order (checks/lowered.py).
    own_scale: bool = True

    @classmethod
    def of_case(cls, case: Any) -> Tolerance:
        parity = case.expect.parity
        return cls(
            atol=parity.atol,
            rtol=parity.rtol,
            policy=parity.policy,
            max_mismatch=parity.max_mismatch,
            fp64_multiplier=parity.fp64_multiplier,
            cosine=parity.cosine,
            overrides=tuple(
                Override(o.dtype, o.device, tuple(o.fields.items())) for o in parity.overrides
            ),
        )

    def resolve(self, dtype: torch.dtype, device: torch.device) -> Tolerance:
        """This tolerance with the first override matching ``dtype`` and ``device`` applied."""
        for override in self.overrides:
            if override.matches(dtype, device):
                fields = dict(override.fields)
                dtype_name = override.dtype or "any dtype"
                source = f"override for {dtype_name} on {override.device or 'any device'}"
                return replace(self, overrides=(), source=source, **fields)
        return self

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float, str]:
        default_rtol, default_atol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        rtol = default_rtol if self.rtol is None else self.rtol
        atol = default_atol if self.atol is None else self.atol
        overridden = self.atol is not None or self.rtol is not None
        origin = self.source if overridden else f"{str(dtype).removeprefix('torch.')} default"
        return rtol, atol, origin


# For state the program must hold exactly: copies of the eager tensors.
EXACT = Tolerance(atol=0.0, rtol=0.0, source="exact", policy="allclose")


def cosine_verdict(want: torch.Tensor, got: torch.Tensor, tolerance: Tolerance) -> str | None:
    """None if the cosine similarity reaches the threshold, else the numbers compared."""
    a, b = want.flatten().double(), got.flatten().double()
    norms = float(a.norm() * b.norm())
    if norms == 0.0:
        return None if bool(torch.equal(a, b)) else "cosine similarity undefined (a zero vector)"
    similarity = float(a.dot(b)) / norms
    if similarity >= tolerance.cosine:
        return None
    return f"cosine similarity {similarity:.6f} < {tolerance.cosine:g} (policy cosine)"


def fp64_verdict(
    want: torch.Tensor,
    got: torch.Tensor,
    reference: torch.Tensor | None,
    tolerance: Tolerance,
    atol: float,
    names: tuple[str, str],
) -> str | None:
    """None if ``got`` is no further from the fp64 reference than ``want`` (x the multiplier)."""
    policy = f"policy {tolerance.policy}"
    if reference is None or tuple(reference.shape) != tuple(want.shape):
        return f"no fp64 reference (the model did not run in float64): allclose decided ({policy})"
    ref = reference.detach().cpu().double()
    eager_error = _rmse(want, ref)
    exported_error = _rmse(got, ref)
    bound = tolerance.fp64_multiplier * eager_error + atol / 10
    if exported_error <= bound:
        return None
    return (
        f"vs the fp64 reference {names[1]} rmse {exported_error:.3g} > "
        f"{tolerance.fp64_multiplier:g} x {names[0]} rmse {eager_error:.3g} + {atol / 10:.2g} "
        f"({policy})"
    )


def _rmse(value: torch.Tensor, reference: torch.Tensor) -> float:
    diff = value.detach().cpu().double() - reference
    return float(diff.pow(2).mean().sqrt()) if diff.numel() else 0.0
