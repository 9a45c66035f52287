"""Buffers, constants and in-place state updates."""

from __future__ import annotations

import torch
from torch import nn


class NonPersistentBuffer(nn.Module):
    """Scales its input by a non-persistent buffer and adds a persistent one.

    Export trap: ``register_buffer(..., persistent=False)`` is lifted as a
    BUFFER placeholder with ``persistent=False`` and is absent from
    ``state_dict()``; it lives in ``ep.constants`` instead of
    ``ep.state_dict`` and must still reach ``ep.module()`` / unflatten.
    Strict orders buffers by first use, so ``b_scale`` precedes ``b_offset``.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, dim))
        self.register_buffer("scale", torch.full((dim,), 0.5), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale + self.offset


class TensorConstant(nn.Module):
    """Uses a plain tensor attribute that is neither parameter nor buffer.

    Export trap: ``self.table`` is lifted as a CONSTANT_TENSOR placeholder
    (``c_table``), which is not in ``state_dict`` nor ``named_buffers``.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.table = torch.arange(dim, dtype=torch.float32) / dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.table


class BNNet(nn.Module):
    """Linear -> BatchNorm1d -> ReLU -> Linear, meant to run in train mode.

    Export trap: in train mode BatchNorm normalises with batch statistics
    *and* updates ``running_mean``, ``running_var`` and
    ``num_batches_tracked`` in place -- three buffer mutations per call that
    the decomposed program must return and unflatten must write back.
    """

    def __init__(self, dim: int = 4, hidden: int = 6) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.bn(self.fc(x))))


class StepCounter(nn.Module):
    """Increments an int64 ``steps`` buffer every forward and uses it.

    Export trap: an in-place ``add_`` on a buffer whose *new* value is read in
    the same forward; after three steps eager, ``ep.module()`` and unflatten
    must all hold ``steps == 3`` (and a non-mutated buffer must stay put).
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("base", torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps.add_(1)
        return self.lin(x) * self.steps.to(x.dtype) + self.base


class EMATracker(nn.Module):
    """Keeps an exponential moving average of its input in a buffer.

    Export trap: a chain of in-place ops (``mul_`` then ``add_``) under
    ``torch.no_grad()`` on one buffer; only the final value is a mutation.
    The no-grad region is captured as a ``wrap_with_set_grad_enabled``
    higher-order op whose body is a ``submod_1`` GraphModule attribute.
    """

    def __init__(self, dim: int = 4, momentum: float = 0.9) -> None:
        super().__init__()
        self.momentum = momentum
        self.register_buffer("ema", torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.ema.mul_(self.momentum).add_(x.mean(0), alpha=1.0 - self.momentum)
        return x - self.ema


class KVCacheAttention(nn.Module):
    """Single-head attention that writes new keys/values into cache buffers.

    Export trap: ``index_copy_`` into ``k_cache`` / ``v_cache`` at positions
    given by an int64 tensor input, then attention over the whole cache --
    the classic decoder KV-cache update. Both caches are buffer mutations;
    the projections are not. Strict orders parameters by first use
    (``k``, ``v``, ``q``), non-strict by registration (``q``, ``k``, ``v``).
    """

    def __init__(self, dim: int = 4, max_len: int = 6, batch: int = 1) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(batch, max_len, dim))
        self.register_buffer("v_cache", torch.zeros(batch, max_len, dim))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.k_cache.index_copy_(1, pos, self.k(x))
        self.v_cache.index_copy_(1, pos, self.v(x))
        scores = self.q(x) @ self.k_cache.transpose(1, 2) / self.k_cache.shape[-1] ** 0.5
        return scores.softmax(-1) @ self.v_cache
