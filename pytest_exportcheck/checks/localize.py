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

Calls are paired per eager module *object*, by position (:func:`pair_calls`):
``unflatten`` may keep a later call traced apart as ``act@1``, split a module
shared as ``seq.0``/``seq.2`` into two, or keep it one, and a child returns
only the outputs its parent uses (``child_outputs.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.child_outputs import compare_child_outputs
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees, untracked
from pytest_exportcheck.model.isolation import clone_tree, module_state, seed_everything
from pytest_exportcheck.model.rng_state import RngState, rng_state

_CALL_SUFFIX = re.compile(r"@\d+(?=\.|$)")


def base_fqn(name: str) -> str:
    """``blocks.0.act@1`` → ``blocks.0.act``: the module a call traced apart is a call of."""
    return _CALL_SUFFIX.sub("", name)


@dataclass
class Call:
    """One forward call of a submodule: which, the how-many-th, and what went in and out."""

    fqn: str
    index: int
    kind: str
    inputs: Any
    output: Any
    # The generator state the call started from: a call that draws random numbers
    # (Dropout in train mode) is replayed under it (``model/rng_state.py``).
    rng: RngState | None = None
    # The state eager mutates (``hooked_calls(watch=...)``) of this module, by its own
    # names, as the call found it and as it left it: a replay starts from the first.
    state_before: dict[str, torch.Tensor] | None = None
    state_after: dict[str, torch.Tensor] | None = None


def first_divergence(record: Any, tolerance: Tolerance, program: str = "unflatten(ep)") -> str:
    """One line for the parity failure of ``program`` (a runnable's label): the culprit,
    or why it cannot be told. The program that failed is the one walked: the decomposed
    program's culprit is a decomposed op's module, not a module of ``ep``."""
    with untracked():  # a search for the culprit: its comparisons are not the item's
        return _first_divergence(record, tolerance, program)


def _first_divergence(record: Any, tolerance: Tolerance, program: str) -> str:
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
    compared = 0
    for want, got in pair_calls(eager, exported, subject.module_groups):
        if got is None:
            continue
        compared += 1
        problems, _ = compare_child_outputs(
            want.output, got.output, tolerance=tolerance, root="output"
        )
        if problems:
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
    model: torch.nn.Module,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    seed: int,
    grad: bool,
    watch: frozenset[str] = frozenset(),
) -> list[Call]:
    """Every submodule call of one forward, in the order the calls finish; with each
    call the state among ``watch`` (FQNs) its module holds, before and after."""
    names: dict[int, str] = {}
    for name, module in model.named_modules():
        names.setdefault(id(module), name)
    watched = {key: _own_names(names[key], watch) for key in names} if watch else {}
    counts: dict[int, int] = {}
    pending: dict[int, list[Any]] = {}
    calls: list[Call] = []

    def before(module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        state = _held(module, watched[id(module)]) if watch else None
        pending.setdefault(id(module), []).append((clone_tree((args, kwargs)), rng_state(), state))

    def after(module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        key = id(module)
        index = counts.get(key, 0)
        counts[key] = index + 1
        inputs, rng, before = pending[key].pop()
        kind = type(module).__name__
        after = _held(module, watched[key]) if watch else None
        calls.append(Call(names[key], index, kind, inputs, clone_tree(output), rng, before, after))

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


def _own_names(prefix: str, watch: frozenset[str]) -> list[str]:
    """The names, relative to the module at ``prefix``, of the watched FQNs it holds."""
    if not prefix:
        return sorted(watch)
    return sorted(fqn[len(prefix) + 1 :] for fqn in watch if fqn.startswith(prefix + "."))


def _held(module: torch.nn.Module, names: list[str]) -> dict[str, torch.Tensor]:
    state = module_state(module)
    return {name: state[name].detach().clone() for name in names if name in state}


def pair_calls(
    eager: list[Call], unflat: list[Call], groups: dict[str, tuple[str, ...]]
) -> list[tuple[Call, Call | None]]:
    """Each eager call with the call of ``unflatten(ep)`` that stands for it, or None.

    A call of ``unflat`` counts for the eager module its FQN names once the
    ``@k`` of calls traced apart is dropped (``act@1`` is ``act``), under any
    name the eager module has (``groups``: ``seq.2`` is ``seq.0`` when eager
    shares one block). Where the eager module and its unflattened stand-ins
    are called equally often, the k-th calls pair up (matched by position);
    otherwise (a no-op export records no call of, a call inside a
    ``torch.cond`` branch) a call pairs only with the one of its own name and
    index.
    """
    canonical = {name: names[0] for name, names in groups.items()}
    by_module: dict[str, list[Call]] = {}
    by_name: dict[tuple[str, int], Call] = {}
    for call in unflat:
        by_name[(call.fqn, call.index)] = call
        owner = canonical.get(base_fqn(call.fqn))
        if owner is not None:
            by_module.setdefault(owner, []).append(call)
    eager_counts: dict[str, int] = {}
    for call in eager:
        eager_counts[call.fqn] = eager_counts.get(call.fqn, 0) + 1
    pairs: list[tuple[Call, Call | None]] = []
    for call in eager:
        stand_ins = by_module.get(canonical.get(call.fqn, call.fqn), [])
        if len(stand_ins) == eager_counts[call.fqn]:
            pairs.append((call, stand_ins[call.index]))
        else:
            pairs.append((call, by_name.get((call.fqn, call.index))))
    return pairs


def _max_abs_err(want: Any, got: Any) -> float:
    worst = 0.0
    for a, b in zip(pytree.tree_leaves(want), pytree.tree_leaves(got), strict=False):
        tensors = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
        if tensors and a.shape == b.shape and (a.is_floating_point() or a.is_complex()):
            diff = (a.detach().double() - b.detach().double()).abs()
            worst = max(worst, float(diff.nan_to_num(0.0).max()) if diff.numel() else 0.0)
    return worst
