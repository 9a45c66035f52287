"""Refusing a huge tensor before torch allocates it, while user code builds a model or inputs.

A typo in a constructor argument (``hidden: 409600``) or an input factory
would allocate until the machine swaps, long before any time limit fires. The
YAML's own tensors are checked when the case is loaded; what a constructor or
factory allocates can only be seen as it asks torch for it. So they run under
a dispatch mode that looks at every op creating a fresh tensor from a
``size`` argument (``empty``, ``zeros``, ``randn``, ``new_empty``, ...) and
raises :class:`HugeTensorError` before the op runs when the size is over the
limit. Views (``expand``) allocate nothing and are let through.

Building on the meta device first would measure a model without allocating,
but it also creates the module-level tensors of any module first imported
during that build on meta: a dispatch mode changes nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class HugeTensorError(Exception):
    """User code asked torch for a tensor over the limit; nothing was allocated."""


@contextmanager
def refusing_huge_tensors(max_elements: int | None) -> Iterator[None]:
    """Within the block, creating a tensor of more than ``max_elements`` raises (None: no limit)."""
    if max_elements is None:
        yield
        return
    with _RefuseHuge(max_elements):
        yield


class _RefuseHuge(TorchDispatchMode):
    def __init__(self, max_elements: int) -> None:
        super().__init__()
        self.max_elements = max_elements

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        schema = func._schema
        fresh = bool(schema.returns) and schema.returns[0].alias_info is None
        if fresh:
            for index, argument in enumerate(schema.arguments):
                if argument.name != "size":
                    continue
                size = kwargs.get("size", args[index] if index < len(args) else None)
                if isinstance(size, (list, tuple)):
                    numel = math.prod(int(s) for s in size)
                    if numel > self.max_elements:
                        raise HugeTensorError(
                            f"a tensor of shape {[int(s) for s in size]} ({numel} elements, "
                            f"{func}) is over the limit of {self.max_elements} (the "
                            "exportcheck_max_elements ini option); refused before torch "
                            "allocated it"
                        )
        return func(*args, **kwargs)
