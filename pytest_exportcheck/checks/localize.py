"""Where outputs start to differ: the first submodule whose output diverges while its inputs agree.

On a parity failure, eager and ``unflatten(ep)`` — the same module tree — run
once more, each on its own copy with cloned inputs, with hooks on every
submodule that keep each call's inputs and output. A module called twice is
compared call by call. Calls are visited in the order they *finish*, so inner
modules come before the modules that contain them::

    blocks.0.lin  blocks.0.act  blocks.0   blocks.1.lin  blocks.1.act  blocks.1   (root)
    agree         agree         agree      agree         DIVERGES      diverges   diverges
                                                          ^ inputs agree: reported

"first diverging: blocks.1.act (Perturbed) — max abs err 0.1; inputs agree".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.compare_values import Tolerance, compare_trees
from pytest_exportcheck.isolation import clone_tree, seed_everything


@dataclass
class Call:
    """One forward call of a submodule: which, the how-many-th, and what went in and out."""

    fqn: str
    index: int
    kind: str
    inputs: Any
    output: Any


def first_divergence(record: Any, tolerance: Tolerance, program: str = "unflatten(ep)") -> str:
    """One line for the parity failure of ``program`` (a runnable's label): the culprit,
    or why it cannot be told. The program that failed is the one walked: the decomposed
    program's culprit is a decomposed op's module, not a module of ``ep``."""
    make = getattr(record, "unflattened_program", None)
    if make is None:
        return f"not localized: {record.capture} has no module hierarchy to compare call by call"
    subject = record.subject
    try:
        unflat = make(program)
    except Exception as exc:
        return f"not localized: torch.export.unflatten raised {type(exc).__name__}"
    seed = subject.case.seed
    try:
        eager = hooked_calls(subject.model_copy(), subject.inputs_copy(), seed, grad=True)
        exported = hooked_calls(unflat, subject.inputs_copy(), seed, grad=False)
    except Exception as exc:
        return f"not localized: a hooked run raised {type(exc).__name__}: {exc}".splitlines()[0]
    by_key = {(c.fqn, c.index): c for c in exported}
    compared = 0
    for want in eager:
        got = by_key.get((want.fqn, want.index))
        if got is None:
            continue
        compared += 1
        if compare_trees(want.output, got.output, tolerance=tolerance):
            if compare_trees(want.inputs, got.inputs, tolerance=tolerance):
                continue  # it diverges because its inputs already did
            call = f", call {want.index + 1}" if want.index else ""
            return (
                f"first diverging: {want.fqn} ({want.kind}{call}) — max abs err "
                f"{_max_abs_err(want.output, got.output):.3g}; inputs agree"
            )
    if not compared:
        return "not localized: no submodule call of eager was seen in the unflattened module"
    return "not localized: every submodule call agrees; the difference is in the root's own ops"


def hooked_calls(
    model: torch.nn.Module, inputs: tuple[tuple[Any, ...], dict[str, Any]], seed: int, grad: bool
) -> list[Call]:
    """Every submodule call of one forward, in the order the calls finish."""
    names: dict[int, str] = {}
    for name, module in model.named_modules():
        names.setdefault(id(module), name)
    counts: dict[int, int] = {}
    pending: dict[int, list[Any]] = {}
    calls: list[Call] = []

    def before(module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        pending.setdefault(id(module), []).append(clone_tree((args, kwargs)))

    def after(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        key = id(module)
        index = counts.get(key, 0)
        counts[key] = index + 1
        inputs = pending[key].pop()
        calls.append(Call(names[key], index, type(module).__name__, inputs, clone_tree(output)))

    handles = []
    for name, module in model.named_modules():
        if name:  # the root's output is what parity already compared
            handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(module.register_forward_hook(after, with_kwargs=True))
    try:
        args, kwargs = clone_tree(inputs)
        seed_everything(seed)
        with torch.set_grad_enabled(grad):
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _max_abs_err(want: Any, got: Any) -> float:
    worst = 0.0
    for a, b in zip(pytree.tree_leaves(want), pytree.tree_leaves(got), strict=False):
        tensors = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
        if tensors and a.shape == b.shape and (a.is_floating_point() or a.is_complex()):
            diff = (a.detach().double() - b.detach().double()).abs()
            worst = max(worst, float(diff.nan_to_num(0.0).max()) if diff.numel() else 0.0)
    return worst
