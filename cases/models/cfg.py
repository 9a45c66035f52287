"""Config objects and a model built from them (hydra-style ``_target_`` kwargs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class ActConfig:
    """Which activation to use and its options."""

    name: str = "gelu"
    approximate: str = "none"


@dataclass
class MLPConfig:
    """Width/depth of :class:`ConfiguredMLP`; ``act`` is itself a config object."""

    dim: int = 4
    hidden: int = 8
    depth: int = 2
    act: ActConfig = field(default_factory=ActConfig)


def make_act(cfg: ActConfig) -> nn.Module:
    """Build the activation module described by ``cfg``."""
    if cfg.name == "gelu":
        return nn.GELU(approximate=cfg.approximate)
    if cfg.name == "silu":
        return nn.SiLU()
    return nn.ReLU()


class ConfiguredMLP(nn.Module):
    """Residual MLP whose shape comes from a (nested) config object.

    Export trap: nothing in export itself -- it exercises the case loader's
    recursive ``_target_`` instantiation and a depth-dependent ModuleList whose
    FQNs (``layers.0``, ``layers.1``...) only exist after construction.
    """

    def __init__(self, cfg: MLPConfig, out_dim: int = 2) -> None:
        super().__init__()
        self.cfg = cfg
        self.layers = nn.ModuleList(nn.Linear(cfg.dim, cfg.dim) for _ in range(cfg.depth))
        self.act = make_act(cfg.act)
        self.out = nn.Linear(cfg.dim, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + self.act(layer(x))
        return self.out(x)
