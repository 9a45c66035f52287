"""Private copies that cost memory only for what is written: torch's copy-on-write storage.

Every compared run starts from its own copy of the model or program
(``isolation.py``), yet forward writes few of its tensors (running statistics,
caches) and none of a classifier's weights. A plain deep copy of AlexNet costs
244 MB; a capture's item made ~8 of them (the subject's, eager's, the
soundness calls', the captured model's, the runtime tensors'), where a user's
script shares one set. ``torch._lazy_clone`` (torch >= 2.3; see
``c10/core/impl/README-cow.md``) gives a storage that shares its bytes with the
original until either side writes, and the write copies them first
("materializes"): the copy is private by construction, so a run that writes
its state still cannot reach another's.

What torch does with such storages, measured on 2.13 and 2.9:

- reads (``add``, ``linear``, ``conv2d``, ``torch.equal``) leave them shared;
- a write, in place or through ``.data``, copies first;
- ``data_ptr()`` from Python asks for a writable pointer and copies too: this
  package tells tensors apart by storage (``_cdata``), never by ``data_ptr()``;
- ``torch.export.save`` reads through ``data_ptr()``: the program it saves
  materializes (memory, never values), unless it is saved from borrowed
  storages (:func:`borrowed_memo`);
- ``const_data_ptr()`` leaves them shared.

Only dense CPU tensors of plain ``Tensor`` / ``Parameter`` type are copied
lazily; anything else (an accelerator's memory, subclasses, quantized or
sparse tensors, storages whose memory torch does not own, a torch without the
function) is copied as ``copy.deepcopy`` copies it.
"""

from __future__ import annotations

import copy
import ctypes
import functools
from collections.abc import Iterable
from typing import Any, TypeVar

import torch

T = TypeVar("T")

_lazy_clone = getattr(torch, "_lazy_clone", None)
_is_cow = getattr(torch._C, "_is_cow_tensor", None)


def lazy_deepcopy(obj: T, tensors: Iterable[torch.Tensor]) -> T:
    """``copy.deepcopy(obj)``, with each of ``tensors`` (those ``obj`` holds) copied on write.

    Storage sharing is kept as deepcopy keeps it (views of one storage stay
    views of one copy), since the lazy copy is made per storage, in deepcopy's
    own memo.
    """
    return copy.deepcopy(obj, lazy_memo(tensors))


def lazy_memo(tensors: Iterable[torch.Tensor]) -> dict[Any, Any]:
    """A ``copy.deepcopy`` memo in which ``tensors`` are already copied lazily."""
    return _storage_memo(tensors, lazy_storage)


# Whether a storage can be borrowed: its address read without materializing a lazy
# copy needs ``Tensor.const_data_ptr`` (torch 2.9.1 has none; 2.13 has it).
CAN_BORROW = hasattr(torch.Tensor, "const_data_ptr")


def borrowed_memo(tensors: Iterable[torch.Tensor]) -> dict[Any, Any]:
    """A ``copy.deepcopy`` memo in which ``tensors`` become tensors over storages that
    *borrow* their bytes: only for a copy that reads them while the originals live.

    For ``torch.export.save``, which reads each tensor through ``data_ptr()``: on a
    lazy copy that materializes the bytes first (VGG-11: a 507 MB copy per save,
    ~1 s on this project's VMs, where the first touch of a fresh page is what
    costs); a borrowed storage is torch's own over the same address, found by
    ``const_data_ptr()``, which leaves copy-on-write sharing alone. Nothing writes
    through it, and the copy must not outlive the tensors it borrows from.
    """
    return _storage_memo(tensors, borrowed_storage)


def _storage_memo(tensors: Iterable[torch.Tensor], make: Any) -> dict[Any, Any]:
    """A deepcopy memo with a ``make(storage, device)`` storage for each of ``tensors``.

    ``Tensor.__deepcopy__`` takes its storage from a dict in the memo, keyed by the
    storage's ``_cdata`` (the dict's own key is torch's: see
    :func:`_storage_memo_key`); ``Parameter.__deepcopy__`` clones ``.data`` itself,
    so each Parameter is made here over the lazy storage, as it would make one.
    """
    memo: dict[Any, Any] = {}
    storages: dict[int, torch.UntypedStorage] = memo.setdefault(_storage_memo_key(), {})
    for tensor in tensors:
        if id(tensor) in memo or not lazily_copyable(tensor):
            continue
        storage = tensor.untyped_storage()
        copied = storages.get(storage._cdata)
        if copied is None:
            copied = make(storage, tensor.device)
            if copied is None:
                continue
            storages[storage._cdata] = copied
        if type(tensor) is torch.nn.Parameter:
            data = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
            data.set_(copied, tensor.storage_offset(), tensor.size(), tensor.stride())
            memo[id(tensor)] = torch.nn.Parameter(data, tensor.requires_grad)
    return memo


@functools.cache
def _storage_memo_key() -> str:
    """Where ``UntypedStorage.__deepcopy__`` keeps the storages it copied in a memo
    (``"torch"`` on 2.9 and 2.13): read from torch itself, not written down here."""
    memo: dict[Any, Any] = {}
    copy.deepcopy(torch.empty(0).untyped_storage(), memo)
    return next(key for key in memo if isinstance(key, str))


def lazily_copyable(tensor: Any) -> bool:
    return (
        _lazy_clone is not None
        and type(tensor) in (torch.Tensor, torch.nn.Parameter)
        and tensor.device.type == "cpu"
        and tensor.layout == torch.strided
        and not tensor.is_quantized
        and not tensor.is_conj()
        and not tensor.is_neg()
    )


def borrowed_storage(storage: torch.UntypedStorage, device: torch.device) -> Any:
    """A storage over ``storage``'s bytes that does not own them, or None (empty)."""
    if storage.nbytes() == 0:
        return None
    whole = torch.empty(0, dtype=torch.uint8, device=device).set_(storage)
    view = (ctypes.c_char * storage.nbytes()).from_address(whole.const_data_ptr())
    return torch.frombuffer(view, dtype=torch.uint8).untyped_storage()


def lazy_storage(storage: torch.UntypedStorage, device: torch.device) -> Any:
    """A lazy copy of the whole storage, or None where torch cannot make one."""
    whole = torch.empty(0, dtype=torch.uint8, device=device).set_(storage)
    try:
        return _lazy_clone(whole).untyped_storage()  # type: ignore[misc]
    except RuntimeError:  # memory torch does not own (numpy's, mmap'd): no lazy copy
        return None


class WriteMark:
    """Whether a tensor was written since it was marked, without reading its values.

    Unwritten: its storage still shares bytes copy-on-write (a write, in place or
    through ``.data``, would have copied them) and its version counter is where
    it was (torch's ``reshape`` may lazily copy a tensor too, which makes a
    written storage shared again; a write bumps the counter first). Once written,
    a tensor stays written to its mark (its bytes are its own from then on), so
    a mark is made once. Tensors that were never lazy copies always count as
    written: checking their values would cost what resetting them costs.
    """

    __slots__ = ("version",)

    def __init__(self, tensor: torch.Tensor) -> None:
        self.version = tensor._version if is_shared(tensor) else None

    def unwritten(self, tensor: torch.Tensor) -> bool:
        return self.version is not None and tensor._version == self.version and is_shared(tensor)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Both read the same shared bytes at the same place, found without reading them.

    Two lazy copies of one storage (or a copy and its original), neither written
    since, hold the same bits wherever their views line up; comparing them
    value by value reads both (AlexNet: 244 MB a comparison). ``Tensor.const_data_ptr``
    does not copy on write as ``data_ptr`` does; Python has it on 2.13, not on
    2.9: without it the answer is False and the caller compares values.
    """
    if not (is_shared(a) and is_shared(b) and hasattr(a, "const_data_ptr")):
        return False
    layout = (a.dtype, a.shape, a.stride(), a.device)
    return layout == (b.dtype, b.shape, b.stride(), b.device) and (
        a.const_data_ptr() == b.const_data_ptr()
    )


def is_shared(tensor: torch.Tensor) -> bool:
    """The tensor's storage shares its bytes copy-on-write (a lazy copy, or its original)."""
    return _is_cow is not None and tensor.device.type == "cpu" and bool(_is_cow(tensor))
