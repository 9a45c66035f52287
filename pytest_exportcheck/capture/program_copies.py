"""Copies of one ``ExportedProgram`` for the ways of running it, sharing tensors where safe.

``ep.module()``, ``unflatten(ep)`` and the decomposed program run on the
program's own tensors, and runs mutate them: each way of running needs tensors
no other run touches *while it runs*. They never run at once, and each is reset
to its first state before every use (``record.Resettable``), so one set of
runtime tensors serves them all; what needs only to read the tensors
(``torch.export.save``, ``run_decompositions()``) gets the program's own::

    ep (never run) ── its tensors ──────────────┬── copy for run_decompositions()
         ├── borrowed storages (saving only) ───┴── copy for torch.export.save
         └── runtime tensors (one clone, reset ─┬── copy → ep.module()
             to ep's values before each copy)   ├── copy → unflatten(ep)
                                                └── copy of the decomposed → .module()

Each copy is a deep copy of the program's structure (graph, signature, module
attributes) with a ``copy.deepcopy`` memo that maps each tensor to the shared
one. A big model's capture thus holds two sets of weights (ep's and the
runtime's) where a private deep copy per consumer held five.

What reads ep's tensors gets them as new tensor objects over the same storage
(``detach()``, a Parameter kept a Parameter), never ep's objects themselves: the
fake mode a strict program carries (torch 2.6 and 2.7) remembers the fake tensor
each real tensor became during the trace, by the real tensor's identity, and a
buffer the forward wrote from a parameter's output comes back from that memory
requiring grad, which ``run_decompositions()`` refuses ("Found a graph input that
requires gradients, and received a mutation"; ``ep.run_decompositions()`` itself
fails so there, for ``kv_cache`` in ``cases/state.yaml``).
"""

from __future__ import annotations

import copy
from typing import TypeVar

import torch

from pytest_exportcheck.model.copy_on_write import (
    CAN_BORROW,
    WriteMark,
    borrowed_memo,
    lazily_copyable,
)
from pytest_exportcheck.model.isolation import keep_node_names, private_copy, quiet_torch_internals
from pytest_exportcheck.model.nesting import program_nesting, too_deep

P = TypeVar("P")


class ProgramCopies:
    """Structure copies of ``program`` (and of programs derived from it, whose tensors are
    its tensors), bound to its own tensors or to the shared runtime ones."""

    def __init__(self, program: torch.export.ExportedProgram) -> None:
        self.program = program
        self._pairs: list[tuple[torch.Tensor, torch.Tensor, WriteMark]] | None = None
        # ep's tensors, each with the alias reading copies hold (the same for all of
        # them, so a program derived from a reading copy maps onto the runtime tensors).
        self._aliases = [(own, _alias(own)) for own in program_tensors(program)]

    def reading(self, program: P) -> P:
        """A copy of ``program`` on the capture's own values: only for what never writes them."""
        return _copy(program, {id(own): alias for own, alias in self._aliases})

    def saving(self, program: P) -> P:
        """A copy of ``program`` for ``torch.export.save``, over storages that borrow its
        values' bytes: use it only while ``program`` lives, and only to save.

        Save reads each tensor through ``data_ptr()``, which gives a copy-on-write
        tensor bytes of its own (``copy_on_write.py``): on a reading copy, ep's own
        tensors would keep those bytes for the rest of the case (VGG-11: 507 MB),
        and even on lazy copies dropped after the save, every save paid that copy.
        Tensors that cannot be borrowed are read where they are, as :meth:`reading`
        reads them: all of them on a torch without ``Tensor.const_data_ptr`` (2.9.1
        has none, measured; 2.13 has it).
        """
        if not CAN_BORROW:  # the save copies what it reads, as reading copies do
            return self.reading(program)
        own = [own for own, _ in self._aliases]
        memo = borrowed_memo(own)
        for own_tensor, alias in self._aliases:
            if not lazily_copyable(own_tensor):
                memo[id(own_tensor)] = alias
        return _copy(program, memo)

    def runnable(self, program: P) -> P:
        """A copy of ``program`` on the runtime tensors, reset to the capture's values first.

        ``program`` is the capture's or one derived from a reading copy of it (the
        decomposed program). The copy and every module made from it share those
        tensors with the other runnable copies: use one at a time, and reset it
        before each use.
        """
        if self._pairs is None:
            own = [own for own, _ in self._aliases]
            # One memo: views of one storage stay views. Copied on write: the
            # weights no run writes stay ep's bytes (copy_on_write.py).
            runtime = private_copy(own)
            self._pairs = [
                (own_tensor, runtime_tensor, WriteMark(runtime_tensor))
                for own_tensor, runtime_tensor in zip(own, runtime, strict=True)
            ]
        with torch.no_grad():
            for own_tensor, runtime_tensor, mark in self._pairs:
                # Once written, a tensor stays written to its mark: reset at every use.
                if not mark.unwritten(runtime_tensor):
                    runtime_tensor.copy_(own_tensor)
        memo = {}
        for (own, alias), (_, runtime, _) in zip(self._aliases, self._pairs, strict=True):
            memo[id(own)] = memo[id(alias)] = runtime
        return _copy(program, memo)


def program_tensors(program: torch.export.ExportedProgram) -> list[torch.Tensor]:
    """The program's parameters, buffers and tensor constants, each once."""
    values = [*program.state_dict.values(), *program.constants.values()]
    unique = {id(value): value for value in values if isinstance(value, torch.Tensor)}
    return list(unique.values())


def _alias(tensor: torch.Tensor) -> torch.Tensor:
    """A new tensor object over ``tensor``'s storage, a Parameter if it is one."""
    alias = tensor.detach()
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(alias, requires_grad=tensor.requires_grad)
    return alias


def _copy(program: P, tensors: dict[int, torch.Tensor]) -> P:
    memo: dict[int, object] = dict(tensors)
    try:
        with quiet_torch_internals():
            copied = copy.deepcopy(program, memo)
    except RecursionError as exc:
        # Every way of running the program starts from such a copy: each one that
        # raises says what is too deep, not only torch's "maximum recursion depth".
        raise RecursionError(
            too_deep("copying the program (copy.deepcopy)", program_nesting(program))
        ) from exc
    if isinstance(program, torch.export.ExportedProgram):
        keep_node_names(program.graph_module, copied.graph_module)  # type: ignore[attr-defined]
    return copied
