"""Input/output plumbing: mutation, nesting, optional and non-tensor inputs."""

from __future__ import annotations

import torch
from torch import nn


class InputMutation(nn.Module):
    """Adds a bias to its input *in place* and returns a projection.

    Export trap: ``x.add_`` mutates a user input. The decomposed program must
    report it in ``user_inputs_to_mutate``; ``ep.module()`` and unflatten must
    write the new value back into the caller's tensor, every step.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.linspace(0.1, 0.4, dim))
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.add_(self.bias.detach())
        return self.lin(x) + y


class NestedInputs(nn.Module):
    """Takes a positional tensor plus keyword-only nested dict/list inputs.

    Export trap: the input pytree ``(x, *, feats={'a': [t0, t1], 'b': t2},
    weights=[w0, w1])`` is flattened into placeholders; their order and names
    must map back to paths like ``kwargs['feats']['a'][1]``. Export keeps the
    *call's* key order, not the signature's, when flattening kwargs and dicts.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(
        self,
        x: torch.Tensor,
        *,
        feats: dict[str, list[torch.Tensor] | torch.Tensor],
        weights: list[torch.Tensor],
    ) -> torch.Tensor:
        a0, a1 = feats["a"]
        h = self.lin(x) + a0 * weights[0] + a1 * weights[1]
        return h * feats["b"]


class OptionalMask(nn.Module):
    """Attention-style scores with an optional additive mask.

    Export trap: ``mask=None`` is a pytree leaf that becomes a user-input
    placeholder ``mask`` carrying a constant ``None`` (no tensor); the program
    is specialised to the "no mask" branch. Passing a tensor instead gives a
    program whose ``mask`` placeholder is a real tensor input.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        scores = self.q(x) @ self.k(x).transpose(-1, -2)
        if mask is not None:
            scores = scores + mask
        return scores.softmax(-1)


class ScalarInputs(nn.Module):
    """Receives a python float and a python int alongside a tensor.

    Export trap: non-tensor inputs are specialised (burned into the graph as
    constants) yet still get user-input placeholders (``scale``, ``repeats``)
    whose spec is a constant argument; the program only matches eager for the
    same scalar values.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, scale: float, repeats: int) -> torch.Tensor:
        h = self.lin(x) * scale
        for _ in range(repeats):
            h = torch.sin(h)
        return h


class TupleOutputs(nn.Module):
    """Returns a tuple ``(logits, hidden, (mean, max))`` with a nested tuple.

    Export trap: multiple and nested outputs go through the output pytree
    spec; one output is an input-independent view of a parameter.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.enc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 2)

    def forward(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        h = torch.relu(self.enc(x))
        return self.head(h), h, (h.mean(-1), h.amax(-1))


class DictOutputs(nn.Module):
    """Returns a dict of tensors plus a python scalar and ``None``.

    Export trap: dict outputs keep key order through the output spec; a
    constant python int output and a ``None`` output are not graph outputs
    but must still come back from ``ep.module()``.
    """

    def __init__(self, dim: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.cls = nn.Linear(dim, classes)
        self.reg = nn.Linear(dim, 1)
        self.classes = classes

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor | int | None]:
        h = torch.tanh(self.body(x))
        return {
            "logits": self.cls(h),
            "score": self.reg(h).squeeze(-1),
            "num_classes": self.classes,
            "aux": None,
        }


class PaddedEncoder(nn.Module):
    """Mean-pools token features under a boolean padding mask.

    Export trap: inputs built by a factory (token ids + a lengths-derived
    bool mask + a ``lengths`` kwarg) that cannot be written as static specs.
    """

    def __init__(self, vocab: int = 10, dim: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor, *, lengths: torch.Tensor
    ) -> torch.Tensor:
        h = self.proj(self.emb(ids)) * mask.unsqueeze(-1).to(torch.float32)
        return h.sum(1) / lengths.unsqueeze(-1).to(torch.float32)


def make_padded_batch(
    batch: int = 2, max_len: int = 5, vocab: int = 10
) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
    """Random token ids with per-row lengths in ``[1, max_len]`` and the matching mask."""
    lengths = torch.randint(1, max_len + 1, (batch,))
    ids = torch.randint(1, vocab, (batch, max_len))
    mask = torch.arange(max_len).unsqueeze(0) < lengths.unsqueeze(1)
    ids = ids.masked_fill(~mask, 0)
    return (ids, mask), {"lengths": lengths}
