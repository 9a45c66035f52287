"""The normalized record every capture path produces, whatever its graph looks like.

Checks read a :class:`CaptureRecord` and never call export APIs themselves, so a
new capture path is one adapter that fills this record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch

from pytest_exportcheck.failures import describe_exception
from pytest_exportcheck.isolation import private_copy, quiet_torch_internals
from pytest_exportcheck.subject import Subject

PLACEHOLDER_KINDS = ("parameter", "buffer", "constant", "custom_obj", "token", "user_input")
STATE_KINDS = ("parameter", "buffer", "constant")


@dataclass(frozen=True)
class Placeholder:
    """One graph input: its name, what it is, and what it maps to.

    ``target`` is the FQN in the eager model for state (``blocks.0.lin.weight``)
    and the input path for a user input (``args[0]``, ``kwargs['mask']``).
    """

    name: str
    kind: str
    target: str | None
    persistent: bool | None = None
    # What the graph expects here: a tensor's meta value (shape/dtype) or a constant.
    example: Any = None

    def render(self) -> str:
        target = f" -> {self.target}" if self.target is not None else ""
        return f"{self.name}: {self.kind}{target}"


class DecompositionError(Exception):
    """``run_decompositions()`` raised; checks that need the decomposed program report it."""


@dataclass
class CaptureRecord:
    """One capture of one case.

    ``program`` is the capture's own copy: never run it (its state would drift);
    the ``fresh_*`` methods give runnable copies that share nothing with it.
    """

    capture: str
    subject: Subject
    program: torch.export.ExportedProgram
    placeholders: list[Placeholder]
    dialect: str
    seconds: float
    _runnables: dict[str, Resettable] = field(default_factory=dict, repr=False)

    @property
    def device(self) -> str:
        return self.subject.device

    def state_tensor(self, target: str) -> torch.Tensor | None:
        """The tensor the program holds for a lifted parameter/buffer/constant FQN."""
        if target in self.program.state_dict:
            return self.program.state_dict[target]
        value = self.program.constants.get(target)
        return value if isinstance(value, torch.Tensor) else None

    def fresh_module(self) -> torch.nn.Module:
        """``ep.module()``, as it was when first made (see :meth:`_runnable`)."""
        return self._runnable("module", lambda: private_copy(self.program).module())

    def fresh_unflattened(self) -> torch.nn.Module:
        """``torch.export.unflatten(ep)``, as it was when first made."""
        return self._runnable(
            "unflattened", lambda: torch.export.unflatten(private_copy(self.program))
        )

    def fresh_decomposed_module(self) -> torch.nn.Module:
        """``ep.run_decompositions().module()``, as it was when first made."""
        return self._runnable("decomposed", lambda: private_copy(self.decomposed).module())

    def _runnable(self, kind: str, make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
        """Made once per capture from a private copy of the program, then reset per use.

        Unflattening or re-deriving a module for every check costs more than the
        checks; resetting every parameter, buffer and tensor attribute to the
        values it was made with gives each compared run the same fresh start.
        """
        cached = self._runnables.get(kind)
        if cached is None:
            with quiet_torch_internals():
                cached = self._runnables[kind] = Resettable(make())
        return cached.reset()

    @cached_property
    def decomposed(self) -> torch.export.ExportedProgram:
        """``run_decompositions()`` of a copy: the functional dialect with mutation records."""
        try:
            with quiet_torch_internals():
                return private_copy(self.program).run_decompositions()
        except Exception as exc:
            raise DecompositionError(
                describe_exception(exc, context="run_decompositions() raised")
            ) from exc


class Resettable:
    """A module plus the state it was made with, to put back before each use.

    Tensors are put back by object (a forward that rebinds a buffer is undone)
    and by value (one that writes into it in place is undone too).
    """

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.slots: list[tuple[dict[str, Any], str, torch.Tensor, torch.Tensor]] = []
        for owner in module.modules():
            stores = (owner._parameters, owner._buffers, owner.__dict__)
            for store in stores:
                for name, value in list(store.items()):
                    if isinstance(value, torch.Tensor):
                        self.slots.append((store, name, value, value.detach().clone()))

    def reset(self) -> torch.nn.Module:
        with torch.no_grad():
            for store, name, tensor, pristine in self.slots:
                if store.get(name) is not tensor:
                    store[name] = tensor
                tensor.copy_(pristine)
        return self.module


def normalize_signature(
    program: torch.export.ExportedProgram, subject: Subject
) -> list[Placeholder]:
    """``ExportGraphSignature.input_specs`` → ordered :class:`Placeholder` list."""
    from torch.export.graph_signature import InputKind

    kinds = {
        InputKind.PARAMETER: "parameter",
        InputKind.BUFFER: "buffer",
        InputKind.CONSTANT_TENSOR: "constant",
        InputKind.CUSTOM_OBJ: "custom_obj",
        InputKind.TOKEN: "token",
        InputKind.USER_INPUT: "user_input",
    }
    input_paths = [path for path, _ in subject.flat_inputs]
    nodes = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    user_index = 0
    placeholders = []
    for spec in program.graph_signature.input_specs:
        kind = kinds.get(spec.kind, str(spec.kind))
        target = spec.target
        if kind == "user_input":
            target = input_paths[user_index] if user_index < len(input_paths) else None
            user_index += 1
        placeholders.append(
            Placeholder(
                name=spec.arg.name,
                kind=kind,
                target=target,
                persistent=getattr(spec, "persistent", None),
                example=_example(spec.arg, nodes),
            )
        )
    return placeholders


def _example(arg: Any, nodes: dict[str, Any]) -> Any:
    if hasattr(arg, "value"):  # ConstantArgument: a Python scalar/None input baked in
        return arg.value
    node = nodes.get(getattr(arg, "name", None))
    return None if node is None else node.meta.get("val")
