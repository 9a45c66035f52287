"""A tiny language model whose output projection is tied to its embedding."""

from __future__ import annotations

import torch
from torch import nn


class TinyLM(nn.Module):
    """Embedding -> LayerNorm -> Linear head with ``head.weight is emb.weight``.

    Export trap: one tensor reachable under two FQNs. Non-strict export lifts
    it twice (``p_emb_weight`` and ``p_head_weight``, one tensor); strict lifts
    it once (``p_emb_weight``) and its ``ep.module()`` has no ``head`` at all;
    Dynamo dedupes by identity too and makes it one graph input.
    Unflatten restores ``head`` with ``head.weight is emb.weight`` in both.
    ``use_cache`` is a python bool input: a constant user input.
    """

    def __init__(self, vocab: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, input_ids: torch.Tensor, use_cache: bool = False) -> torch.Tensor:
        h = self.norm(self.emb(input_ids))
        logits = self.head(h)
        if use_cache:  # python bool: specialised at export time
            logits = logits.float()
        return logits
