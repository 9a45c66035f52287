"""Plain feed-forward models: the baseline every capture path must get right."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    """Two Linear layers around a ReLU.

    Export trap: none on purpose -- the baseline; placeholder order must follow
    parameter registration order (``fc1`` before ``fc2``) in both capture modes.
    """

    def __init__(self, dim: int = 4, hidden: int = 8, out: int = 3) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class ConvNet(nn.Module):
    """Conv2d -> BatchNorm2d -> ReLU -> MaxPool -> Conv2d -> global pool -> Linear.

    Export trap: an eval-mode BatchNorm holds three *buffers* that must not
    turn into mutations. Non-strict lifts all three; strict lifts only the two
    it reads (``num_batches_tracked`` is unused in eval, so it is missing from
    strict's signature and from its ``ep.module()``, though not from unflatten).
    """

    def __init__(self, in_ch: int = 3, ch: int = 4, classes: int = 5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, ch, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(ch)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(ch, ch, kernel_size=3, padding=1, bias=False)
        self.head = nn.Linear(ch, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class WithUnusedParam(nn.Module):
    """A model holding a parameter and a submodule that forward never touches.

    Export trap: non-strict lifts unused state as placeholders with no users
    (in ``named_parameters()`` order, so ``unused_scale`` comes first); strict
    drops it from the signature and from ``ep.module()``, and both Dynamo
    paths never make it a graph input. ``ep.state_dict`` and
    unflatten keep it either way; ``unused_head`` is restored with zero calls.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.unused_scale = nn.Parameter(torch.ones(dim))
        self.unused_head = nn.Linear(dim, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x))


class DropoutMLP(nn.Module):
    """MLP with ``nn.Dropout`` and functional dropout between layers.

    Export trap: in eval mode both dropouts must vanish (identity); if the
    capture baked in train-mode dropout, outputs would be random and parity
    would fail. ``F.dropout(training=self.training)`` reads the module flag.
    """

    def __init__(self, dim: int = 4, hidden: int = 8, p: float = 0.5) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, dim)
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(F.gelu(self.fc1(x)))
        h = F.dropout(h, p=self.p, training=self.training)
        return self.fc2(h)
