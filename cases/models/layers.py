"""Standard torch.nn layers with non-trivial export lowering."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LSTMTagger(nn.Module):
    """Embedding -> 1-layer LSTM (batch_first) -> Linear tag head.

    Export trap: ``nn.LSTM`` keeps its weights in ``_flat_weights`` and calls
    ``torch.lstm`` with them; the lifted parameters must still map to
    ``lstm.weight_ih_l0`` etc., and the (h, c) tuple output is nested.
    Non-strict export warns that ``self.lstm._flat_weights[i]`` "were assigned
    during export" (the list is rebuilt from the parameters while tracing).
    """

    def __init__(self, vocab: int = 12, dim: int = 4, hidden: int = 5, tags: int = 3) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, tags)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, (h, c) = self.lstm(self.emb(ids))
        return self.head(out), (h, c)


class GRUEncoder(nn.Module):
    """Two-layer bidirectional GRU over float features, with an initial state.

    Export trap: multi-layer, bidirectional RNN with an explicit ``h0`` input;
    eight weight tensors per layer/direction pair named ``*_reverse``.
    """

    def __init__(self, dim: int = 3, hidden: int = 4) -> None:
        super().__init__()
        self.gru = nn.GRU(dim, hidden, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gru(x, h0)


class SDPAttention(nn.Module):
    """Multi-head self-attention via ``F.scaled_dot_product_attention``.

    Export trap: SDPA is a composite op picked per backend at runtime; the
    exported program must keep an op that decomposes to the same math
    (causal masking included) within tolerance.
    """

    def __init__(self, dim: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class EmbeddingPool(nn.Module):
    """Embedding with ``padding_idx`` plus an ``EmbeddingBag`` (mean) side path.

    Export trap: integer inputs index parameter tables; ``padding_idx`` rows
    must stay zero and ``EmbeddingBag`` lowers to ``_embedding_bag`` with
    several outputs of which only one is used.
    """

    def __init__(self, vocab: int = 10, dim: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.out = nn.Linear(2 * dim, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        tok = self.emb(ids).mean(1)
        bag = self.bag(ids)
        return self.out(torch.cat([tok, bag], dim=-1))


class EncoderLayer(nn.Module):
    """A single ``nn.TransformerEncoderLayer`` (batch_first) plus a pooler.

    Export trap: in eval mode under ``no_grad`` and with no hooks attached,
    eager would take the fused fast path (``aten._transformer_encoder_layer_fwd``)
    while export traces the composite path (MHA -> SDPA, FFN, ``dropout`` with
    train=False); the plugin runs eager with autograd on, as export traces. Strict orders the
    parameters in the fast-path check's access order (``in_proj_bias`` first).
    """

    def __init__(self, dim: int = 8, heads: int = 2, ff: int = 16) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=ff, dropout=0.1, batch_first=True
        )
        self.pool = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.pool(self.layer(x)[:, 0]))


class PaddedEncoder(nn.Module):
    """A two-layer ``nn.TransformerEncoder`` with a key padding mask.

    Export trap: under ``no_grad`` eager takes the nested-tensor fast path and
    returns zeros at padded positions; export traces with autograd on and keeps
    the dense path. Eager must be compared in the mode export traces in.
    """

    def __init__(self, dim: int = 8, heads: int = 2, ff: int = 16) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        return self.encoder(x, src_key_padding_mask=padding)
