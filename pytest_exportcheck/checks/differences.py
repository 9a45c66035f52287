"""Known classes of difference between captures: named once, with the reason and the fix.

A consistency row that differs is either a finding the user must look at, or
a documented way capture paths differ. One such way is met by every
torchvision model with BatchNorm: non-strict export lifts every parameter and
buffer; strict export and the Dynamo paths lift only the state ``forward``
reads (eval-mode BatchNorm never reads ``num_batches_tracked``; unused aux
heads are never read at all). The difference is real —
``ep.module().load_state_dict(model.state_dict())`` fails strictly for the
strict program — but it is one cause, not 121 rows::

    lifted: *.num_batches_tracked (53 buffers): forward never reads them; ...
        accept with: - {row: "lifted: *.num_batches_tracked", reason: "..."}

A row joins the class only where eager is *seen* not to read the tensor: one
more eager call under a dispatch mode that records every tensor an op gets.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from pytest_exportcheck.model.isolation import module_state, seeded

UNREAD_REASON = (
    "forward never reads them: non-strict export lifts every parameter and buffer, strict "
    "export and the Dynamo paths only what forward reads (ep.module().load_state_dict("
    "model.state_dict()) then fails strictly for their programs)"
)
UNREAD_ACCEPT = "state forward never reads: only non-strict export lifts it"
TIED_REASON = (
    "non-strict export lifts such a tensor once per name, strict export and the Dynamo paths "
    "once (strict export of torch 2.6-2.9 once per name too); ep.module() keeps the tie in both"
)
TIED_ACCEPT = "a tied or aliased tensor: non-strict export lifts it once per name, the others once"


@dataclass(frozen=True)
class KnownDifference:
    """Rows of one documented class, the accept pattern covering them, and why."""

    pattern: str
    rows: tuple[str, ...]
    noun: str
    reason: str
    accept_reason: str
    observed: str = ""  # what the scaffold's REVIEW comment says was seen, where not unread

    def render(self) -> str:
        count = f"{len(self.rows)} {self.noun}{'s' if len(self.rows) != 1 else ''}"
        return (
            f"{self.pattern} ({count}): {self.reason}; accept with:\n"
            f'    - {{row: "{self.pattern}", reason: "{self.accept_reason}"}}'
        )


def unread_state(subject: Any) -> frozenset[str] | None:
    """FQNs of the parameters and buffers one eager forward never hands to an op;
    None where that cannot be seen (a higher-order op runs its branches unwatched)."""
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    state = module_state(model)
    names_of: dict[int, list[str]] = defaultdict(list)
    for name, tensor in state.items():
        names_of[id(tensor)].append(name)
    watch = _ReadWatch(set(names_of))
    try:
        with seeded(subject.case.seed), torch.enable_grad(), watch:
            model(*args, **kwargs)
    except Exception:
        return None
    if watch.saw_higher_order_op:
        return None
    return frozenset(
        name for key, names in names_of.items() if key not in watch.read for name in names
    )


def classify(
    rows: list[str],
    table: dict[str, dict[str, str]],
    unread: frozenset[str] | None,
    groups: dict[str, tuple[str, ...]] | None = None,
) -> tuple[list[KnownDifference], list[str]]:
    """The known classes among differing ``rows``, and the rows left unexplained.

    ``groups``: every FQN naming each eager tensor (``Subject.tensor_groups``), which
    tells a tied or aliased tensor's rows.
    """
    tied = _tied(rows, table, groups or {})
    rest = [row for row in rows if row not in {k.rows[0] for k in tied}]
    known, unexplained = _unread(rest, table, unread)
    return [*tied, *known], unexplained


def _tied(
    rows: list[str], table: dict[str, dict[str, str]], groups: dict[str, tuple[str, ...]]
) -> list[KnownDifference]:
    """One known difference per differing row of a tensor with several names, where every
    capture lifts it, under names of that tensor only: captures differ in how many times
    they lift it (non-strict export once per name, strict export and Dynamo once)."""
    known = []
    for row in rows:
        group = groups.get(row.removeprefix("lifted: "), ())
        if not row.startswith("lifted: ") or len(group) < 2:
            continue
        lifted = {capture: _targets(cell) for capture, cell in table[row].items()}
        if not all(names and set(names) <= set(group) for names in lifted.values()):
            continue  # a capture that lifts it under no name, or under another tensor's
        cells = "; ".join(f"{capture}: {', '.join(names)}" for capture, names in lifted.items())
        observed = f"observed: a tied or aliased tensor lifted as {cells}"
        known.append(
            KnownDifference(row, (row,), "row", _tie_reason(group, lifted), TIED_ACCEPT, observed)
        )
    return known


def _targets(cell: str) -> list[str]:
    """``parameter emb.weight, parameter head.weight`` → the names lifted (the FQNs)."""
    if cell == "—" or cell.startswith("n/a"):
        return []
    return [entry.split(" ", 1)[-1] for entry in cell.split(", ")]


def _tie_reason(group: tuple[str, ...], lifted: dict[str, list[str]]) -> str:
    by_count: dict[int, list[str]] = defaultdict(list)
    for capture, names in lifted.items():
        by_count[len(names)].append(capture)
    how = ", ".join(
        f"{_and(captures)} " + ("once" if count == 1 else f"once per name ({count} placeholders)")
        for count, captures in sorted(by_count.items(), reverse=True)
    )
    return f"one tensor named {_and(list(group))} (tied or aliased), lifted by {how}: {TIED_REASON}"


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _unread(
    rows: list[str], table: dict[str, dict[str, str]], unread: frozenset[str] | None
) -> tuple[list[KnownDifference], list[str]]:
    """Rows of state forward never reads, lifted by non-strict export only."""
    if not unread:
        return [], list(rows)
    unread_rows = [
        row
        for row in rows
        if row.startswith("lifted: ")
        and row.removeprefix("lifted: ") in unread
        and "—" in table[row].values()
    ]
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for row in unread_rows:
        by_leaf[row.rsplit(".", 1)[-1]].append(row)
    known = []
    for leaf, members in by_leaf.items():
        pattern = f"lifted: *.{leaf}" if len(members) > 1 else members[0]
        known.append(
            KnownDifference(pattern, tuple(members), "tensor", UNREAD_REASON, UNREAD_ACCEPT)
        )
    explained = set(unread_rows)
    return known, [row for row in rows if row not in explained]


class _ReadWatch(TorchDispatchMode):
    supports_higher_order_operators = True

    def __init__(self, watched: set[int]) -> None:
        super().__init__()
        self.watched = watched
        self.read: set[int] = set()
        self.saw_higher_order_op = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if not isinstance(func, torch._ops.OpOverload):
            self.saw_higher_order_op = True
        for leaf in pytree.tree_leaves((args, kwargs)):
            if isinstance(leaf, torch.Tensor) and id(leaf) in self.watched:
                self.read.add(id(leaf))
        return func(*args, **kwargs)
