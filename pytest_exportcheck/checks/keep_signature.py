"""Where the case key ``preserve_signatures`` would keep a child's calling convention.

Without ``preserve_module_call_signature`` an unflattened child takes the tensors
of its inputs in its graph's own order (``u.inner(x, x * 2)`` against a graph of
``(mul, x)``: wrong values, silently), maps keywords onto those inputs by name
(``kwarg_names length 1 does not match kwargs length 2``), and returns the
leaves its parent uses (eager ``HeadOut``, unflatten a bare ``Tensor``). Naming
the child in the case's ``preserve_signatures`` (passed to export as that
argument) keeps eager's convention: measured on torch 2.13, strict and not, for
each of the three. So a hierarchy finding of one of them names the key.

Not where it was measured not to help: a child eager calls more than once per
forward (a preserved child keeps one graph, its first call's: ``u.step(x,
scale=3.0)`` then computes with ``2.0``, a graph specialized to width 8 raises at
width 4, and RAFT's update block, called once per flow update, loses its own
submodules' calls), a child its parent passes a dynamic size (torch passes the
size under preserve too), and a child the case names already.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.localize import Call


@dataclass(frozen=True)
class Remedy:
    """What a calling-convention finding of a child ends with: how the case keeps eager's
    convention (``keeps``), or why no export of it does (told, never failed)."""

    text: str
    keeps: bool


def keep_signature_hint(fqn: str) -> str:
    """The remedy, as the case writes it: ``add `preserve_signatures: [inner]` ...``."""
    return (
        f"add `preserve_signatures: [{fqn}]` to the case (torch.export's "
        "preserve_module_call_signature) to keep eager's calling convention"
    )


def hint_applies(case: Any, fqn: str, calls: list[Call]) -> bool:
    """Whether naming ``fqn`` in ``preserve_signatures`` is known to keep its convention:
    not named yet, and called once per forward. A preserved child keeps one graph, its
    first call's (wrong for a second call with other constants or shapes), and one called
    several times loses its own submodules' calls (torchvision's RAFT update block, called
    once per flow update: each of its submodules then counts 0 calls; torch 2.13)."""
    if case.preserves(fqn):
        return False
    return sum(call.fqn == fqn for call in calls) == 1


def takes_sizes(stand_in: Call | None, call: Call) -> bool:
    """Whether the unflattened parent passes the child ints eager's call did not: a size
    it reads, which torch passes under ``preserve_module_call_signature`` too."""
    if stand_in is None:
        return False
    return _ints(stand_in.inputs) > _ints(call.inputs)


def _ints(inputs: Any) -> int:
    leaves = pytree.tree_leaves(inputs)
    return sum(isinstance(v, int) and not isinstance(v, bool) for v in leaves)
