"""Compare two pytrees of outputs (or states) leaf by leaf, and say precisely how they differ."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

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


@dataclass(frozen=True)
class Tolerance:
    """Case overrides; ``None`` falls back to the per-dtype default."""

    atol: float | None = None
    rtol: float | None = None
    source: str = "case tolerance"

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float, str]:
        default_rtol, default_atol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        rtol = default_rtol if self.rtol is None else self.rtol
        atol = default_atol if self.atol is None else self.atol
        overridden = self.atol is not None or self.rtol is not None
        origin = self.source if overridden else f"{_dt(dtype)} default"
        return rtol, atol, origin


# For state the program must hold exactly: copies of the eager tensors.
EXACT = Tolerance(atol=0.0, rtol=0.0, source="exact")


class ErrorTracker:
    """The largest finite absolute error any comparison saw, passing or not (for reports)."""

    def __init__(self) -> None:
        self.max_abs_err: float | None = None

    def saw(self, value: float) -> None:
        if value == value and value != float("inf"):  # finite
            self.max_abs_err = value if self.max_abs_err is None else max(self.max_abs_err, value)


_TRACKER: ContextVar[ErrorTracker | None] = ContextVar("exportcheck_errors", default=None)


@contextmanager
def tracking_errors() -> Iterator[ErrorTracker]:
    tracker = ErrorTracker()
    token = _TRACKER.set(tracker)
    try:
        yield tracker
    finally:
        _TRACKER.reset(token)


def compare_trees(
    expected: Any,
    actual: Any,
    *,
    tolerance: Tolerance = Tolerance(),
    root: str = "output",
    names: tuple[str, str] = ("eager", "exported"),
) -> list[str]:
    """Differences between ``expected`` and ``actual``; empty when they agree."""
    expected_leaves, expected_spec = pytree.tree_flatten_with_path(expected)
    actual_leaves, actual_spec = pytree.tree_flatten_with_path(actual)
    if expected_spec != actual_spec:
        return [
            f"{root}: structure differs\n  {names[0]}: {_spec(expected_spec)}\n"
            f"  {names[1]}: {_spec(actual_spec)}"
        ]
    problems = []
    for (path, want), (_, got) in zip(expected_leaves, actual_leaves, strict=True):
        where = root + pytree.keystr(path)
        problem = compare_leaf(want, got, tolerance=tolerance, where=where, names=names)
        if problem:
            problems.append(problem)
    return problems


def compare_leaf(
    want: Any, got: Any, *, tolerance: Tolerance, where: str, names: tuple[str, str]
) -> str | None:
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
            return (
                f"{where}: {names[0]} gives {type(want).__name__}, "
                f"{names[1]} gives {type(got).__name__}"
            )
        if want != got and not (want != want and got != got):  # NaN == NaN here
            return f"{where}: {names[0]} {want!r} != {names[1]} {got!r}"
        return None
    if want.dtype != got.dtype:
        return f"{where}: dtype {names[0]} {_dt(want.dtype)} != {names[1]} {_dt(got.dtype)}"
    if want.shape != got.shape:
        return f"{where}: shape {names[0]} {list(want.shape)} != {names[1]} {list(got.shape)}"
    if want.device.type == "meta" or got.device.type == "meta":
        return None  # structure-only checking: meta tensors have no values
    return value_difference(want, got, tolerance=tolerance, where=where, names=names)


def value_difference(
    want: torch.Tensor,
    got: torch.Tensor,
    *,
    tolerance: Tolerance,
    where: str,
    names: tuple[str, str],
) -> str | None:
    """``None`` if within tolerance, else: count, max abs/rel error, worst index, tolerance."""
    want = want.detach().cpu()
    got = got.detach().cpu()
    rtol, atol, origin = tolerance.for_dtype(want.dtype)
    if want.numel() == 0:
        return None
    exact = tolerance.atol is None and tolerance.rtol is None
    if want.dtype == torch.bool or (exact and not (want.is_floating_point() or want.is_complex())):
        bad = want != got
        if not bool(bad.any()):
            return None
        index = _unravel(int(bad.flatten().nonzero()[0]), want.shape)
        return (
            f"{where}: {int(bad.sum())} / {want.numel()} elements differ (exact dtype "
            f"{_dt(want.dtype)}); first at index {index}: {names[0]} {want[index].item()!r}, "
            f"{names[1]} {got[index].item()!r}"
        )
    # Integer outputs reach here only with a case tolerance: compared numerically.
    wide = torch.complex128 if want.is_complex() else torch.float64
    a, b = want.to(wide), got.to(wide)
    # As torch.isclose(equal_nan=True): NaN matches only NaN, an infinity only
    # itself; a non-finite value on either side is never "within tolerance".
    same = (a == b) | (a.isnan() & b.isnan())
    finite = a.isfinite() & b.isfinite()
    abs_err = torch.where(same, torch.zeros_like(a.real), (a - b).abs())
    tracker = _TRACKER.get()
    if tracker is not None and bool(finite.any()):
        tracker.saw(float(abs_err[finite].max()))
    abs_err = torch.where(same | finite, abs_err, torch.full_like(abs_err, float("inf")))
    allowed = atol + rtol * a.abs()
    bad = ~same & ~(finite & (abs_err <= allowed))
    if not bool(bad.any()):
        return None
    # Relative to eager; where eager is exactly 0 any difference is infinitely relative.
    rel_err = torch.where(a == 0, torch.full_like(abs_err, float("inf")), abs_err / a.abs())
    worst = int(abs_err.flatten().argmax())
    index = _unravel(worst, want.shape)
    return (
        f"{where}: {int(bad.sum())} / {want.numel()} elements outside tolerance "
        f"(atol={atol:g}, rtol={rtol:g}, {origin}); max abs err {float(abs_err.max()):.3g}, "
        f"max rel err {float(rel_err[bad].max()):.3g}; worst at index {index}: "
        f"{names[0]} {_scalar(want, index)}, {names[1]} {_scalar(got, index)}"
    )


def _unravel(flat_index: int, shape: torch.Size) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(index))


def _scalar(tensor: torch.Tensor, index: tuple[int, ...]) -> str:
    value = tensor[index].item() if index else tensor.item()
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _spec(spec: pytree.TreeSpec) -> str:
    return " ".join(str(spec).split())
