"""Models whose verdicts were once wrong: each case in verdicts.yaml would have caught one.

This file registers a custom op when it is executed, so executing it twice in one
process raises ("registered multiple times"): ``cases/conftest.py`` imports it the
way a user's tests import their model files, and the cases must use that module.
"""

from __future__ import annotations

import torch
from torch import nn

torch.library.define("exportcheck_corpus::scaled", "(Tensor x, float factor) -> Tensor")


class ZeroHead(nn.Module):
    """A body with signal and a zero-initialized head, as torchvision's vit_b_16: at random
    initialization every output is exactly 0, and any program passes allclose against it."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


class TinyOutputs(nn.Module):
    """Outputs around 1e-9, below float32's atol of 1e-5, as mobilenet_v2's at random init."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * 1e-9


class Options(nn.Module):
    """Non-tensor inputs beside the tensor: an int, a None and a bool keyword (as Hugging
    Face's return_dict=False), and a scalar loss output for the joint graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(
        self, x: torch.Tensor, repeat: int = 1, scale: float | None = None, negate: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.lin(x)
        for _ in range(repeat):
            out = torch.tanh(out)
        if scale is not None:
            out = out * scale
        out = -out if negate else out
        return out, out.pow(2).mean()


class NormNet(nn.Module):
    """Two BatchNorm layers in eval: forward never reads their num_batches_tracked."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv2(torch.relu(self.bn1(self.conv(x)))))


class StochasticDepth(nn.Module):
    """As torchvision's: outside training it returns its input object, running no op."""

    def __init__(self, p: float = 0.2) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape[0], 1, device=x.device) >= self.p
        return x * keep / (1.0 - self.p)


class ResidualWithDepth(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop_path = StochasticDepth()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop_path(torch.relu(self.lin(x)))


class UnreadInput(nn.Module):
    """forward takes a mask it never reads; Dynamo drops that input."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.lin(x)
