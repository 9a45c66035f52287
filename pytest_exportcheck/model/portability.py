"""Is a model portable to a device? The tensors that stay behind when it moves.

``model.to(device)`` moves parameters and buffers, nothing else. Left behind:

* a plain tensor attribute (``self.table = TABLE``), or tensors in a list,
  tuple or dict attribute (``self.masks = [m1, m2]``);
* a tensor default of ``forward`` (``def forward(self, x, bias=torch.ones(4))``),
  made once, when the class body ran;
* a tensor ``forward`` creates without a device (``torch.ones(4)``,
  ``torch.from_numpy(...)``).

The model is built under the device (``with torch.device(device)``, see
``subject.py``), so what ``__init__`` creates is there already; what is left
is found here in two steps. :func:`stray_tensors` looks before running: every
tensor reachable from the model's attributes that is not a parameter or
buffer and is not on the device, by path. :func:`first_device_mix` then
watches one eager call for the first op that meets tensors of two devices,
and names the one that stayed behind (by path, or "created in forward").

Why watch and not only look: a stray tensor forward moves itself
(``self.table.to(x.device)``), or never reads, is harmless; and on ``meta`` an
op like ``mm`` takes a CPU operand silently, so a model that fails on every
GPU would pass every meta item. The watch is a separate call: a dispatch
mode changes how some models run (higher-order ops need their own rules),
so the call whose results are compared never runs under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pytest_exportcheck.model.forward_defaults import forward_defaults

# nn.Module's own registries: what they hold is moved by .to().
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules"})
# Ops that exist to take a tensor across devices, and indexing with CPU indices,
# which CUDA kernels accept: meeting two devices there is not a portability bug.
_CROSSING_OPS = frozenset(
    {"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "to", "index", "index_put_",
     "_index_put_impl_", "index_put", "lift_fresh", "lift_fresh_copy", "detach", "alias"}
)  # fmt: skip
_CONTAINER_DEPTH = 3


@dataclass(frozen=True)
class Stray:
    """A tensor ``.to(device)`` does not move, where it lives and what to do about it."""

    path: str  # model.blocks.0.table, model.masks[1], forward's default for 'bias'
    what: str  # a plain tensor attribute, a tensor in a list attribute, ...
    device: str
    remedy: str

    def describe(self) -> str:
        return f"{self.path}: {self.what}, still on {self.device}; {self.remedy}"


def on_device(tensor: torch.Tensor, device: str) -> bool:
    target = torch.device(device)
    return tensor.device.type == target.type and (
        target.index is None or tensor.device.index in (None, target.index)
    )


def stray_tensors(model: torch.nn.Module, device: str) -> dict[int, Stray]:
    """Every tensor reachable from ``model``'s attributes (containers included) and its
    ``forward`` defaults that is not on ``device`` and not a parameter or buffer, by id.

    Zero-dimensional tensors are left out: every device's kernels take a CPU scalar.
    """
    registered = {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
    found: dict[int, Stray] = {}

    def visit(value: Any, path: str, what: str, depth: int) -> None:
        if isinstance(value, torch.Tensor):
            if id(value) in registered or value.dim() == 0 or on_device(value, device):
                return
            remedy = "register it as a buffer (register_buffer) to have it moved"
            found.setdefault(id(value), Stray(path, what, str(value.device), remedy))
        elif depth < _CONTAINER_DEPTH and isinstance(value, (list, tuple)):
            kind = type(value).__name__
            for index, item in enumerate(value):
                visit(item, f"{path}[{index}]", f"a tensor in a {kind} attribute", depth + 1)
        elif depth < _CONTAINER_DEPTH and isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{path}[{key!r}]", "a tensor in a dict attribute", depth + 1)

    for prefix, module in model.named_modules():
        owner = f"model.{prefix}" if prefix else "model"
        for name, value in vars(module).items():
            if name not in _MODULE_INTERNALS:
                visit(value, f"{owner}.{name}", "a plain tensor attribute", 0)
    for target, tensor in forward_defaults(model).items():
        if tensor.dim() and not on_device(tensor, device):
            name = target.split(":", 1)[1]
            found.setdefault(
                id(tensor),
                Stray(
                    f"forward's default for {name!r}",
                    "a tensor made when the class was defined",
                    str(tensor.device),
                    "pass it in the case's inputs, or create it on the input's device",
                ),
            )
    return found


@dataclass(frozen=True)
class DeviceMix:
    """The first op that met a tensor left off ``device`` with tensors on it."""

    op: str
    device: str
    behind_on: str  # the device the tensor left behind is on
    stray: Stray | None  # None: a tensor forward created (``created``)
    created: str = ""

    def describe(self) -> str:
        if self.stray is not None:
            return f"{self.stray.describe()} (it meets {self.device} tensors in {self.op})"
        made = f"created in forward ({self.created})" if self.created else "made outside torch ops"
        return (
            f"a tensor {made} is on {self.behind_on}, not {self.device}, when it meets "
            f"{self.device} tensors in {self.op}; create it on the input's device "
            "(device=x.device, or x.new_zeros(...))"
        )


def first_device_mix(
    call: Callable[[], Any], device: str, strays: dict[int, Stray]
) -> DeviceMix | None:
    """Run ``call`` under a watch; the first op mixing ``device`` with a stray tensor.

    What ``call`` raises is swallowed (the caller has its own call for that);
    a watch torch cannot run (a higher-order op without a rule in this torch)
    finds nothing.
    """
    watch = _DeviceMixWatch(device, strays)
    try:
        with watch:
            call()
    except Exception:
        pass
    return watch.first


class _DeviceMixWatch(TorchDispatchMode):
    supports_higher_order_operators = True  # let cond/map run through unwatched

    def __init__(self, device: str, strays: dict[int, Stray]) -> None:
        super().__init__()
        self.device = device
        self.origins: dict[int, tuple[Stray | None, str]] = {
            key: (stray, "") for key, stray in strays.items()
        }
        self.keep_alive: list[Any] = []  # ids in ``origins`` must not be reused
        self.first: DeviceMix | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if not isinstance(func, torch._ops.OpOverload):
            return func(*args, **kwargs)
        tensors = list(_tensors((args, kwargs)))
        behind = [t for t in tensors if t.dim() and not on_device(t, self.device)]
        here = [t for t in tensors if on_device(t, self.device)]
        name = func._schema.name.split("::")[-1]
        if self.first is None and behind and here and name not in _CROSSING_OPS:
            stray, created = self.origins.get(id(behind[0]), (None, ""))
            self.first = DeviceMix(
                _op_name(func), self.device, str(behind[0].device), stray, created
            )
        output = func(*args, **kwargs)
        # A tensor derived from a stray one (table * 2) keeps its origin; a fresh
        # one made off the device (torch.ones(4)) is "created in forward".
        for produced in _tensors(output):
            if not on_device(produced, self.device) and id(produced) not in self.origins:
                origin = self.origins.get(id(behind[0])) if behind else None
                self.origins[id(produced)] = origin or (None, _op_name(func))
                self.keep_alive.append(produced)
        return output


def move_strays(model: torch.nn.Module, device: str) -> None:
    """Move what ``.to()`` leaves behind in attributes too, as ``move_to_device_pass``
    moves a program's constants: plain tensor attributes and tensors in lists, tuples
    and dicts on a module (a ``forward`` default cannot be moved: it is the class's)."""

    def moved(value: Any, depth: int) -> Any:
        if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            return value if on_device(value, device) else value.to(device)
        if depth < _CONTAINER_DEPTH and isinstance(value, (list, tuple)):
            items = [moved(item, depth + 1) for item in value]
            return type(value)(items) if type(value) in (list, tuple) else value
        if depth < _CONTAINER_DEPTH and type(value) is dict:
            return {key: moved(item, depth + 1) for key, item in value.items()}
        return value

    for module in model.modules():
        for name, value in list(vars(module).items()):
            if name not in _MODULE_INTERNALS:
                new = moved(value, 0)
                if new is not value:
                    module.__dict__[name] = new


def _op_name(func: Any) -> str:
    name = str(func).removesuffix(".default")
    # torch.tensor(data) and torch.from_numpy reach dispatch as lift_fresh of a made tensor
    return "torch.tensor or torch.from_numpy" if "lift_fresh" in name else name


def _tensors(tree: Any) -> Iterator[torch.Tensor]:
    from torch.utils import _pytree as pytree

    for leaf in pytree.tree_leaves(tree):
        if isinstance(leaf, torch.Tensor):
            yield leaf
