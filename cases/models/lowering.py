"""Models for the lowering corpus that no other case file has: tied weights, an output
type registered with pytree, a custom op with a fake (meta) kernel.

The last two are what a server must import before it loads a lowered program of
these models: ``lowering.yaml`` names this file in ``load_imports``. Registering
twice in one process raises, so this file must run once per process (the plugin
imports a model file once).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@torch.library.custom_op("exportcheck_lowering::soft_clip", mutates_args=())
def soft_clip(x: torch.Tensor, limit: float) -> torch.Tensor:
    """limit * tanh(x / limit): an op of the user's library, opaque to export."""
    return limit * torch.tanh(x / limit)


@soft_clip.register_fake
def _(x: torch.Tensor, limit: float) -> torch.Tensor:
    return torch.empty_like(x)


class SoftClipMLP(nn.Module):
    """A custom op between two layers: export keeps it as one node, and every target
    must run the user's kernel (or say it cannot)."""

    def __init__(self, dim: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.ops.exportcheck_lowering.soft_clip(self.fc1(x), 0.5))


@dataclass
class Detections:
    boxes: torch.Tensor
    scores: torch.Tensor


# A stable name: the process that loads a saved program finds the type by it.
torch.export.register_dataclass(Detections, serialized_type_name="exportcheck_lowering.Detections")


class BoxHead(nn.Module):
    """Returns a dataclass registered with pytree, as detection and Hugging Face models do:
    a program's output structure names the type, which the loading process must know."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.boxes = nn.Linear(dim, 4)
        self.scores = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> Detections:
        h = torch.relu(self.body(x))
        return Detections(boxes=self.boxes(h), scores=self.scores(h).sigmoid().squeeze(-1))


class TiedLM(nn.Module):
    """A language-model head that shares the embedding's weight: one tensor under two
    names, which a target must keep one tensor (or at least equal)."""

    def __init__(self, vocab: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.mix(self.embed(tokens))))
