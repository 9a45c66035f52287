"""The mode a graph carries: its ops that take a training flag, and the eager module
whose mode each should follow.

An op carries the mode where its schema has a ``training``/``train`` argument
(``aten.batch_norm``, ``aten.dropout``, ``aten.native_dropout``, ``aten.lstm``; in a
Dynamo graph the ``torch.nn.functional`` call's own parameter), or in its name
(``_native_batch_norm_legit_no_training``, ``_batch_norm_with_update``). The flag
is judged against the module that made the node (``nn_module_stack``) where that
module is one of torch.nn's whose forward passes ``self.training`` on by rule:
batch and instance norm (batch statistics in training, or always without running
statistics), dropout, the recurrent layers. An op another module made (a model's own
``F.dropout(x, training=...)``) may pass any flag it likes: it is counted, not judged.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from pytest_exportcheck.checks.usage_scopes import innermost_module

FLAG_NAMES = ("training", "train")
NAMED_FLAGS = {"_no_training": False, "_no_update": False, "_with_update": True}


@dataclass(frozen=True)
class ModeOp:
    node: str
    op: str
    flag: bool
    module: str | None  # FQN of the module that made it, where recorded
    expected: bool | None  # the flag that module's mode gives; None: not judged

    def render(self) -> str:
        where = f" in {self.module!r}" if self.module else ""
        return f"{self.node} ({self.op}{where}) runs with training={self.flag}"


def mode_ops(graph_module: torch.fx.GraphModule, model: torch.nn.Module) -> list[ModeOp]:
    """Every op of ``graph_module`` (and its subgraphs) that carries a training flag."""
    found = []
    for module in graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            flag = mode_flag(node) if node.op == "call_function" else None
            if flag is None:
                continue
            fqn = innermost_module(node)
            owner = _submodule(model, fqn) if fqn is not None else None
            op = getattr(node.target, "__name__", str(node.target))
            found.append(ModeOp(node.name, str(op), flag, fqn, expected_flag(owner)))
    return found


def mode_flag(node: torch.fx.Node) -> bool | None:
    """The training flag ``node`` runs with, if its op takes one."""
    target = node.target
    schema = getattr(target, "_schema", None)
    if schema is not None:
        name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
        for part, flag in NAMED_FLAGS.items():
            if part in name:
                return flag
        for index, argument in enumerate(schema.arguments):
            if argument.name in FLAG_NAMES:
                value = (
                    node.args[index]
                    if index < len(node.args)
                    else node.kwargs.get(
                        argument.name,
                        argument.default_value if argument.has_default_value() else None,
                    )
                )
                return value if isinstance(value, bool) else None
        return None
    if not callable(target) or getattr(target, "__module__", "") != "torch.nn.functional":
        return None
    try:  # a Dynamo graph calls torch.nn.functional itself
        bound = inspect.signature(target).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    for name in FLAG_NAMES:
        if isinstance(bound.arguments.get(name), bool):
            return bound.arguments[name]
    return None


def expected_flag(owner: torch.nn.Module | None) -> bool | None:
    """The flag a torch.nn module's forward passes on in its current mode; None for
    any other module (its forward may pass what it likes)."""
    norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm)
    if isinstance(owner, norms):
        return owner.training or not owner.track_running_stats
    if isinstance(owner, (torch.nn.modules.dropout._DropoutNd, torch.nn.RNNBase)):
        return owner.training
    return None


def _submodule(model: torch.nn.Module, fqn: str) -> torch.nn.Module | None:
    try:
        return model.get_submodule(fqn) if fqn else model
    except AttributeError:
        return None
