"""The normalized record every capture path produces, whatever its graph looks like.

Checks read a :class:`CaptureRecord` and never call capture APIs themselves, so a
new capture path is one adapter that fills this record. Each path names its graph
inputs its own way; after normalization they all read alike::

    export          p_b1_lin_weight                            parameter -> b1.lin.weight
    dynamo          L_self_modules_b1_modules_lin_parameters_weight_  parameter -> b1.lin.weight
    dynamo-legacy   L__self___b1_lin_weight (get_attr)         parameter -> b1.lin.weight
    aot-joint       arg3_1                                     parameter -> b1.lin.weight
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pytest_exportcheck.model.copy_on_write import WriteMark
from pytest_exportcheck.model.forward_defaults import DEFAULT_PREFIX, forward_defaults
from pytest_exportcheck.model.frozen_values import FrozenValues
from pytest_exportcheck.model.isolation import quiet_torch_internals
from pytest_exportcheck.model.rng_state import RngState
from pytest_exportcheck.model.subject import Subject

# symbolic_size: a dynamic size a Dynamo graph takes as an input of its own (torch 2.10-2.12's
# graph capture lifts them), computed from an input tensor's shape by the graph's bytecode.
PLACEHOLDER_KINDS = (
    "parameter",
    "buffer",
    "constant",
    "custom_obj",
    "token",
    "user_input",
    "symbolic_size",
)
STATE_KINDS = ("parameter", "buffer", "constant")


@dataclass(frozen=True)
class Placeholder:
    """One graph input: its name, what it is, and what it maps to.

    ``target`` is the FQN in the eager model for state (``blocks.0.lin.weight``),
    ``default:<parameter>`` for a tensor forward takes by default (lifted as a
    constant), and the input path for a user input (``args[0]``, ``kwargs['mask']``).
    ``mapped_by`` says where the path's adapter read the target from.
    """

    name: str
    kind: str
    target: str | None
    persistent: bool | None = None
    # What the graph expects here: a tensor's meta value (shape/dtype) or a constant.
    example: Any = None
    mapped_by: str = "graph signature"

    def render(self) -> str:
        target = f" -> {self.target}" if self.target is not None else ""
        return f"{self.name}: {self.kind}{target}"


@dataclass(frozen=True)
class Mutations:
    """What a path records as mutated by one call: FQNs, and input paths."""

    buffers: frozenset[str]
    parameters: frozenset[str]
    user_inputs: frozenset[str]
    source: str


class DecompositionError(Exception):
    """``run_decompositions()`` raised; checks that need the decomposed program report it."""


StatefulCall = tuple[Callable[..., Any], torch.nn.Module]


@dataclass(frozen=True)
class Runnable:
    """One way to run a capture, each ``make()`` from the same fresh start.

    ``make`` returns the callable (taking the case's ``*args, **kwargs``) and the
    module whose parameters and buffers it reads and updates, named by eager FQNs.
    ``stateful`` runnables are compared with eager after every step of the
    mutation check; the others only in parity.
    """

    label: str
    make: Callable[[], StatefulCall]
    stateful: bool = True


@dataclass
class CaptureRecord:
    """One capture of one case. Subclasses say how the path's graph is fed and run.

    ``captured_model`` is the private copy of the eager model the path captured
    (``None`` when the record's tensors were made elsewhere, e.g. moved to a
    device): a placeholder's fed tensor must be *its* tensor at the target FQN.
    """

    capture: str
    subject: Subject
    placeholders: list[Placeholder]
    dialect: str
    seconds: float
    graph_module: torch.fx.GraphModule
    captured_model: torch.nn.Module | None
    # Non-tensor user inputs are specialized into the graph (no placeholder).
    bakes_scalar_inputs: bool = False
    # An input forward never reads may have no placeholder (Dynamo).
    drops_unread_inputs: bool = False
    # State forward never reads is still lifted or held (False: legacy Dynamo
    # registers only the tensors its graph reads).
    keeps_unread_state: bool = True
    # Torch's generators just before and just after the capture (``capture()`` sets
    # them; None where a record was made otherwise, e.g. moved to a device).
    rng_around: tuple[RngState, RngState] | None = field(default=None, repr=False)
    _runnables: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def device(self) -> str:
        return self.subject.device

    @property
    def in_spec(self) -> Any:
        """The pytree spec of ``(args, kwargs)`` the capture expects, if it keeps one."""
        return None

    def state_tensor(self, fqn: str) -> torch.Tensor | None:
        """The tensor the capture carries for a parameter/buffer/constant FQN."""
        raise NotImplementedError

    def fed_tensor(self, placeholder: Placeholder) -> torch.Tensor | None:
        """The tensor the path's calling convention binds to a state placeholder."""
        return self.state_tensor(placeholder.target) if placeholder.target else None

    def programs_not_run(self) -> list[str]:
        """Notes for the programs the case names that cannot run here (``chains.py``)."""
        return []

    def mutations(self) -> Mutations | None:
        """The path's own mutation records; ``None`` if the path keeps none."""
        return None

    def runnables(self) -> list[Runnable]:
        raise NotImplementedError

    def _cached_run(self, key: str, make: Callable[[], StatefulCall]) -> StatefulCall:
        """Made once per capture, then reset to its first state before each use.

        Unflattening or re-deriving a module for every check costs more than the
        checks; resetting every parameter, buffer and tensor attribute to the
        values it was made with gives each compared run the same fresh start.
        """
        cached = self._runnables.get(key)
        if cached is None:
            with quiet_torch_internals():
                call, module = make()
            resettable = Resettable(call, module, frozen=self.subject.frozen_values)
            cached = self._runnables[key] = (call, module, resettable)
        call, module, resettable = cached
        resettable.reset()
        return call, module


class Resettable:
    """Modules plus the state they were made with, to put back before each use.

    Tensors are put back by object (a forward that rebinds a buffer is undone)
    and by value (one that writes into it in place is undone too). The values
    to put back come from ``frozen`` where it holds them bit for bit (a model's
    weights, as built): a big model's runnables keep no copy of their own.
    """

    def __init__(self, *owners: Any, frozen: FrozenValues | None = None) -> None:
        self.slots: list[tuple[dict[str, Any], str, torch.Tensor, torch.Tensor, WriteMark]] = []
        frozen = frozen if frozen is not None else FrozenValues()
        seen: set[int] = set()
        for root in owners:
            if not isinstance(root, torch.nn.Module):
                continue
            for prefix, owner in root.named_modules():
                dot = f"{prefix}." if prefix else ""
                stores = (owner._parameters, owner._buffers, owner.__dict__)
                for store in stores:
                    if id(store) in seen:  # a graph module may share its root's dicts
                        continue
                    seen.add(id(store))
                    for name, value in list(store.items()):
                        if isinstance(value, torch.Tensor):
                            pristine = frozen.keep(dot + name, value)
                            # Made with these values: unwritten, it needs no reset.
                            self.slots.append((store, name, value, pristine, WriteMark(value)))

    def reset(self) -> None:
        # A tensor no run wrote is left as it is: writing the values back would
        # give a copy-on-write tensor bytes of its own (copy_on_write.py).
        with torch.no_grad():
            for store, name, tensor, pristine, mark in self.slots:
                if store.get(name) is not tensor:
                    store[name] = tensor
                if not mark.unwritten(tensor):  # once written, written for good
                    tensor.copy_(pristine)


def named_tensors(model: torch.nn.Module) -> dict[str, tuple[str, torch.Tensor]]:
    """Every tensor of ``model`` by every FQN: kind (parameter / buffer / constant) and value.

    "constant" is a plain tensor attribute of a module (neither parameter nor buffer).
    """
    found: dict[str, tuple[str, torch.Tensor]] = {}
    for prefix, module in model.named_modules(remove_duplicate=False):
        dot = f"{prefix}." if prefix else ""
        for name, value in module._parameters.items():
            if value is not None:
                found[dot + name] = ("parameter", value)
        for name, value in module._buffers.items():
            if value is not None:
                found[dot + name] = ("buffer", value)
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not name.startswith("_"):
                found.setdefault(dot + name, ("constant", value))
    for target, value in forward_defaults(model).items():
        found.setdefault(target, ("constant", value))
    return found


def tensor_at(model: torch.nn.Module, fqn: str) -> torch.Tensor | None:
    """The tensor at ``fqn`` in ``model``: a parameter, buffer or plain tensor attribute,
    or (``default:y``) a tensor its forward takes by default."""
    if fqn.startswith(DEFAULT_PREFIX):
        return forward_defaults(model).get(fqn)
    owner_path, _, attr = fqn.rpartition(".")
    try:
        owner = model.get_submodule(owner_path) if owner_path else model
    except AttributeError:
        return None
    value = getattr(owner, attr, None)
    return value if isinstance(value, torch.Tensor) else None


def match_input_paths(values: Sequence[Any], flat: list[tuple[str, Any]]) -> list[str | None]:
    """For each value, the path of the flattened input that *is* it (by object), if any."""
    by_id = {id(value): path for path, value in flat}
    return [by_id.get(id(value)) for value in values]
