"""What an unflattened child returns, matched with the eager output leaves it stands for.

Unless export preserved a child's call signature, ``unflatten`` gives it only
the outputs its parent uses, in the order its graph computes them
(``_ModuleFrame.finalize_outputs`` in ``torch/export/unflatten.py``: the nodes
with a user outside the child, a single one returned bare). Measured on torch 2.13::

    eager MultiheadAttention(x, x, x) -> (out, weights), parent keeps out  | unflat: out
    eager ViTSelfAttention-like -> (context, probs), parent keeps [0]      | unflat: context
    eager the same, both used   -> (context, probs)                       | unflat: [probs, context]

So comparing trees says "structure differs" for a child that computes exactly
what eager did. Instead each leaf the child returns is matched with an eager
output leaf of the same kind (a tensor's shape, dtype and device), each eager
leaf used once: the leaf at the same position first, then the others in order,
and among several candidates the first that agrees (a returned value must equal
*some* output of eager; which one the parent reads is the whole module's output
check's business). A returned leaf with no candidate, or agreeing with none, is
a finding. Eager leaves no returned leaf stands for were dropped by unflatten
because the parent does not use them: they are named, not compared.
"""

from __future__ import annotations

from typing import Any

import torch

from pytest_exportcheck.comparison.compare_values import (
    Tolerance,
    compare_trees,
    flatten_with_paths,
)


def _kind(leaf: Any) -> tuple[Any, ...]:
    if isinstance(leaf, torch.Tensor):
        return ("tensor", tuple(leaf.shape), leaf.dtype, leaf.device.type)
    return (type(leaf).__name__,)


def describe_leaf(leaf: Any) -> str:
    """A leaf's spelling in messages: a tensor by dtype and shape (``float32[2, 8]``)."""
    if isinstance(leaf, torch.Tensor):
        return f"{str(leaf.dtype).removeprefix('torch.')}{list(leaf.shape)}"
    return type(leaf).__name__


def compare_child_outputs(
    eager_output: Any,
    unflat_output: Any,
    *,
    tolerance: Tolerance,
    root: str,
    names: tuple[str, str] = ("eager", "unflattened"),
) -> tuple[list[str], list[str]]:
    """(problems, dropped): differences, and the eager leaves (path and kind) unflatten
    dropped. Both empty when every returned leaf equals the eager leaf it stands for."""
    problems, dropped = match_child_outputs(
        eager_output, unflat_output, tolerance=tolerance, root=root, names=names
    )
    return problems, [f"{path or 'output'} ({describe_leaf(leaf)})" for path, leaf in dropped]


def match_child_outputs(
    eager_output: Any,
    unflat_output: Any,
    *,
    tolerance: Tolerance,
    root: str,
    names: tuple[str, str] = ("eager", "unflattened"),
) -> tuple[list[str], list[tuple[str, Any]]]:
    """As :func:`compare_child_outputs`, the dropped leaves as (key path, leaf)."""
    # A None (MultiheadAttention's weights with need_weights=False) is no value a graph
    # computes or returns: nothing to stand for.
    wanted = [
        (path, leaf) for path, leaf in flatten_with_paths(eager_output)[0] if leaf is not None
    ]
    # Nor is one the child returns where eager's had a constant (a preserved signature
    # gives None for eager's ints): the return type's finding tells that, values none.
    returned = [(p, leaf) for p, leaf in flatten_with_paths(unflat_output)[0] if leaf is not None]
    unclaimed = list(range(len(wanted)))
    problems: list[str] = []
    for position, (_, got) in enumerate(returned):
        kind = _kind(got)
        candidates = [i for i in unclaimed if _kind(wanted[i][1]) == kind]
        candidates.sort(key=lambda i: i != position)  # the same position first, stable after
        if not candidates:
            problems.append(
                f"{root}: {names[1]} returns a {describe_leaf(got)} leaf (position {position}) "
                f"that no output leaf of {names[0]} matches; {names[0]} returns "
                + (", ".join(f"{p or 'output'} {describe_leaf(w)}" for p, w in wanted) or "none")
            )
            continue
        first_problems: list[str] | None = None
        for index in candidates:
            path, want = wanted[index]
            found = compare_trees(want, got, tolerance=tolerance, root=f"{root}{path}", names=names)
            if not found:
                unclaimed.remove(index)
                break
            first_problems = first_problems if first_problems is not None else found
        else:
            unclaimed.remove(candidates[0])  # reported against the most likely leaf
            problems += first_problems or []
    return problems, [wanted[i] for i in unclaimed]
