"""Models that return a scalar training loss beside their predictions.

These are the cases the ``aot-joint`` capture applies to: it traces forward and
backward of one scalar loss (``loss_output`` in the case picks it among the
flattened outputs), so every parameter must get a gradient from that loss.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLPWithLoss(nn.Module):
    """Two-layer MLP classifier returning ``(logits, cross_entropy(logits, target))``.

    Export trap: none on purpose -- the training baseline. The joint graph must
    give every parameter a gradient and the forward outputs must match eager;
    the integer ``target`` is a user input that gets no gradient.
    """

    def __init__(self, dim: int = 4, hidden: int = 8, classes: int = 3) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.fc2(self.act(self.fc1(x)))
        return logits, F.cross_entropy(logits, target)


class WithCrossEntropy(nn.Module):
    """Any classifier ``backbone`` plus a cross-entropy loss: ``(logits, loss)``.

    Export trap: the backbone's state sits one level down (``backbone.conv1.weight``),
    and an eval-mode BatchNorm inside holds a buffer forward never reads
    (``num_batches_tracked``): ``aot_export_module`` takes every parameter and
    buffer as an input, used or not, while strict export and Dynamo drop it.
    """

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.backbone(x)
        return logits, F.cross_entropy(logits, target)


class BNRegressor(nn.Module):
    """Linear -> BatchNorm1d -> ReLU -> Linear regressor returning ``(pred, mse_loss)``.

    Export trap: run in train mode, BatchNorm updates ``running_mean``,
    ``running_var`` and ``num_batches_tracked`` in place while the loss is
    differentiated: the joint graph returns the three buffer updates as extra
    outputs (``buffers_to_mutate``) next to the loss and the gradients.
    """

    def __init__(self, dim: int = 4, hidden: int = 6) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pred = self.out(torch.relu(self.bn(self.fc(x)))).squeeze(-1)
        return pred, F.mse_loss(pred, target)


class TokenEncoder(nn.Module):
    """Embedding -> LayerNorm."""

    def __init__(self, vocab: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.norm(self.emb(ids))


class TokenDecoder(nn.Module):
    """Linear -> GELU -> vocabulary projection (weight tied by the parent)."""

    def __init__(self, vocab: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(F.gelu(self.proj(h)))


class TiedLMWithLoss(nn.Module):
    """Encoder/decoder LM whose ``decoder.head.weight is encoder.emb.weight``, with a loss.

    Export trap: one parameter reachable under two FQNs two levels apart,
    receiving gradient through both uses. Non-strict export lifts it once per
    name; strict, Dynamo and ``aot_export_module`` once. The joint graph must
    return one gradient for the tied tensor, the sum of both paths'.
    """

    def __init__(self, vocab: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.encoder = TokenEncoder(vocab, dim)
        self.decoder = TokenDecoder(vocab, dim)
        self.decoder.head.weight = self.encoder.emb.weight

    def forward(
        self, input_ids: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.decoder(self.encoder(input_ids))
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return logits, loss


class WeightedRegression(nn.Module):
    """Regression head with a keyword-only per-sample weight; returns ``{"loss", "pred"}``.

    Export trap: the loss depends on a tensor passed by keyword
    (``sample_weight``), and the outputs are a dict whose *first* leaf is the
    loss (``loss_output: 0``); the prediction is returned alongside, detached
    by the joint capture.
    """

    def __init__(self, dim: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.body = nn.Linear(dim, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(
        self, x: torch.Tensor, target: torch.Tensor, *, sample_weight: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        pred = self.head(torch.tanh(self.body(x))).squeeze(-1)
        loss = (sample_weight * (pred - target) ** 2).sum() / sample_weight.sum()
        return {"loss": loss, "pred": pred}
