"""Compare two pytrees of outputs (or states) leaf by leaf, and say precisely how they differ."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.comparison.tolerance import (  # noqa: F401 - re-exported for checks
    DEFAULT_TOLERANCES,
    EXACT,
    Tolerance,
    cosine_verdict,
    fp64_verdict,
)

DEFAULT = Tolerance()  # the per-dtype defaults of torch.testing.assert_close
# The default atol is small against an output only when it is at most 1/OWN_SCALE of the
# output's largest magnitude (0.1%: float32's 1e-5 against 1e-2); below that the output
# is compared at its own scale (own_scale).
OWN_SCALE = 1000


class ErrorTracker:
    """What an item's value comparisons came to, for its report: how many tensor pairs
    were compared (``compared``), the largest finite absolute error any of them saw,
    passing or not, and the tolerance that comparison used ("max abs err 3e-4 at
    atol=1e-3"). A check's probes are kept out of it (:func:`untracked`)."""

    def __init__(self) -> None:
        self.compared = 0
        self.max_abs_err: float | None = None
        self.tolerance: str | None = None

    def saw(self, value: float, tolerance: str) -> None:
        if value == value and value != float("inf"):  # finite
            if self.max_abs_err is None or value > self.max_abs_err:
                self.max_abs_err, self.tolerance = value, tolerance
            elif self.tolerance is None:
                self.tolerance = tolerance


_TRACKER: ContextVar[ErrorTracker | None] = ContextVar("exportcheck_errors", default=None)


@contextmanager
def tracking_errors() -> Iterator[ErrorTracker]:
    tracker = ErrorTracker()
    token = _TRACKER.set(tracker)
    try:
        yield tracker
    finally:
        _TRACKER.reset(token)


def untracked() -> AbstractContextManager[ErrorTracker]:
    """Comparisons that are not the item's judgment, kept out of its report: a probe
    that decides what to tell (is eager's output mode-dependent?), the search for the
    first diverging submodule, eager's soundness calls, an identity check of state at
    exact tolerance. Without this an item that judged no values would report the
    probe's "max abs err 0.13, atol=1e-05" as if it had."""
    return tracking_errors()


def compare_trees(
    expected: Any,
    actual: Any,
    *,
    tolerance: Tolerance = DEFAULT,
    root: str = "output",
    names: tuple[str, str] = ("eager", "exported"),
    reference: Callable[[], Any] | None = None,
) -> list[str]:
    """Differences between ``expected`` and ``actual``; empty when they agree.

    ``reference`` gives the float64 run (same structure as ``expected``, or
    ``None`` where the model cannot run in float64) that the ``fp64`` and
    ``auto`` policies arbitrate with. It is called only once a leaf fails
    allclose: most comparisons never pay for a float64 run. Without it,
    ``auto`` is plain allclose. With it (a comparison against eager), a leaf whose
    largest magnitude is below ``OWN_SCALE`` x atol is compared at its own scale.
    """
    expected_leaves, expected_spec = flatten_with_paths(expected)
    actual_leaves, actual_spec = flatten_with_paths(actual)
    if expected_spec != actual_spec:
        return [
            f"{root}: structure differs\n  {names[0]}: {_spec(expected_spec)}\n"
            f"  {names[1]}: {_spec(actual_spec)}"
        ]
    reference_leaves: list[Any] = []

    def reference_leaf(index: int) -> Any:
        if not reference_leaves:
            tree = reference() if reference is not None else None
            leaves, spec = pytree.tree_flatten(tree)
            if spec != expected_spec:  # no float64 run, or one of another structure
                leaves = [None] * len(expected_leaves)
            reference_leaves.extend(leaves)
        return reference_leaves[index]

    problems = []
    pairs = enumerate(zip(expected_leaves, actual_leaves, strict=True))
    for index, ((path, want), (_, got)) in pairs:
        leaf = None if reference is None else (lambda index=index: reference_leaf(index))
        problem = compare_leaf(
            want, got, tolerance=tolerance, where=root + path, names=names, reference=leaf
        )
        if problem:
            problems.append(problem)
    return problems


def flatten_with_paths(tree: Any) -> tuple[list[tuple[str, Any]], Any]:
    """Leaves with their key paths as text (``[0]['logits']``), and the tree spec.

    A node registered without ``flatten_with_keys_fn`` (transformers' ``ModelOutput``)
    has no key paths: its leaves are numbered instead, in pytree's order.
    """
    try:
        leaves, spec = pytree.tree_flatten_with_path(tree)
    except ValueError:
        flat, spec = pytree.tree_flatten(tree)
        return [(f".leaf[{index}]", leaf) for index, leaf in enumerate(flat)], spec
    return [(pytree.keystr(path), leaf) for path, leaf in leaves], spec


def compare_leaf(
    want: Any,
    got: Any,
    *,
    tolerance: Tolerance,
    where: str,
    names: tuple[str, str],
    reference: Callable[[], torch.Tensor | None] | None = None,
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
    return value_difference(
        want, got, tolerance=tolerance, where=where, names=names, reference=reference
    )


def value_difference(
    want: torch.Tensor,
    got: torch.Tensor,
    *,
    tolerance: Tolerance,
    where: str,
    names: tuple[str, str],
    reference: Callable[[], torch.Tensor | None] | None = None,
) -> str | None:
    """``None`` if within tolerance, else: count, max abs/rel error, worst index, tolerance.

    Outside ``allclose``, the policy decides: ``max_mismatch`` lets a fraction of
    elements through, ``cosine`` and ``fp64`` judge the whole leaf instead, and
    ``auto`` asks ``fp64`` when it has a ``reference`` to ask with.
    """
    tolerance = tolerance.resolve(want.dtype, want.device)
    tracker = _TRACKER.get()
    if tracker is not None:
        tracker.compared += 1
    # One tensor on both sides (state two runs left as built share one frozen copy,
    # see frozen_values.py) needs no reading at all.
    same_tensor = want is got
    want = want.detach() if same_tensor else want.detach().cpu()
    got = got.detach() if same_tensor else got.detach().cpu()
    if same_tensor or torch.equal(want, got):
        # Equal (a NaN never is, unless one tensor): within any tolerance. Most state the
        # stepped runs compare is, and the path below makes ~8 float64 temporaries of
        # each leaf: 56 of AlexNet's 72 s mutation item, and most of its peak memory,
        # before this. The error tracker hears of it as the path below would tell it
        # (float leaves only, and finite elements only); once it holds an error, a 0
        # cannot change it, and the check for a finite element is not worth its read.
        exact = tolerance.atol is None and tolerance.rtol is None
        counted = want.dtype != torch.bool and (
            want.is_floating_point() or want.is_complex() or not exact
        )
        if (
            tracker is not None
            and tracker.max_abs_err is None
            and counted
            and bool(want.isfinite().any())
        ):
            tracker.saw(0.0, _tolerance_text(tolerance, *tolerance.for_dtype(want.dtype)))
        return None
    rtol, atol, origin = tolerance.for_dtype(want.dtype)
    if want.numel() == 0:
        return None
    exact = tolerance.atol is None and tolerance.rtol is None
    if (
        reference is not None
        and tolerance.atol is None
        and tolerance.own_scale
        and want.is_floating_point()
    ):
        # Against eager, a leaf whose largest magnitude does not dwarf atol (common
        # at random initialization: efficientnet_v2_s's 1.65e-5 against float32's
        # 1e-5) would pass 0.5*out or -out: compare it at its own scale instead.
        atol, origin = own_scale(want, atol, origin)
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
    if tracker is not None and bool(finite.any()):
        tracker.saw(float(abs_err[finite].max()), _tolerance_text(tolerance, rtol, atol, origin))
    abs_err = torch.where(same | finite, abs_err, torch.full_like(abs_err, float("inf")))
    allowed = atol + rtol * a.abs()
    bad = ~same & ~(finite & (abs_err <= allowed))
    outside = int(bad.sum())
    if outside == 0:
        return None
    policy = tolerance.policy
    if policy in ("allclose", "auto") and outside <= tolerance.max_mismatch * want.numel():
        return None
    verdict = None
    if policy == "cosine":
        verdict = cosine_verdict(want, got, tolerance)
    arbitrated = policy == "fp64" or (policy == "auto" and reference is not None)
    if arbitrated and not want.is_complex():
        ref = reference() if reference is not None else None
        verdict = fp64_verdict(want, got, ref, tolerance, atol, names)
        if verdict is None:
            return None  # no further from float64 than eager: eager's own error, not export's
    elif policy == "cosine" and verdict is None:
        return None
    # Relative to eager; where eager is exactly 0 any difference is infinitely relative.
    rel_err = torch.where(a == 0, torch.full_like(abs_err, float("inf")), abs_err / a.abs())
    worst = int(abs_err.flatten().argmax())
    index = _unravel(worst, want.shape)
    allowance = (
        f", {tolerance.max_mismatch:.3g} of elements allowed" if tolerance.max_mismatch else ""
    )
    text = (
        f"{where}: {outside} / {want.numel()} elements outside tolerance "
        f"(atol={atol:g}, rtol={rtol:g}, {origin}{allowance}); max abs err "
        f"{float(abs_err.max()):.3g}, max rel err {float(rel_err[bad].max()):.3g}; worst at "
        f"index {index}: {names[0]} {_scalar(want, index)}, {names[1]} {_scalar(got, index)}"
    )
    return f"{text}; {verdict}" if verdict else text


def _tolerance_text(tolerance: Tolerance, rtol: float, atol: float, origin: str) -> str:
    """``atol=1e-05, rtol=1.3e-06 (float32 default)``: what a leaf was held to, for reports."""
    policy = "" if tolerance.policy in ("auto", "allclose") else f", policy {tolerance.policy}"
    return f"atol={atol:g}, rtol={rtol:g} ({origin}{policy})"


def own_scale(want: torch.Tensor, atol: float, origin: str) -> tuple[float, str]:
    """``atol`` capped at 1/OWN_SCALE of ``want``'s largest finite magnitude, and its origin.

    An output of largest magnitude ``scale`` below ``OWN_SCALE * atol`` is compared
    as it would be were it scaled up to ``OWN_SCALE * atol``: with ``scale /
    OWN_SCALE``. The cap is continuous (at the bound it is atol) and the same for
    any output below it, whatever its size, so tiny outputs are not held to a
    tighter *relative* allowance than moderate ones; where honest float noise
    still exceeds it, the fp64 arbitration of the ``auto`` policy decides.
    """
    finite = want[want.isfinite()]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    if not 0.0 < scale < OWN_SCALE * atol:
        return atol, origin
    return scale / OWN_SCALE, (
        f"{origin}, at the output's scale: max |eager| {scale:.3g} < {OWN_SCALE} x atol {atol:g}"
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
