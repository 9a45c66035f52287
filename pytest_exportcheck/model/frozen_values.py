"""Read-only copies of state, held once however many runs see the same values.

The stepped runs keep a copy of every parameter and buffer after every step of
every way of running a capture, and each runnable keeps the values it was made
with to reset to. Most of that state is the weights the model was built with,
which forward never changes: for AlexNet (244 MB of weights) the ``mutation``
item held ~20 copies of them, 5 GB, where the plain-torch loop doing the same
work needs 1.7 GB. A :class:`FrozenValues` holds the model's values as built
and hands back the one it holds wherever a copy would be bit-identical::

    frozen = FrozenValues(model_as_built)      # views, nothing copied
    frozen.copy_of("fc.weight", live_weight)   # unchanged: the held tensor itself
    frozen.copy_of("bn.running_mean", live)    # changed by forward: a new clone

What it hands out must never be written to: snapshots are compared, reset
values are copied from. Sharing is by bits (``-0.0`` is not ``0.0``; a NaN
matches only the same NaN), so a comparison cannot tell a held tensor from a
clone.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from pytest_exportcheck.model.copy_on_write import same_bytes

# Views of a floating or complex tensor as integers of the same width compare bits:
# torch.equal on the floats would call a NaN unequal to itself and -0.0 equal to 0.0.
_SAME_WIDTH_INTEGER = {2: torch.int16, 4: torch.int32, 8: torch.int64}


class FrozenValues:
    """Read-only tensors by FQN: the values a model was built with, and those :meth:`keep` adds."""

    def __init__(self, values: Mapping[str, torch.Tensor] | None = None) -> None:
        self._held: dict[str, list[torch.Tensor]] = {}
        for name, tensor in (values or {}).items():
            if shareable(tensor):
                self._held.setdefault(name, []).append(tensor.detach())

    def copy_of(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """A read-only tensor with ``tensor``'s current values: a held one if bit-identical,
        else a new clone (not kept: a step's changed state lives as long as its step)."""
        found = self._find(name, tensor)
        return found if found is not None else tensor.detach().clone()

    def keep(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """As :meth:`copy_of`, and a new clone is held for later calls: values that live as
        long as the capture (what a runnable resets to)."""
        found = self._find(name, tensor)
        if found is not None:
            return found
        copied = tensor.detach().clone()
        if shareable(copied):
            self._held.setdefault(name, []).append(copied)
        return copied

    def _find(self, name: str, tensor: torch.Tensor) -> torch.Tensor | None:
        if not shareable(tensor):
            return None
        for held in self._held.get(name, ()):
            if bit_identical(held, tensor):
                return held
        return None


def shareable(tensor: torch.Tensor) -> bool:
    """A dense tensor with values (not meta, sparse, quantized or a subclass's)."""
    return (
        type(tensor) in (torch.Tensor, torch.nn.Parameter)
        and tensor.layout == torch.strided
        and tensor.device.type != "meta"
        and not tensor.is_quantized
    )


def bit_identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape, strides, device and bits (``False`` where there are no bits to
    compare: meta, sparse, quantized, subclasses)."""
    if not (shareable(a) and shareable(b)):
        return False
    if (a.dtype, a.shape, a.stride(), a.device) != (b.dtype, b.shape, b.stride(), b.device):
        return False
    if same_bytes(a, b):
        return True
    a, b = a.detach(), b.detach()
    if a.is_floating_point() or a.is_complex():
        integer = _SAME_WIDTH_INTEGER.get(a.element_size())
        if integer is None:  # complex128: no 16-byte integer to view it as
            return False
        a, b = a.view(integer), b.view(integer)
    return bool(torch.equal(a, b))
