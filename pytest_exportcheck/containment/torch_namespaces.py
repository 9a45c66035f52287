"""torch's functions and mode stacks, as state a model may leave changed (``process_state.py``).

Two leaks a forward can leave that every later item runs under, each passing
itself while an innocent test after it fails by exactly what it changed:

- **a function replaced**: ``torch.nn.functional.linear = ...``, or
  ``sys.modules["torch"].export = wrapper``. Each namespace below is read as
  the identity of every function, class and submodule it held when the
  process-state guard was built; one that is another object afterwards was
  replaced. torch replaces a few of its own lazily (a function whose code lives
  in torch's directory): those are neither blamed nor put back.
- **a mode entered and never exited**: ``TorchFunctionMode().__enter__()`` (or a
  dispatch mode) in forward stays on torch's mode stack, and intercepts every
  op of every later item. The stacks are read as the modes on them; the modes
  an item left are popped.
"""

from __future__ import annotations

import os
import types
from typing import Any

import torch

_MISSING = object()


class Namespace:
    """The functions, classes and submodules of one of torch's namespaces, by name."""

    def __init__(self, owner: Any, label: str) -> None:
        self.owner = owner
        self.label = label
        self.names = tuple(name for name, value in vars(owner).items() if _is_function_like(value))

    def read(self) -> tuple[Any, ...]:
        return tuple(vars(self.owner).get(name, _MISSING) for name in self.names)

    def restore(self, saved: tuple[Any, ...]) -> None:
        for name, before, now in zip(self.names, saved, self.read(), strict=True):
            if now is before or _torchs_own(now):
                continue
            if before is _MISSING:
                delattr(self.owner, name)
            else:
                setattr(self.owner, name, before)

    def changes(self, saved: tuple[Any, ...], now: tuple[Any, ...]) -> list[str]:
        """What the model replaced or removed (torch's own replacements left out)."""
        found = []
        for name, before, after in zip(self.names, saved, now, strict=True):
            if after is before or _torchs_own(after):
                continue
            what = "removed" if after is _MISSING else f"replaced by {_show(after)}"
            found.append(f"{self.label}.{name} {what}")
        return found


def namespaces() -> list[Namespace]:
    return [
        Namespace(torch, "torch"),
        Namespace(torch.nn.functional, "torch.nn.functional"),
        Namespace(torch.export, "torch.export"),
        Namespace(torch.Tensor, "torch.Tensor"),
        Namespace(torch.nn.Module, "torch.nn.Module"),
    ]


def _is_function_like(value: Any) -> bool:
    return isinstance(
        value,
        (
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodDescriptorType,
            types.WrapperDescriptorType,
            types.ModuleType,
            type,
            staticmethod,
            classmethod,
        ),
    ) or (callable(value) and type(value).__module__.startswith("torch"))


def _torchs_own(value: Any) -> bool:
    """Defined in torch's own files: torch's lazy replacement, not a model's."""
    code = getattr(value, "__code__", None) or getattr(
        getattr(value, "__func__", None), "__code__", None
    )
    if code is None:
        return False
    return code.co_filename.startswith(_torch_dir())


def _torch_dir() -> str:
    return os.path.dirname(torch.__file__) + os.sep


def _show(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    code = getattr(value, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"{getattr(value, '__module__', '?')}.{name}{where}"


# Mode stacks -----------------------------------------------------------------


def function_modes() -> tuple[Any, ...]:
    from torch.overrides import _get_current_function_mode_stack

    return tuple(_get_current_function_mode_stack())


def pop_function_modes(saved: tuple[Any, ...]) -> None:
    while len(function_modes()) > len(saved):
        torch._C._pop_torch_function_stack()


def dispatch_modes() -> tuple[Any, ...]:
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return tuple(_get_current_dispatch_mode_stack())


def pop_dispatch_modes(saved: tuple[Any, ...]) -> None:
    while len(dispatch_modes()) > len(saved):
        top = dispatch_modes()[-1]
        torch._C._pop_torch_dispatch_stack(getattr(top, "_mode_key", None))


def show_modes(modes: tuple[Any, ...]) -> str:
    if not modes:
        return "none"
    return ", ".join(type(mode).__qualname__ for mode in modes)
