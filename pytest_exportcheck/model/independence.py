"""Is a deep copy of the model independent of it? Every compared run relies on it.

Each run starts from ``copy.deepcopy`` of the model as built (``isolation.py``)
and must leave the next one that model untouched. A model's own ``__deepcopy__``
can break that: returning the model itself, or a new module around the model's
own submodules, tensors or memory. Then eager's writes, the float64 reference's
``.double()`` and the mode check's ``.train()`` reach the model as built, and the
checks after them compare against a model no one built: a run failed
``[internal] mat1 and mat2 must have the same dtype`` in the soundness check's
eager call after the float64 reference had cast the shared weights. Such a model
is a case error, named where it is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from pytest_exportcheck.containment.failures import CaseError, exception_text
from pytest_exportcheck.model.isolation import private_copy
from pytest_exportcheck.spec import Case


def check_copyable(case: Case, model: torch.nn.Module) -> None:
    """A case error unless ``copy.deepcopy(model)`` gives a copy that shares nothing
    with ``model``: every compared run starts from such a copy (``isolation.py``)."""
    try:
        copied = private_copy(model)
    except Exception as exc:
        raise CaseError(
            f"{case.location}: the model cannot be deep-copied ({type(exc).__name__}: "
            f"{exception_text(exc)});"
            " every compared run needs its own copy"
        ) from exc
    shared = shared_with_copy(model, copied)
    if shared is not None:
        raise CaseError(f"{case.location}: {not_independent(shared)}")


def not_independent(shared: str) -> str:
    """What the plugin needs of ``copy.deepcopy``, after what ``shared`` says it did."""
    return (
        f"{shared}: every compared run needs a copy of the model that shares nothing with "
        "it, or one run's writes (a buffer's update, the float64 reference's .double(), a "
        "mode switch) reach the model the next run starts from. Make __deepcopy__ return a "
        "new module with tensors of its own, or leave it to nn.Module"
    )


def shared_with_copy(original: torch.nn.Module, copied: Any) -> str | None:
    """What ``copied`` (``copy.deepcopy(original)``) still shares with ``original``, or None:
    the model itself, a submodule, a tensor object, or a tensor's memory. A copy made
    on write (``copy_on_write.py``) holds a storage of its own, so it never counts."""
    author = deepcopy_author(original)
    if copied is original:
        return f"copy.deepcopy(model) returned the model itself{author}"
    if not isinstance(copied, torch.nn.Module):
        return f"copy.deepcopy(model) returned a {type(copied).__name__}{author}"
    modules = {id(module): name for name, module in original.named_modules()}
    for name, module in copied.named_modules():
        if id(module) in modules:
            return (
                f"copy.deepcopy(model) kept the model's own submodule "
                f"`{modules[id(module)] or '(root)'}` as its `{name}`{author}"
            )
    tensors = {id(tensor): name for name, tensor in named_tensors(original)}
    storages = {_storage_key(tensor): name for name, tensor in named_tensors(original)}
    for name, tensor in named_tensors(copied):
        if id(tensor) in tensors:
            return (
                f"copy.deepcopy(model) kept the model's own tensor `{tensors[id(tensor)]}`{author}"
            )
        key = _storage_key(tensor)
        if key is not None and key in storages:
            return (
                f"copy.deepcopy(model)'s `{name}` shares its memory with the model's "
                f"`{storages[key]}`{author}"
            )
    return None


def named_tensors(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Every parameter, buffer and tensor attribute of ``module`` and its submodules."""
    for prefix, owner in module.named_modules():
        dot = f"{prefix}." if prefix else ""
        for store in (owner._parameters, owner._buffers, owner.__dict__):
            for key, value in store.items():
                if isinstance(value, torch.Tensor):
                    yield f"{dot}{key}", value


def _storage_key(tensor: torch.Tensor) -> int | None:
    """The storage's identity (never ``data_ptr()``, which would unshare a lazy copy);
    None for tensors without one (sparse, some subclasses) or of no bytes."""
    try:
        storage = tensor.untyped_storage()
        return storage._cdata if storage.nbytes() else None
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def deepcopy_author(model: torch.nn.Module) -> str:
    """`` (SelfCopy.__deepcopy__)``: the model's own class that defines ``__deepcopy__``,
    or its submodules' first; empty where none does (a ``__reduce_ex__`` did it)."""
    for module in model.modules():
        for cls in type(module).__mro__:
            if "__deepcopy__" in vars(cls) and not _torchs(cls):
                return f" ({cls.__qualname__}.__deepcopy__)"
    return ""


def _torchs(cls: type) -> bool:
    return cls.__module__ == "torch" or cls.__module__.startswith("torch.")
