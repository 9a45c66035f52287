"""Torch's generator states: what a submodule call saw, so the call can be replayed
under it, and what a capture left (the ``mode`` check: capturing must not move them).

A submodule that draws random numbers (``nn.Dropout`` in train mode) returns
another output for every generator state. Run alone after the whole forward,
it sees a state the eager call never saw, and differs from eager for that
reason only: a train-mode classifier's ``Dropout`` (squeezenet's shape) gave
eager 2.38 where the replay gave 0. With the state eager's call saw restored,
the unflattened ``Dropout`` is bit-identical to eager's (torch 2.13, CPU, strict
and non-strict: the graph's ``aten.dropout`` draws from the same generator).
So every call records the state of every
torch generator that has started before it runs: the CPU one, and each device
of an accelerator that is initialized (an accelerator that never started drew
nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RngState:
    """The CPU generator's state and each started accelerator device's."""

    cpu: torch.Tensor
    devices: tuple[tuple[str, int, torch.Tensor], ...]

    def moved_in(self, after: RngState) -> list[str]:
        """The generators whose state differs in ``after`` (``cpu``, ``cuda:0``...); a
        device that started in between is not compared (it had no state before)."""
        moved = [] if torch.equal(self.cpu, after.cpu) else ["cpu"]
        later = {(kind, index): state for kind, index, state in after.devices}
        for kind, index, state in self.devices:
            now = later.get((kind, index))
            if now is not None and not torch.equal(state, now):
                moved.append(f"{kind}:{index}")
        return moved

    def same_as(self, other: RngState) -> bool:
        """Whether no generator moved between ``self`` and ``other``: the call drew nothing."""
        if not torch.equal(self.cpu, other.cpu) or len(self.devices) != len(other.devices):
            return False
        return all(
            a[:2] == b[:2] and torch.equal(a[2], b[2])
            for a, b in zip(self.devices, other.devices, strict=True)
        )


def _started() -> list[tuple[str, int]]:
    """(kind, index) of every accelerator device whose generator may have drawn."""
    found = []
    for kind in ("cuda", "xpu"):
        module = getattr(torch, kind, None)
        is_initialized = getattr(module, "is_initialized", None)
        if is_initialized is not None and is_initialized():
            found += [(kind, index) for index in range(module.device_count())]  # type: ignore[union-attr]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append(("mps", 0))
    return found


def rng_state() -> RngState:
    """Every started torch generator's state, now."""
    devices = []
    for kind, index in _started():
        module = getattr(torch, kind)
        state = module.get_rng_state() if kind == "mps" else module.get_rng_state(index)
        devices.append((kind, index, state))
    return RngState(torch.get_rng_state(), tuple(devices))


def _set(state: RngState) -> None:
    torch.set_rng_state(state.cpu)
    for kind, index, device_state in state.devices:
        module = getattr(torch, kind)
        if kind == "mps":
            module.set_rng_state(device_state)
        else:
            module.set_rng_state(device_state, index)


@contextmanager
def under_rng(state: RngState) -> Iterator[None]:
    """Run the block from ``state``; the caller's generators are given back after."""
    before = rng_state()
    _set(state)
    try:
        yield
    finally:
        _set(before)
