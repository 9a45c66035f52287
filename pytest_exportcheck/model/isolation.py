"""Copies that keep compared runs from sharing state.

The trap: ``ep.module()``, ``unflatten(ep)`` and ``ep.run_decompositions()`` all
share parameter and buffer storage with ``ep``, and models mutate their inputs.
Every run that is compared therefore starts from its own deep copy of the model
or program and its own clone of the inputs.
"""

from __future__ import annotations

import copy
import functools
import random
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.model.copy_on_write import lazy_deepcopy
from pytest_exportcheck.model.frozen_values import FrozenValues
from pytest_exportcheck.model.nesting import program_nesting, too_deep

T = TypeVar("T")


def clone_tree(tree: T) -> T:
    """Clone every tensor leaf (keeping ``requires_grad`` and its marks); other leaves
    are shared."""

    def clone(leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor):
            return keep_marks(leaf, leaf.detach().clone().requires_grad_(leaf.requires_grad))
        return leaf

    return pytree.tree_map(clone, tree)


def detached(tree: T) -> T:
    """Every tensor leaf detached from autograd (the same values and storage).

    Eager runs with autograd on (as export traces); an output kept with its graph
    keeps every activation its backward would need alive: ResNet-50's items held
    ~40 MB of them per kept eager output."""
    return pytree.tree_map(
        lambda leaf: leaf.detach() if isinstance(leaf, torch.Tensor) else leaf, tree
    )


def keep_marks(original: torch.Tensor, copied: torch.Tensor) -> torch.Tensor:
    """``copied`` with ``original``'s Python attributes.

    ``torch._dynamo.mark_dynamic(t, 0)`` (and ``mark_static``, ``maybe_mark_dynamic``)
    store the mark as attributes of the tensor object (``_dynamo_dynamic_indices``);
    ``clone()`` and ``.to()`` drop them, so an input factory's marks would never reach
    the capture. Each container is copied: a later mark on one copy stays its own.
    """
    if copied is not original:
        for name, value in vars(original).items():
            setattr(copied, name, copy.copy(value))
    return copied


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed torch, ``random`` and numpy for the block; give the caller's RNG state back after.

    Every build and every compared call starts from the case's seed, so eager
    and exported runs of a model that draws random numbers see one stream —
    and the user's own tests in the same session see theirs undisturbed.
    """
    python_state = random.getstate()
    numpy_random = _numpy_random()
    numpy_state = numpy_random.get_state() if numpy_random is not None else None
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        seed_everything(seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            if numpy_random is not None:
                numpy_random.set_state(numpy_state)


def seed_everything(seed: int) -> None:
    """Seed torch (every device), ``random`` and numpy, without restoring anything."""
    random.seed(seed)
    seed_torch(seed)
    numpy_random = _numpy_random()
    if numpy_random is not None:
        numpy_random.seed(seed)


def seed_torch(seed: int) -> None:
    """``torch.manual_seed(seed)``, at the cost of seeding the CPU generator where no
    accelerator is available.

    ``torch.manual_seed`` also seeds each accelerator torch was built for; one that has
    not started gets the seed queued for its start, with the caller's stack
    (``traceback.format_stack()``: 0.3-0.5 ms under pytest's 50-70 frames, and a run
    seeds thousands of times). Where no accelerator is available none can start, so
    the queue is never read and the CPU generator's seed is all the call does.
    """
    if _accelerator_available():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


@functools.cache
def _accelerator_available() -> bool:
    # Fixed for the process: devices are counted once, when the driver starts.
    return torch.accelerator.is_available()


def _numpy_random() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy.random


def to_device(tree: T, device: str) -> T:
    """Move every tensor leaf to ``device``."""
    return pytree.tree_map(
        lambda leaf: keep_marks(leaf, leaf.to(device)) if isinstance(leaf, torch.Tensor) else leaf,
        tree,
    )


def private_copy(obj: T) -> T:
    """A deep copy: its tensors share no storage with ``obj``'s.

    The tensors of a module, a program or a list of tensors are copied on first
    write (``copy_on_write.py``): a run that writes one gets its own bytes, and
    a big model's weights, which no run writes, are held once.
    """
    try:
        with quiet_torch_internals():
            copied = lazy_deepcopy(obj, held_tensors(obj))
    except RecursionError as exc:
        what = "the program" if isinstance(obj, torch.export.ExportedProgram) else "it"
        raise RecursionError(
            too_deep(f"copying {what} (copy.deepcopy)", program_nesting(obj))
        ) from exc
    if isinstance(obj, torch.export.ExportedProgram):
        # A deep copy renames a placeholder that shadows a builtin (``input`` becomes
        # ``input_1``), and torch.export.save then refuses the copy's signature.
        keep_node_names(obj.graph_module, copied.graph_module)  # type: ignore[attr-defined]
    return copied


def keep_node_names(original: torch.fx.GraphModule, copied: torch.fx.GraphModule) -> None:
    """Give ``copied``'s nodes (and those of its subgraphs: ``cond``'s branches, ...)
    the names ``original``'s have where the copy renamed them."""
    graph_module = torch.fx.GraphModule
    copied_modules = dict(copied.named_modules())
    for name, module in original.named_modules():
        twin = copied_modules.get(name)
        if not isinstance(module, graph_module) or not isinstance(twin, graph_module):
            continue
        renamed = False
        for node, copied_node in zip(module.graph.nodes, twin.graph.nodes, strict=True):
            if copied_node.name == node.name:
                continue
            copied_node.name = node.name
            if node.op == "placeholder":
                copied_node.target = node.target
            renamed = True
        if renamed:
            twin.recompile()


def held_tensors(obj: Any) -> list[torch.Tensor]:
    """The tensors a module (its parameters, buffers and tensor attributes), an
    ``ExportedProgram`` (its state and constants, and its graph module's) or a list
    or tuple holds."""
    if isinstance(obj, (list, tuple)):
        return [value for value in obj if isinstance(value, torch.Tensor)]
    if isinstance(obj, torch.export.ExportedProgram):
        values = [*obj.state_dict.values(), *obj.constants.values()]
        return held_tensors(values) + held_tensors(obj.graph_module)
    if not isinstance(obj, torch.nn.Module):
        return []
    tensors: list[torch.Tensor] = []
    for module in obj.modules():
        for store in (module._parameters, module._buffers, module.__dict__):
            tensors += [value for value in store.values() if isinstance(value, torch.Tensor)]
    return tensors


@contextmanager
def quiet_torch_internals() -> Iterator[None]:
    """Silence deprecations torch raises against itself while copying or unflattening.

    Deep-copying an ExportedProgram (also done inside ``ep.module()`` and
    ``unflatten``) trips torch's own pytree ``LeafSpec`` deprecation: nothing a
    user of this plugin can act on, and noise in every run's summary.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield


def module_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer by every name it has (tied / shared ones repeated)."""
    state: dict[str, torch.Tensor] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        state[name] = param
    for name, buffer in module.named_buffers(remove_duplicate=False):
        state[name] = buffer
    return state


def snapshot_state(
    module: torch.nn.Module, frozen: FrozenValues | None = None
) -> dict[str, torch.Tensor]:
    """A read-only copy of every parameter and buffer; with ``frozen``, values it holds
    bit for bit are shared, not cloned."""
    state = module_state(module).items()
    if frozen is None:
        return {name: t.detach().clone() for name, t in state}
    return {name: frozen.copy_of(name, t) for name, t in state}


def flat_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The pytree leaves of ``(args, kwargs)`` with readable paths: ``args[1]['a'][0]``."""
    try:
        leaves, _ = pytree.tree_flatten_with_path((args, kwargs))
    except ValueError:
        # A pytree node registered without flatten_with_keys_fn has no key paths;
        # number the leaves instead (the order is still pytree's).
        flat, _ = pytree.tree_flatten((args, kwargs))
        return [(f"leaf[{index}]", leaf) for index, leaf in enumerate(flat)]
    return [(render_input_path(path), leaf) for path, leaf in leaves]


def render_input_path(path: tuple[Any, ...]) -> str:
    head, *rest = path
    text = "args" if getattr(head, "idx", None) == 0 else "kwargs"
    for key in rest:
        if hasattr(key, "idx"):
            text += f"[{key.idx}]"
        elif hasattr(key, "key"):
            text += f"[{key.key!r}]"
        else:  # attribute keys of registered dataclasses / namedtuples
            text += f".{getattr(key, 'name', key)}"
    return text
