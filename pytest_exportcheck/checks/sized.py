"""Outputs built from sizes alone: where the program, not the values, carries the signal.

ExportDB's ``constrain_as_size_example`` returns ``torch.zeros((x.item(), 5))``,
``dynamic_shape_constructor`` ``torch.zeros(x.shape[0] * 2)``: zeros on purpose,
the point is the shape, and a program that computes it wrongly fails the shape
comparison. Such an output is not vacuous, yet its values are as constant as a
zero-initialized head's, whose shape also follows the batch. What tells them
apart is read from the captured graph, not guessed from eager:

* *built from sizes alone*: walking back from the output node along
  tensor-valued edges reaches no graph input (user input, parameter, buffer,
  constant) — only constructors (``zeros``, ``full``, ...) fed sizes (SymInts,
  ``torch.Size``) and ops on their results. ``zeros_like`` and ``new_zeros``
  read only their tensor argument's shape, so that edge is not followed. A zero
  head reads its weight: its values are the point, and it stays vacuous.
* *shape computed by the program*: the output node's value (``meta['val']``;
  Dynamo's ``example_value``) has a dim with free symbols — an unbacked size
  (``u0`` from ``item()`` or ``nonzero``) or a dynamic dim (``2*s77``). A shape
  fixed in the program (a static capture) is a constant like the values.

A static capture holds every shape fixed, ``dynamic_shape_constructor``'s
``[6]`` too, though it follows the input (``[8]`` for 4 rows). Only there, and
only where the output would otherwise be vacuous, ``free_dims`` asks one more
program: a non-strict export of the model with every input dim ``Dim.AUTO``.
Where that program computes the leaf's shape (``[2*s77]``), the shape follows
the inputs, and comparing it at the case's inputs can fail; where it keeps it
fixed (``torch.zeros(3, 5)``), or cannot be made, nothing changes.

Dtypes are never symbolic in a graph: a dtype that follows an input is fixed in
the program like a static shape, so it is not counted.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.comparison.compare_values import flatten_with_paths

# Ops (ATen overload names, torch functions, tensor methods) whose tensor argument
# gives only shape, dtype and device, never values.
SHAPE_ONLY_READERS = frozenset(
    {
        "zeros_like",
        "ones_like",
        "full_like",
        "empty_like",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_empty",
        "size",
        "sym_size",
    }
)


@dataclass(frozen=True)
class SizedLeaf:
    """An output leaf the program builds from sizes alone: its shape, and whether the
    program computes it (``symbolic``) or holds it fixed. ``follows``: for a fixed
    shape, the shape an export with every input dim free gave it (``free_dims``)."""

    shape: str
    symbolic: bool
    follows: str = ""


def sized_leaves(record: Any, output: Any) -> dict[int, SizedLeaf]:
    """Leaves of eager's ``output`` (by index in pytree order) the capture builds from sizes.

    Leaves are matched with the graph's user outputs by position: all leaves when
    the capture keeps them all (``torch.export``'s ``user_outputs``), else tensor
    leaves with the graph's tensor outputs when their counts agree. Where they do
    not, nothing is known, and nothing is returned (the output stays judged by its
    values alone).
    """
    graph_module = getattr(record, "graph_module", None)
    if not isinstance(graph_module, torch.fx.GraphModule):
        return {}
    outputs = _user_outputs(record, graph_module)
    leaves = [leaf for _, leaf in flatten_with_paths(output)[0]]
    if len(outputs) == len(leaves):
        pairs = list(enumerate(outputs))
    else:
        tensors = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        nodes = [o for o in outputs if _is_tensor_node(o)]
        if len(tensors) != len(nodes):
            return {}
        pairs = list(zip(tensors, nodes, strict=True))
    found = {}
    for index, node in pairs:
        if isinstance(leaves[index], torch.Tensor) and _is_tensor_node(node) and _from_sizes(node):
            shape = _value(node).shape
            found[index] = SizedLeaf(
                shape="[" + ", ".join(str(d) for d in shape) + "]",
                symbolic=any(_symbolic(d) for d in shape),
            )
    return found


def _user_outputs(record: Any, graph_module: torch.fx.GraphModule) -> list[Any]:
    output = next(n for n in reversed(graph_module.graph.nodes) if n.op == "output")
    flat = pytree.tree_leaves(output.args[0]) if output.args else []
    program = getattr(record, "program", None)
    if program is None:
        return flat
    # The training IR may end with mutation outputs too: keep the user outputs.
    kinds = [spec.kind for spec in program.graph_signature.output_specs]
    if len(kinds) != len(flat):
        return []
    user = torch.export.graph_signature.OutputKind.USER_OUTPUT
    return [node for node, kind in zip(flat, kinds, strict=True) if kind == user]


def _value(node: Any) -> Any:
    meta = getattr(node, "meta", {})
    return meta.get("val", meta.get("example_value"))


def _is_tensor_node(node: Any) -> bool:
    return isinstance(node, torch.fx.Node) and isinstance(_value(node), torch.Tensor)


def _symbolic(dim: Any) -> bool:
    return isinstance(dim, torch.SymInt) and bool(dim.node.expr.free_symbols)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, str):  # call_method, get_attr, placeholder
        return target
    name = getattr(target, "_opname", None) or getattr(target, "__name__", "")
    return str(name)


def _from_sizes(node: torch.fx.Node) -> bool:
    """No tensor-valued path from a graph input's data leads to ``node``."""
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.op in ("placeholder", "get_attr"):
            return False
        if current.op not in ("call_function", "call_method"):
            return False  # a submodule call or anything else: not known to be built from sizes
        if _op_name(current) in SHAPE_ONLY_READERS:
            inputs = [n for n in current.all_input_nodes if not _is_tensor_node(n)]
        else:
            inputs = list(current.all_input_nodes)
        for source in inputs:
            value = _value(source)
            if isinstance(value, torch.Tensor) or source.op == "get_attr":
                stack.append(source)  # data flows in: followed, to an input it fails
            elif value is None:
                return False  # no recorded value: a size cannot be told from data
    return True


def free_dims(subject: Any, output: Any, sized: dict[int, SizedLeaf]) -> dict[int, SizedLeaf]:
    """``sized`` with each fixed-shape leaf's shape as an export with every input dim
    left free (``Dim.AUTO``) computes it, where that export makes it symbolic."""
    fixed = [index for index, leaf in sized.items() if not leaf.symbolic]
    if not fixed:
        return sized
    args, kwargs = subject.inputs_copy()
    dims = torch.export.ShapesCollection()
    for tensor in pytree.tree_leaves((args, kwargs)):
        if isinstance(tensor, torch.Tensor):
            dims[tensor] = {dim: torch.export.Dim.AUTO for dim in range(tensor.dim())}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the probe's own, not the case's
            program = torch.export.export(
                subject.model_copy(), args, kwargs, dynamic_shapes=dims, strict=False
            )
    except Exception:
        return sized  # no such program: no evidence, the shape stays fixed
    free = sized_leaves(SimpleNamespace(graph_module=program.graph_module, program=program), output)
    found = dict(sized)
    for index in fixed:
        probe = free.get(index)
        if probe is not None and probe.symbolic:
            found[index] = replace(sized[index], symbolic=True, follows=probe.shape)
    return found
