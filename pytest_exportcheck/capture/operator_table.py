"""torch's table of preservable CompositeImplicitAutograd ops, derived once per process.

Every ``ep.run_decompositions()`` asks ``torch._export.utils._collect_all_valid_cia_ops()``
twice (once to split the decomposition table, once to materialize it), and each
call walks every operator namespace but ``aten`` (which torch caches itself)::

    run_decompositions()
      _split_decomp_table_to_cia_and_python_decomp -> _collect_all_valid_cia_ops()
      CustomDecompTable.materialize                -> _collect_all_valid_cia_ops()

Measured on torch 2.13, CPU: 24 ms a call, about 40 % of decomposing a small model.
The answer changes only when operators or namespaces are added, or a
CompositeImplicitAutograd kernel is registered, so within :func:`reusing_cia_ops` it is
kept for as long as a key of exactly those stays the same (0.4 ms to read).

Not seen by the key: a kernel put in an existing op's ``py_kernels`` by
``op.py_impl(CompositeImplicitAutograd)`` (a torch-internal API, used by torch itself
at import) after the first decomposition of the process.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch

from pytest_exportcheck.capture.torch_substitutes import substituted

# The modules that call it, by the name they imported it under (2.6-2.14 alike).
_CALLERS = ("torch.export.exported_program", "torch.export.decomp_utils")
_NAME = "_collect_all_valid_cia_ops"

_cached: tuple[object, set[Any]] | None = None


def operator_registry_key() -> object:
    """What ``_collect_all_valid_cia_ops`` reads: namespaces, their ops, CIA registrations."""
    namespaces = tuple(torch.ops._dir)
    sizes = tuple(
        len(getattr(namespace, "_dir", ()))
        for namespace in (getattr(torch.ops, name, None) for name in namespaces)
    )
    registrations = tuple(
        torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")
    )
    return namespaces, sizes, registrations


def _reused(collect: Callable[[], set[Any]]) -> Callable[[], set[Any]]:
    def collect_once() -> set[Any]:
        global _cached
        key = operator_registry_key()
        if _cached is None or _cached[0] != key:
            ops = collect()
            # The walk materializes ops lazily (getattr on torch.ops): read the key after it.
            _cached = (operator_registry_key(), ops)
        return set(_cached[1])  # callers may not modify it, but a copy costs nothing here

    return collect_once


def reusing_cia_ops() -> AbstractContextManager[None]:
    """Within the block, torch's export modules get the table derived once."""
    return substituted(_CALLERS, _NAME, _reused)
