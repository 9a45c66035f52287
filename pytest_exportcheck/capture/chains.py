"""The programs users ship from an export capture, as chains of steps (``programs:``).

Each chain starts from the captured ``ExportedProgram`` and applies its steps in order:

- ``decompose``: ``ep.run_decompositions()``;
- ``save``: ``torch.export.save``, then ``torch.export.load``;
- ``retrace``: ``torch.export.export(ep.module(), args, kwargs)`` with the case's dims
  (non-strict), as PyTorch's ``test_retraceability.py`` re-runs every export test;
- ``move:<device>``: ``move_to_device_pass``; the program is then called with the
  inputs moved there (and inputs it mutates copied back), its outputs compared here;

then ends in ``module`` (``ep.module()``, also where no end is named) or ``unflatten``
(``torch.export.unflatten``). The four default chains keep the names the checks have
always given them (``ep.module()``, ``unflatten(ep)``, ``decomposed``, ``saved and
loaded``); any other is named by its spelling: ``decompose>save``. Parity, the
stepped mutation runs and shapes run every chain (``ProgramRecord.runnables``).
A chain whose device this machine lacks is not run, and the checks say so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.decomposition import decomposed
from pytest_exportcheck.capture.record import Runnable
from pytest_exportcheck.containment.failures import Note
from pytest_exportcheck.model.program_files import saved_and_loaded
from pytest_exportcheck.spec.case import CHAIN_ENDS, DEFAULT_PROGRAM_LABELS
from pytest_exportcheck.spec.compat import moved_unavailable

if TYPE_CHECKING:
    from pytest_exportcheck.capture.export import ProgramRecord


@dataclass(frozen=True)
class Chain:
    spelling: str
    steps: tuple[str, ...]  # program → program
    end: str  # "module" or "unflatten"

    @classmethod
    def parse(cls, spelling: str) -> Chain:
        *steps, last = spelling.split(">")
        if last in CHAIN_ENDS:
            return cls(spelling, tuple(steps), last)
        return cls(spelling, (*steps, last), "module")

    @property
    def label(self) -> str:
        return DEFAULT_PROGRAM_LABELS.get(self.spelling, self.spelling)

    @property
    def devices(self) -> list[str]:
        return [step.partition(":")[2] for step in self.steps if step.startswith("move:")]


def chain_runnables(record: ProgramRecord) -> list[Runnable]:
    """One runnable per chain the case names that can run here (see :func:`not_run`)."""
    runnables = []
    for spelling in record.subject.case.programs:
        if spelling in DEFAULT_PROGRAM_LABELS:  # made as they always were (and reused by others)
            runnables.append(_default(record, spelling))
            continue
        chain = Chain.parse(spelling)
        if _unavailable(chain) is None:
            make = _maker(record, chain)
            runnables.append(Runnable(chain.label, lambda m=make, c=chain: _cached(record, c, m)))
    return runnables


def not_run(record: ProgramRecord) -> list[str]:
    """A note per chain the case names that cannot run here, and why."""
    notes = []
    for spelling in record.subject.case.programs:
        why = None if spelling in DEFAULT_PROGRAM_LABELS else _unavailable(Chain.parse(spelling))
        if why is not None:
            notes.append(Note(f"program {spelling} not run: {why}"))
    return notes


def _default(record: ProgramRecord, spelling: str) -> Runnable:
    make = {
        "module": record.fresh_module,
        "unflatten": record.fresh_unflattened,
        "decompose": record.fresh_decomposed_module,
        "save": record.fresh_loaded,
    }[spelling]
    # The decomposed program is compared in parity only (its mutations are what the
    # mutation check reads from it).
    return Runnable(
        DEFAULT_PROGRAM_LABELS[spelling], lambda: _pair(make()), spelling != "decompose"
    )


def _pair(module: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    return module, module


def _unavailable(chain: Chain) -> str | None:
    from pytest_exportcheck.model.devices import unavailable_reason

    if chain.devices and (why := moved_unavailable()) is not None:
        return why
    for device in chain.devices:
        why = unavailable_reason(device)
        if why is not None:
            return why
    return None


def _cached(
    record: ProgramRecord, chain: Chain, make: Callable[[], tuple[Any, torch.nn.Module]]
) -> tuple[Any, torch.nn.Module]:
    return record._cached_run(f"chain {chain.spelling}", make)


def _maker(record: ProgramRecord, chain: Chain) -> Callable[[], tuple[Any, torch.nn.Module]]:
    def make() -> tuple[Any, torch.nn.Module]:
        # Every step reads a copy over the capture's own tensors (they never write
        # them); the end runs on the shared runtime tensors (program_copies.py).
        program = record.copies.reading(record.program)
        device = None
        for step in chain.steps:
            program = _step(record, program, step)
            device = step.partition(":")[2] if step.startswith("move:") else device
        program = record.copies.runnable(program)
        module = program.module() if chain.end == "module" else torch.export.unflatten(program)
        return (module if device is None else _called_on(module, device)), module

    return make


def _step(record: ProgramRecord, program: Any, step: str) -> Any:
    from pytest_exportcheck.model.isolation import quiet_torch_internals

    with quiet_torch_internals():
        if step == "decompose":
            return decomposed(program)
        if step == "save":
            return saved_and_loaded(program)
        if step == "retrace":
            return _retraced(record, program)
        from pytest_exportcheck.spec.compat import move_to_device_pass

        move = move_to_device_pass()
        assert move is not None  # not_run() kept this chain out otherwise
        return move(program, step.partition(":")[2])


def retraced_program(record: ProgramRecord) -> Any:
    """The capture retraced (``retrace``), from a reading copy of its program."""
    from pytest_exportcheck.model.isolation import quiet_torch_internals

    with quiet_torch_internals():
        return _retraced(record, record.copies.reading(record.program))


def _retraced(record: ProgramRecord, program: Any) -> Any:
    from pytest_exportcheck.capture.dynamic_shapes import declared_dynamic_shapes

    module = program.module()
    args, kwargs = record.subject.inputs_copy()
    dynamic = declared_dynamic_shapes(record.subject, record.captured_model, args, kwargs)
    return torch.export.export(module, args, kwargs, strict=False, dynamic_shapes=dynamic)


def _called_on(module: torch.nn.Module, device: str) -> Callable[..., Any]:
    """``module`` called with the inputs moved to ``device``; a tensor input it mutates
    there is copied back into the caller's tensor, as a call in place would leave it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        inputs = (args, kwargs)
        moved = pytree.tree_map(_to(device), inputs)
        output = module(*moved[0], **moved[1])
        with torch.no_grad():
            for mine, theirs in zip(
                pytree.tree_leaves(inputs), pytree.tree_leaves(moved), strict=True
            ):
                if isinstance(mine, torch.Tensor) and mine is not theirs:
                    mine.copy_(theirs)
        return output

    return call


def _to(device: str) -> Callable[[Any], Any]:
    return lambda value: value.to(device) if isinstance(value, torch.Tensor) else value
