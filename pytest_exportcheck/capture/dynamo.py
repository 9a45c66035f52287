"""Dynamo-level captures: ``dynamo`` and ``dynamo-legacy``, both ``fx.GraphModule``\\ s.

``dynamo`` (``dynamo_graph_capture_for_export(model)(*args)``) turns every
tensor forward reads into a placeholder named by its access path (its Dynamo
*source*), ordered by first use; a tensor reached twice gets one placeholder::

    placeholder L_self_modules_b1_modules_lin_parameters_weight_
                  = L['self']._modules['b1']._modules['lin']._parameters['weight']
    placeholder L_x_                               = L['x']
    placeholder L_self_scale                       = L['self'].scale  (plain tensor attribute)

The graph module's codegen binds them: ``gm.graph.process_inputs(*args)`` runs
Dynamo's bytecode up to the graph and returns the real values it feeds.

``dynamo-legacy`` (``torch._dynamo.export(model)(*args)``) keeps placeholders
for user inputs only and reads state through ``get_attr``::

    get_attr L__self___b1_lin_weight   meta["dynamo_flat_name_to_original_fqn"] -> b1.lin.weight

Targets are read from what the graph carries (source names, the flat-name map)
and the signature check then verifies each against the eager model by tensor
identity; a name that matches no spelling falls back to identity, and says so
in ``Placeholder.mapped_by``.
"""

from __future__ import annotations

import functools
import inspect
import re
import time
from functools import cached_property
from typing import Any

import torch

from pytest_exportcheck.capture.dynamic_shapes import (
    declared_dynamic_shapes,
    dim_constraints,
    dynamic_capture_error,
)
from pytest_exportcheck.capture.record import (
    STATE_KINDS,
    CaptureRecord,
    Placeholder,
    Runnable,
    StatefulCall,
    match_input_paths,
    named_tensors,
    tensor_at,
)
from pytest_exportcheck.model.isolation import clone_tree, flat_inputs
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec.compat import dynamo_graph_capture

BY_IDENTITY = "tensor identity (no source name matched)"


def dynamo_unavailable() -> str | None:
    if dynamo_graph_capture() is None:
        return (
            f"torch {torch.__version__} has no "
            "torch._dynamo.functional_export.dynamo_graph_capture_for_export"
        )
    return None


def capture_dynamo(subject: Subject) -> GraphRecord:
    dynamo_graph_capture_for_export = dynamo_graph_capture()
    assert dynamo_graph_capture_for_export is not None  # items skip first (dynamo_unavailable)
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    dynamic = declared_dynamic_shapes(subject, model, args, kwargs)
    started = time.perf_counter()
    try:
        # It takes no dynamic_shapes, only the constraints torch.export derives from
        # them (one per dim, tied to these very input tensors). It solves none of them:
        # a dim the model specializes is not refused here, the shapes check finds it.
        constraints = None if dynamic is None else dim_constraints(model, args, kwargs, dynamic)
        gm = dynamo_graph_capture_for_export(model, constraints=constraints)(*args, **kwargs)
    except Exception as exc:
        context = f"{subject.case.location}: dynamo_graph_capture_for_export raised"
        raise dynamic_capture_error(exc, context, subject) from exc
    seconds = time.perf_counter() - started
    fed, paths = _fed_values(gm, subject)
    spellings = _spellings(model, _source_spelling)
    tensors = named_tensors(model)
    placeholders = [
        _dynamo_placeholder(node, value, path, spellings, tensors)
        for node, value, path in zip(_placeholder_nodes(gm), fed, paths, strict=True)
    ]
    return GraphRecord(
        capture="dynamo",
        subject=subject,
        placeholders=placeholders,
        dialect="Dynamo graph, torch-level ops (dynamo_graph_capture_for_export)",
        seconds=seconds,
        graph_module=gm,
        captured_model=model,
        bakes_scalar_inputs=True,
        drops_unread_inputs=True,
        fed={p.name: v for p, v in zip(placeholders, fed, strict=True)},
        feeds_state=True,
    )


def capture_dynamo_legacy(subject: Subject) -> GraphRecord:
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    dynamic = declared_dynamic_shapes(subject, model, args, kwargs)
    started = time.perf_counter()
    # Legacy export compiles through Dynamo's frame cache: the ninth export of
    # one forward (nine cases of one model class) would hit the recompile limit
    # and fail. Each capture starts from an empty cache instead.
    torch._dynamo.reset()
    try:
        gm, _guards = torch._dynamo.export(model, dynamic_shapes=dynamic)(*args, **kwargs)
    except Exception as exc:
        context = f"{subject.case.location}: torch._dynamo.export raised"
        raise dynamic_capture_error(exc, context, subject) from exc
    seconds = time.perf_counter() - started
    fed_inputs, paths = _fed_values(gm, subject)
    flat_names: dict[str, str] = gm.meta.get("dynamo_flat_name_to_original_fqn", {})
    spellings = _spellings(model, _legacy_spelling)
    tensors = named_tensors(model)
    placeholders: list[Placeholder] = []
    fed: dict[str, Any] = {}
    inputs = iter(zip(fed_inputs, paths, strict=True))

    def add_state(name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor) and name not in fed:  # not a cond subgraph
            placeholders.append(_legacy_state(gm, name, value, flat_names, spellings, tensors))
            fed[name] = value

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value, path = next(inputs)
            # torch 2.6 leaves meta empty on a scalar input's placeholder: then what
            # the graph expects there is what the path feeds it.
            example = node.meta.get("val", None if isinstance(value, torch.Tensor) else value)
            placeholders.append(_user_input(node.name, path, example))
            fed[node.name] = value
        elif node.op == "get_attr":
            add_state(node.target, functools.reduce(getattr, node.target.split("."), gm))
        elif node.op == "call_module":
            # Older releases (2.6) keep leaf modules as call_module nodes: their
            # tensors are the state, named `L__self___fc1.weight` here and
            # `L__self___fc1_weight` in the flat-name map.
            module = gm.get_submodule(node.target)
            for attr, value in _module_tensors(module):
                add_state(f"{node.target}.{attr}", value)
    return GraphRecord(
        capture="dynamo-legacy",
        subject=subject,
        placeholders=placeholders,
        dialect="Dynamo graph, torch-level ops, state via get_attr (torch._dynamo.export)",
        seconds=seconds,
        graph_module=gm,
        captured_model=model,
        keeps_unread_state=False,
        fed=fed,
        feeds_state=False,
        state_module=model,
    )


class GraphRecord(CaptureRecord):
    """A Dynamo ``GraphModule``: runs as itself, and with eager state fed to its placeholders."""

    def __init__(
        self,
        *,
        fed: dict[str, Any],
        feeds_state: bool,
        state_module: torch.nn.Module | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(**fields)
        self.fed = fed
        # Whether state arrives through placeholders (and so can be fed from eager).
        self.feeds_state = feeds_state
        # Whose FQNs the graph module's state is read under: the graph module
        # itself where it shares its root's submodules (dynamo), else the model
        # whose tensors it registered (dynamo-legacy).
        self.state_module = state_module if state_module is not None else self.graph_module

    def state_tensor(self, fqn: str) -> torch.Tensor | None:
        fed = self._fed_by_target.get(fqn)
        if fed is not None:
            return fed
        # State forward never reads: the dynamo graph module still holds its
        # root's submodules; a legacy one registered only what the graph reads.
        return tensor_at(self.graph_module, fqn)

    @cached_property
    def _fed_by_target(self) -> dict[str, torch.Tensor]:
        """The first placeholder's tensor per target (one dict, not a scan per lookup)."""
        found: dict[str, torch.Tensor] = {}
        for p in self.placeholders:
            value = self.fed.get(p.name)
            if p.target is not None and isinstance(value, torch.Tensor):
                found.setdefault(p.target, value)
        return found

    def fed_tensor(self, placeholder: Placeholder) -> torch.Tensor | None:
        value = self.fed.get(placeholder.name)
        return value if isinstance(value, torch.Tensor) else None

    def runnables(self) -> list[Runnable]:
        runs = [Runnable("graph module", self._graph_module)]
        if self.feeds_state:
            runs.append(Runnable("graph fed eager state", self._fed_graph))
        return runs

    def _graph_module(self) -> StatefulCall:
        return self._cached_run("graph module", lambda: (self.graph_module, self.state_module))

    def _fed_graph(self) -> StatefulCall:
        def make() -> StatefulCall:
            model = self.subject.model_copy()
            return FedGraph(self.graph_module, self.placeholders, model), model

        return self._cached_run("fed", make)


class FedGraph:
    """The graph run in its own calling convention, state placeholders fed from ``model``.

    User inputs go through the graph module's codegen (``process_inputs`` /
    ``process_outputs``), exactly as a call of the module would; every
    parameter/buffer/constant placeholder is fed ``model``'s tensor at its
    target FQN, so a wrong mapping shows up as wrong numbers.
    """

    def __init__(
        self, gm: torch.fx.GraphModule, placeholders: list[Placeholder], model: torch.nn.Module
    ) -> None:
        self.gm = gm
        self.model = model
        names = [n.target for n in _placeholder_nodes(gm)]
        by_name = {p.name: p for p in placeholders}
        self.targets = [
            by_name[n].target if by_name[n].kind in STATE_KINDS else None for n in names
        ]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = list(self.gm.graph.process_inputs(*_fn_args(self.gm, args, kwargs)))
        for index, target in enumerate(self.targets):
            if target is not None:
                tensor = tensor_at(self.model, target)
                if tensor is None:
                    raise LookupError(f"the eager model has no tensor at {target!r} to feed")
                values[index] = tensor
        out = torch.fx.Interpreter(self.gm).run(*values, enable_io_processing=False)
        return self.gm.graph.process_outputs(out)


def _placeholder_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [node for node in gm.graph.nodes if node.op == "placeholder"]


def _fn_args(gm: torch.fx.GraphModule, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # The generated forward names the case's arguments positionally
    # (``forward(self, args_0, use_cache)``); bind turns kwargs into positions.
    return inspect.signature(gm.forward).bind(*args, **kwargs).args


def _fed_values(gm: torch.fx.GraphModule, subject: Subject) -> tuple[list[Any], list[str | None]]:
    """What the path binds to each placeholder for the case's inputs, and which input each is.

    The values are real: the model's own tensors for state, the very input
    objects passed for user inputs (matched to their paths by identity).
    """
    args, kwargs = clone_tree(subject.pristine_inputs)
    values = list(gm.graph.process_inputs(*_fn_args(gm, args, kwargs)))
    return values, match_input_paths(values, flat_inputs(args, kwargs))


def _root_name(model: torch.nn.Module) -> str:
    parameters = list(inspect.signature(type(model).forward).parameters)
    return parameters[0] if parameters else "self"


def _source_spelling(root: str, fqn: str, kind: str) -> str:
    *modules, attr = fqn.split(".")
    source = f"L['{root}']" + "".join(f"._modules['{m}']" for m in modules)
    accessor = {"parameter": f"._parameters['{attr}']", "buffer": f"._buffers['{attr}']"}
    source += accessor.get(kind, f".{attr}")
    return re.sub(r"[^a-zA-Z0-9]+", "_", source)  # as Dynamo names graph inputs


def _legacy_spelling(root: str, fqn: str, kind: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "_", f"L['{root}'].{fqn}")


def _spellings(model: torch.nn.Module, spell: Any) -> dict[str, tuple[str, str]]:
    root = _root_name(model)
    return {spell(root, fqn, kind): (fqn, kind) for fqn, (kind, _) in named_tensors(model).items()}


def _dynamo_placeholder(
    node: torch.fx.Node,
    value: Any,
    path: str | None,
    spellings: dict[str, tuple[str, str]],
    tensors: dict[str, tuple[str, torch.Tensor]],
) -> Placeholder:
    name = str(node.target)
    example = node.meta.get("val", node.meta.get("example_value"))
    if name in spellings:
        fqn, kind = spellings[name]
        return Placeholder(name, kind, fqn, example=example, mapped_by="Dynamo source name")
    if path is not None:
        return _user_input(name, path, example)
    if isinstance(example, torch.SymInt):
        return Placeholder(name, "symbolic_size", None, example=example, mapped_by="SymInt")
    return _by_identity(name, value, tensors, example)


def _module_tensors(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    ]


def _legacy_state(
    gm: torch.fx.GraphModule,
    name: str,
    value: Any,
    flat_names: dict[str, str],
    spellings: dict[str, tuple[str, str]],
    tensors: dict[str, tuple[str, torch.Tensor]],
) -> Placeholder:
    example = value
    flat = name.replace(".", "_")
    if flat in flat_names:
        kind = "parameter" if isinstance(value, torch.nn.Parameter) else "buffer"
        return Placeholder(name, kind, flat_names[flat], example=example,
                           mapped_by="dynamo_flat_name_to_original_fqn")  # fmt: skip
    if name in spellings:
        # Legacy export registers plain tensor attributes as buffers but leaves
        # them out of the flat-name map; the get_attr name still spells the path.
        fqn, kind = spellings[name]
        return Placeholder(name, kind, fqn, example=example, mapped_by="get_attr name")
    return _by_identity(name, value, tensors, example)


def _by_identity(
    name: str, value: Any, tensors: dict[str, tuple[str, torch.Tensor]], example: Any
) -> Placeholder:
    for fqn, (kind, tensor) in tensors.items():
        if tensor is value:
            return Placeholder(name, kind, fqn, example=example, mapped_by=BY_IDENTITY)
    return Placeholder(name, "unknown", None, example=example, mapped_by="nothing matched")


def _user_input(name: str, path: str | None, example: Any) -> Placeholder:
    return Placeholder(name, "user_input", path, example=example, mapped_by="input identity")
