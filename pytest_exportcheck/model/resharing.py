"""Sharing put back where a read through ``data_ptr()`` gave tensors bytes of their own.

A copy-on-write tensor (``copy_on_write.py``) gets its own bytes not only when it is
written: ``Tensor.data_ptr()`` asks for a writable pointer, and torch copies
first. Strict export reads every weight of the model it traces that way (Dynamo's
``clone_input``, caching real values for export), so the capture's copy of
VGG-11 ended up with 507 MB of weights of its own, equal bit for bit to the
subject's. Those bytes cost the worker's memory for the rest of the case, and
every later snapshot compared them by value (``frozen_values.bit_identical``)
where shared ones compare by address.

A :class:`ShareKeeper` made before such a call holds one more lazy copy of each
shared storage (no bytes); :meth:`ShareKeeper.put_back` then points the tensors of
each storage that lost its sharing, yet was not written (version counters
unmoved, and the same bytes, read once), at that copy again, and the private
bytes are freed. Tensors that viewed one storage view one storage again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch

from pytest_exportcheck.model.copy_on_write import is_shared, lazily_copyable, lazy_storage


@dataclass
class _Storage:
    twin: torch.UntypedStorage  # a lazy copy of the storage as it was
    views: list[tuple[torch.Tensor, int]] = field(default_factory=list)  # (tensor, version)


class ShareKeeper:
    """The shared bytes of ``tensors`` as they are now, to put back after a call."""

    def __init__(self, tensors: Iterable[torch.Tensor]) -> None:
        self._storages: dict[int, _Storage] = {}
        seen: set[int] = set()
        for tensor in tensors:
            if id(tensor) in seen or not (lazily_copyable(tensor) and is_shared(tensor)):
                continue
            seen.add(id(tensor))
            storage = tensor.untyped_storage()
            kept = self._storages.get(storage._cdata)
            if kept is None:
                twin = lazy_storage(storage, tensor.device)
                if twin is None:
                    continue
                kept = self._storages[storage._cdata] = _Storage(twin)
            kept.views.append((tensor, tensor._version))

    def put_back(self) -> int:
        """Share again each storage that lost its sharing unwritten; the bytes freed."""
        freed = 0
        for kept in self._storages.values():
            if _unwritten_copy(kept):
                freed += kept.twin.nbytes()
                with torch.no_grad():
                    for tensor, _ in kept.views:
                        tensor.set_(
                            kept.twin, tensor.storage_offset(), tensor.size(), tensor.stride()
                        )
        self._storages.clear()
        return freed


def _unwritten_copy(kept: _Storage) -> bool:
    """The views still view one storage, which now holds bytes of its own, equal to the
    twin's, and no view was written through torch."""
    first = kept.views[0][0]
    storage = first.untyped_storage()
    if is_shared(first) or storage.nbytes() != kept.twin.nbytes():
        return False
    for tensor, version in kept.views:
        if tensor._version != version or tensor.untyped_storage()._cdata != storage._cdata:
            return False
    # Version counters miss writes through ``.data`` and raw pointers: the bytes
    # decide (read once, where every snapshot compared them by value before).
    return torch.equal(_as_bytes(storage), _as_bytes(kept.twin))


def _as_bytes(storage: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
