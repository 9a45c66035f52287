"""Module-hierarchy shapes that stress unflatten and FQN bookkeeping."""

from __future__ import annotations

import torch
from torch import nn


class CalledTwice(nn.Module):
    """The same Linear applied twice in one forward.

    Export trap: one module, two calls. Unflatten must produce two
    ``call_module`` nodes on the single target ``lin`` (not ``lin`` and
    ``lin@1`` as separate modules), and the weight is lifted once.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(self.act(self.lin(x)))


class Block(nn.Module):
    """Linear + LayerNorm building block used by the structure models."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.lin(x)))


class SharedSubmodule(nn.Module):
    """One :class:`Block` instance registered as both ``enc`` and ``dec``.

    Export trap: ``named_modules(remove_duplicate=False)`` lists ``enc``,
    ``enc.lin``... and ``dec``, ``dec.lin``... for one object, called twice.
    Unflatten must restore both names *and* keep them one object. Non-strict
    lifts every parameter twice (``p_enc_*`` and ``p_dec_*``); strict lifts
    once, naming the placeholder after ``dec`` but targeting ``enc.*``. Dynamo
    names the block after ``dec`` as well: in ``self.dec(self.mid(self.enc(x)))``
    the attribute ``self.dec`` is loaded before its argument is evaluated.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.enc = Block(dim)
        self.dec = self.enc
        self.mid = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(self.mid(self.enc(x)))


class CountingBlock(nn.Module):
    """Linear block that counts its own calls in a buffer."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return torch.relu(self.lin(x))


class SharedCountingBlock(nn.Module):
    """A weight-shared encoder (``left`` is ``right``) with a call-counter buffer.

    Export trap: the mutated buffer belongs to a submodule reachable under two
    names (``left.calls`` / ``right.calls``), called twice per forward.
    Functionalisation has to fold two in-place updates of one aliased buffer:
    non-strict lifts it twice (``b_left_calls``, ``b_right_calls``), strict
    once (named ``b_left_calls``, targeting ``right.calls``).
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.left = CountingBlock(dim)
        self.right = self.left
        self.out = nn.Linear(2 * dim, 1)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cat([self.left(a), self.right(b)], dim=-1))


class DeepNesting(nn.Module):
    """ModuleDict -> ModuleList -> Sequential -> leaf, four levels deep.

    Export trap: containers (ModuleDict/ModuleList) are never *called*, only
    indexed, so they have no ``call_module`` node; Sequentials are called and
    do. FQNs like ``stages.enc.1.0`` must survive unflatten in eager order.
    """

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.stages = nn.ModuleDict(
            {
                "enc": nn.ModuleList(
                    [
                        nn.Sequential(nn.Linear(dim, dim), nn.ReLU()),
                        nn.Sequential(
                            nn.Linear(dim, dim), nn.Sequential(nn.Linear(dim, dim), nn.GELU())
                        ),
                    ]
                ),
                "dec": nn.ModuleList([nn.Sequential(nn.Linear(dim, 2))]),
            }
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for stage in self.stages["enc"]:
            x = x + stage(x)
        for stage in self.stages["dec"]:
            x = stage(x)
        return x
