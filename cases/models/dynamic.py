"""Models for the dynamic-shape cases (``cases/dynamic.yaml``): each a trap of dynamic dims."""

from __future__ import annotations

import torch
from torch import nn


class MaskedEncoder(nn.Module):
    """Token embedding, a linear layer and a masked mean over the sequence.

    Export trap: batch and sequence both dynamic, the mask carrying the same two
    dims as the ids; one dim placed on two inputs must stay one symbol.
    """

    def __init__(self, vocab: int = 32, dim: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.proj(self.embed(ids))) * mask.unsqueeze(-1)
        return hidden.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


class BatchOneBranch(nn.Module):
    """A Python branch on ``batch == 1``.

    Export trap (0/1 specialization): exported at batch 4, every program keeps the
    ``batch > 1`` branch; at batch 1 it computes ``x - x.mean(0)`` (zeros) where eager
    doubles ``x``. Nothing raises; only running batch 1 shows it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lin(x)
        if x.shape[0] == 1:
            return x * 2
        return x - x.mean(0)


class DoubledSequence(nn.Module):
    """``cat`` of ``x`` with itself along the sequence, added to ``y`` of twice its length.

    Export trap: a derived dim — ``y``'s sequence is ``2*seq``, which export must
    record as ``2*s0``, not as a dim of its own or a constant.
    """

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x], dim=1) + y


class FlattenAcross(nn.Module):
    """Flattens ``[batch, seq, 4]`` to ``[batch, seq * 4]`` and reduces it.

    Export trap: a reshape whose size is a product of two dynamic dims.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = self.lin(x).flatten(1)
        return flat.softmax(-1) * flat.shape[1]


class LongSequenceBranch(nn.Module):
    """A Python branch on ``seq > 4``: export refuses the declared ``[2, 16]``.

    Export trap: a data-dependent branch on a shape. Export must guard on it;
    for a declared range that spans both sides it raises, and torch's
    suggested fix narrows the range (dropping the declared min).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 4:
            return x[:, :4] * 2
        return x


class PairsView(nn.Module):
    """``view(batch, -1, 2)``: the sequence must be even.

    Export trap: a guard that narrows a range to a derived dim (``seq = 2*_seq``);
    torch refuses a plain ``Dim`` and suggests the derived one.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0], -1, 2).sum(-1)


class PositiveRows(nn.Module):
    """Keeps the rows whose sum is positive: a size only known from the data (unbacked).

    Export trap: ``nonzero`` makes an unbacked size; ``torch._check`` bounds it so
    the slice can be traced, on top of a dynamic batch.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = torch.nonzero(x.sum(1) > 0).squeeze(1)
        return x.index_select(0, keep).sum(0)


class TrainBatchNorm(nn.Module):
    """``Linear -> BatchNorm1d -> ReLU`` in train mode with a dynamic batch.

    Export trap: eager raises at batch 1 in train mode ("Expected more than 1 value
    per channel"); torch does not enforce a lower bound of 2 at run time, so a
    program may compute there, leaving ``running_var`` NaN.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.lin(x)))
