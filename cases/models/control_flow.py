"""Control flow: data-dependent (torch.cond) and shape-dependent python branches."""

from __future__ import annotations

import torch
from torch import nn


class CondGate(nn.Module):
    """Chooses between two parameterised branches with ``torch.cond``.

    Export trap: the predicate depends on data, so both branches are traced
    into subgraphs (``true_graph_0`` / ``false_graph_0``) that read lifted
    parameters as operands; parity must hold for whichever branch runs.
    Unflatten attaches both subgraphs to the root as GraphModule children.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.w_pos = nn.Parameter(torch.linspace(0.5, 1.0, dim))
        self.w_neg = nn.Parameter(torch.linspace(-1.0, -0.5, dim))
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)

        def pos(h: torch.Tensor) -> torch.Tensor:
            return h * self.w_pos

        def neg(h: torch.Tensor) -> torch.Tensor:
            return torch.relu(h) + self.w_neg

        return torch.cond(h.sum() > 0, pos, neg, (h,))


class CondSubmodules(nn.Module):
    """``torch.cond`` whose branches call submodules.

    Export trap: ``expand`` / ``shrink`` are only called *inside* the cond
    subgraphs, so unflatten has no ``call_module`` for them. In eager,
    ``torch.cond`` runs its branches through Dynamo: forward hooks on the
    branch modules either raise ("HOP: Unsafe side effect") or, if the branch
    was compiled earlier without hooks, silently do not fire.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.expand = nn.Linear(dim, dim)
        self.shrink = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.mean() > 0, self.expand, self.shrink, (x,))


class ShapeBranch(nn.Module):
    """Python ``if`` on a static shape and a python attribute.

    Export trap: data-*independent* control flow is resolved at trace time;
    only the taken branch appears in the graph; ``never_used`` has no calls,
    is lifted with no users by non-strict and not lifted at all by strict or
    Dynamo.
    """

    def __init__(self, dim: int = 4, use_residual: bool = True) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.never_used = nn.Linear(dim, dim)
        self.use_residual = use_residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if x.shape[0] > 1 and self.use_residual:
            return h + x
        return self.never_used(h)
