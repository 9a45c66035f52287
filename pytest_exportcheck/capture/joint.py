"""``aot-joint``: ``aot_export_module(trace_joint=True)``, forward and backward in one graph.

Inputs are every parameter, then every buffer (``named_parameters`` /
``named_buffers`` with duplicates kept), then the flattened user inputs; the
``GraphSignature`` names them. Outputs are mutated buffers, then the forward's
outputs, then one gradient per parameter::

    placeholder arg0_1   inputs_to_parameters  -> lin.weight
    placeholder arg2_1   inputs_to_buffers     -> count
    placeholder arg3_1   user_inputs           (args[0])
    output (add_1,       buffers_to_mutate     -> count
            sum_1,       user_outputs          (the loss)
            t_3, view)   gradients_to_parameters -> lin.weight, lin.bias

The graph has no module hierarchy, so ``hierarchy`` is not applicable.
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.record import (
    CaptureRecord,
    Mutations,
    Placeholder,
    Runnable,
    StatefulCall,
    tensor_at,
)
from pytest_exportcheck.containment.failures import CaptureError, capture_error
from pytest_exportcheck.model.subject import Inputs, Subject
from pytest_exportcheck.spec.compat import parameters_to_mutate


class LossOutputs(torch.nn.Module):
    """The model with its outputs flattened and every output but the loss detached.

    ``aot_export_module(trace_joint=True)`` builds a backward for one scalar loss
    and refuses other outputs that require grad. This wrapper shares the model's
    parameter, buffer and submodule dicts, so FQNs stay the model's own.
    """

    def __init__(self, model: torch.nn.Module, loss_index: int, inputs: Inputs) -> None:
        super().__init__()
        self._parameters = model._parameters
        self._buffers = model._buffers
        self._modules = model._modules
        self._non_persistent_buffers_set = model._non_persistent_buffers_set
        self.training = model.training
        object.__setattr__(self, "wrapped_forward", model.forward)
        self.loss_index = loss_index
        # aot_export_module traces tensors only ('bool' object has no attribute
        # 'requires_grad' otherwise), and 2.13's calls the traced function with
        # positions only: every input tensor becomes a position, and the rest of
        # the inputs (bools, ints, strings, their places in args and kwargs) is
        # kept here and put back around them on every call.
        leaves, self.in_spec = pytree.tree_flatten(inputs)
        self.fixed_leaves = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        self.tensor_positions = [
            index for index, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)
        ]
        self.out_spec: pytree.TreeSpec | None = None

    def forward(self, *tensors: Any) -> tuple[Any, ...]:
        leaves = list(self.fixed_leaves)
        for position, tensor in zip(self.tensor_positions, tensors, strict=True):
            leaves[position] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, self.in_spec)
        leaves, self.out_spec = pytree.tree_flatten(self.wrapped_forward(*args, **kwargs))
        if not 0 <= self.loss_index < len(leaves):
            raise IndexError(
                f"loss_output {self.loss_index}: the model returns {len(leaves)} output leaves"
            )
        return tuple(
            leaf.detach() if isinstance(leaf, torch.Tensor) and i != self.loss_index else leaf
            for i, leaf in enumerate(leaves)
        )


def tensor_leaves(tree: Any) -> list[torch.Tensor]:
    """The tensors of a pytree, in its order: what the joint graph takes after the state."""
    return [leaf for leaf in pytree.tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def capture_aot_joint(subject: Subject) -> JointRecord:
    from torch._functorch.aot_autograd import aot_export_module

    case = subject.case
    if case.loss_output is None:  # the loader requires it; kept for direct API use
        raise CaptureError(f"{case.location}: aot-joint needs `loss_output` in the case")
    inputs = subject.inputs_copy()
    model = LossOutputs(subject.model_copy(), case.loss_output, inputs)
    started = time.perf_counter()
    try:
        gm, signature = aot_export_module(
            model, tuple(tensor_leaves(inputs)), trace_joint=True,
            output_loss_index=case.loss_output,
        )  # fmt: skip
    except Exception as exc:
        raise capture_error(
            exc, f"{case.location}: aot_export_module(trace_joint=True) raised"
        ) from exc
    seconds = time.perf_counter() - started
    return JointRecord(
        capture="aot-joint",
        subject=subject,
        placeholders=_placeholders(gm, signature, subject),
        dialect="AOT joint graph, ATen ops, functional (aot_export_module)",
        seconds=seconds,
        graph_module=gm,
        captured_model=model,
        signature=signature,
        bakes_scalar_inputs=True,  # non-tensor inputs live in LossOutputs, not the graph
    )


class JointRecord(CaptureRecord):
    """A joint forward+backward graph fed by position: parameters, buffers, user inputs."""

    def __init__(self, *, signature: Any, **fields: Any) -> None:
        super().__init__(**fields)
        self.signature = signature
        self.last_gradients: dict[str, torch.Tensor] = {}

    @property
    def model(self) -> LossOutputs:
        assert isinstance(self.captured_model, LossOutputs)
        return self.captured_model

    def state_tensor(self, fqn: str) -> torch.Tensor | None:
        return tensor_at(self.model, fqn)

    def fed_tensor(self, placeholder: Placeholder) -> torch.Tensor | None:
        """By the convention, not by the signature: position i gets the i-th module tensor."""
        return self._fed_by_name.get(placeholder.name)

    @cached_property
    def _fed_by_name(self) -> dict[str, torch.Tensor]:
        # Placeholder names and positions, not targets: what the convention binds.
        names = [p.name for p in self.placeholders]
        return dict(zip(names, _state_in_order(self.model), strict=False))

    def mutations(self) -> Mutations:
        signature = self.signature
        paths = {p.name: p.target for p in self.placeholders if p.kind == "user_input"}
        return Mutations(
            buffers=frozenset(signature.buffers_to_mutate.values()),
            parameters=frozenset(parameters_to_mutate(signature).values()),
            user_inputs=frozenset(
                paths.get(name) or name for name in signature.user_inputs_to_mutate.values()
            ),
            source="the joint graph's GraphSignature",
        )

    def runnables(self) -> list[Runnable]:
        return [Runnable("joint graph (forward outputs)", self._joint)]

    def _joint(self) -> StatefulCall:
        def make() -> StatefulCall:
            model = self.subject.model_copy()
            return JointCall(self, model), model

        return self._cached_run("joint", make)

    def gradients(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """One call from a fresh start; the graph's gradient per parameter FQN."""
        call, _ = self._joint()
        call(*args, **kwargs)
        assert isinstance(call, JointCall)
        return call.gradients


class JointCall:
    """Calls the joint graph as ``aot_export_module`` says to, and applies its outputs.

    Mutated buffers and inputs come back as outputs: they are written into the
    module / input they belong to, so state carries over calls as in eager.
    """

    def __init__(self, record: JointRecord, model: torch.nn.Module) -> None:
        self.record = record
        self.model = model
        self.gradients: dict[str, torch.Tensor] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        signature = self.record.signature
        gm = self.record.graph_module
        user = tensor_leaves((args, kwargs))
        outputs = gm(*_state_in_order(self.model), *user)
        output_node = next(n for n in gm.graph.nodes if n.op == "output")
        by_name = dict(zip((str(a) for a in output_node.args[0]), outputs, strict=True))
        with torch.no_grad():
            written = dict(signature.buffers_to_mutate)
            written.update(parameters_to_mutate(signature))
            for name, fqn in written.items():
                target = tensor_at(self.model, fqn)
                if target is None:
                    raise LookupError(f"the joint graph mutates {fqn!r}, which the model lacks")
                target.copy_(by_name[name])
            user_index = {name: i for i, name in enumerate(signature.user_inputs)}
            for name, input_name in signature.user_inputs_to_mutate.items():
                user[user_index[input_name]].copy_(by_name[name])
        backward = signature.backward_signature
        self.gradients = {
            fqn: by_name[name] for name, fqn in backward.gradients_to_parameters.items()
        }
        forward = [by_name[name] for name in signature.user_outputs]
        spec = self.record.model.out_spec
        return pytree.tree_unflatten(forward, spec) if spec is not None else tuple(forward)


def _state_in_order(model: torch.nn.Module) -> list[torch.Tensor]:
    """What ``aot_export_module`` puts before the user inputs, in its order."""
    return [
        *(p for _, p in model.named_parameters(remove_duplicate=False)),
        *(b for _, b in model.named_buffers(remove_duplicate=False)),
    ]


def _placeholders(gm: torch.fx.GraphModule, signature: Any, subject: Subject) -> list[Placeholder]:
    paths = [path for path, value in subject.flat_inputs if isinstance(value, torch.Tensor)]
    user_index = {name: i for i, name in enumerate(signature.user_inputs)}
    placeholders = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        name, example = node.name, node.meta.get("val")
        if name in signature.inputs_to_parameters:
            kind, target = "parameter", signature.inputs_to_parameters[name]
        elif name in signature.inputs_to_buffers:
            kind, target = "buffer", signature.inputs_to_buffers[name]
        elif name in user_index:
            index = user_index[name]
            kind, target = "user_input", paths[index] if index < len(paths) else None
        else:
            kind, target = "unknown", None
        placeholders.append(Placeholder(name, kind, target, example=example))
    return placeholders
