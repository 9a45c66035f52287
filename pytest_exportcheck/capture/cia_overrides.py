"""The CompositeImplicitAutograd overrides of ``run_decompositions()``: installed by torch
once, then put in place again from a record of what torch installed.

Every decomposition retraces the program inside torch's
``_override_composite_implicit_decomp(cia_to_decomp)``::

    ep.run_decompositions()
      _decompose_and_get_gm_with_new_signature_constants(ep, cia_to_decomp=...)
        with _override_composite_implicit_decomp(cia_to_decomp):
            for op in cia_to_decomp:          # ~510 CompositeImplicitAutograd ops on 2.13
                op.py_impl(<12 Autograd keys>)(autograd_not_implemented(op))
                op.py_impl(CompositeImplicitAutograd)(cia_to_decomp[op])
                register_op_impl(op)(<op's own CIA kernel, run under fake tensors>)
                op.py_impl(<9 backend keys>)(<op's own CIA kernel>)
            aot_export_module(...)            # the trace itself
        # on exit: each op's py_kernels put back, its fake-tensor rule deregistered

That is about 11,000 ``py_impl`` calls installing the same kernels for every
program: measured on torch 2.13 (CPU), 110-150 ms of each decomposition, more
than the trace of a small model; most of it builds ``py_impl``'s
``Callable[...]`` annotations anew on every call.

What the block installs depends on its argument and on each op's Python kernels
and fake-tensor rule before it, and on nothing else. So the first time, torch's
own function runs and what it installed is recorded, and checked to be no more
than that (no other op's rule touched; torch's exit leaving each op's kernels as
it found them and no fake-tensor rule, as the replay's exit does); where the
record cannot be trusted on this torch, torch's function runs every time.
Later calls whose argument is the same (the same ops mapped to the same
callables, or to callables that do the same: a fresh ``functools.partial`` of
one function with the same arguments) and whose ops are in the same state put
the recorded kernels in place and take them away on exit as torch does. The
decomposed programs are the same (``tests/unit/test_unit_decomposition_reuse.py``,
on every tox env).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_exportcheck.capture.torch_substitutes import substituted

_CALLER = "torch.export.exported_program"  # defines it and calls it (2.6-2.14)
_NAME = "_override_composite_implicit_decomp"
_ABSENT = object()  # an op without a fake-tensor rule of its own


@dataclass(frozen=True)
class OpState:
    """What the block reads and writes of one op: its Python kernels and fake-tensor rule."""

    kernels: dict[Any, Any]
    fake_rule: object

    def is_current(self, op: Any, fake_rules: dict[Any, Any]) -> bool:
        """``op`` holds these very kernels (by object, in any order) and this rule now."""
        kernels = op.py_kernels
        if len(kernels) != len(self.kernels) or fake_rules.get(op, _ABSENT) is not self.fake_rule:
            return False
        return all(kernels.get(key, _ABSENT) is value for key, value in self.kernels.items())


def op_state(op: Any, fake_rules: dict[Any, Any]) -> OpState:
    return OpState(dict(op.py_kernels), fake_rules.get(op, _ABSENT))


@dataclass(frozen=True)
class Record:
    """One call of torch's function: its argument, the ops before, what it installed."""

    argument: tuple[tuple[Any, Callable[..., Any]], ...]
    before: dict[Any, OpState]
    installed: dict[Any, OpState]

    def replays(self, argument: dict[Any, Callable[..., Any]], fake_rules: dict) -> bool:
        """Whether torch, given ``argument`` now, would install exactly what it did then."""
        if len(argument) != len(self.argument):
            return False
        for (op, decomposition), (recorded_op, recorded) in zip(
            argument.items(), self.argument, strict=True
        ):
            if op is not recorded_op or not same_callable(decomposition, recorded):
                return False
            if not self.before[op].is_current(op, fake_rules):
                return False
        return True


_record: Record | None = None
_untrusted = False  # this torch's function did more than the record can put back
_active = False  # a block is installed now: one inside it runs torch's own function


def same_callable(first: object, second: object) -> bool:
    """Whether two callables do the same thing when called: the same object, partials of
    such callables with the very same arguments, or functions made by one ``def`` (same
    code, globals, defaults, closure contents and attributes)."""
    if first is second:
        return True
    if isinstance(first, functools.partial) and isinstance(second, functools.partial):
        return (
            type(first) is type(second)
            and same_callable(first.func, second.func)
            and _identical(first.args, second.args)
            and _identical_mapping(first.keywords, second.keywords)
        )
    if isinstance(first, types.FunctionType) and type(second) is types.FunctionType:
        return (
            first.__code__ is second.__code__
            and first.__globals__ is second.__globals__
            and _identical(first.__defaults__ or (), second.__defaults__ or ())
            and _identical_mapping(first.__kwdefaults__ or {}, second.__kwdefaults__ or {})
            and _identical_mapping(first.__dict__, second.__dict__)
            and _identical(_cells(first), _cells(second))
        )
    return False


def _cells(function: types.FunctionType) -> tuple[object, ...]:
    try:
        return tuple(cell.cell_contents for cell in function.__closure__ or ())
    except ValueError:  # an empty cell: a name the function reads before it is bound
        return (object(),)  # never identical to another


def _identical(first: tuple[object, ...], second: tuple[object, ...]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def _identical_mapping(first: dict[str, object], second: dict[str, object]) -> bool:
    return first.keys() == second.keys() and all(first[key] is second[key] for key in first)


def replaying_cia_overrides() -> AbstractContextManager[None]:
    """Within the block, torch's decompositions install their CIA overrides from a record."""
    return substituted((_CALLER,), _NAME, _replaying)


def _replaying(original: Callable[..., Any]) -> Callable[..., Any]:
    @contextmanager
    def override(cia_ops_to_callable: dict[Any, Any], *args: Any, **kwargs: Any) -> Iterator[None]:
        global _active
        from torch._subclasses import fake_impls

        rules = fake_impls.op_implementations_dict
        # Another signature (2.6's safe=False for the aten.to variants), a block
        # inside a block, or a torch whose function the record cannot stand for.
        if args or kwargs or _active or _untrusted:
            with original(cia_ops_to_callable, *args, **kwargs):
                yield
            return
        _active = True
        try:
            if _record is not None and _record.replays(cia_ops_to_callable, rules):
                with _installed(_record, fake_impls):
                    yield
            else:
                with _recording(original, cia_ops_to_callable, fake_impls):
                    yield
        finally:
            _active = False

    return override


@contextmanager
def _installed(record: Record, fake_impls: Any) -> Iterator[None]:
    """The recorded kernels and rules in place; on exit, each op put back as torch does."""
    saved = {op: dict(op.py_kernels) for op in record.installed}
    try:
        for op, state in record.installed.items():
            op.py_kernels.clear()
            op.py_kernels.update(state.kernels)
            op._dispatch_cache.clear()
            if state.fake_rule is not record.before[op].fake_rule:
                # torch's own registration: since 2.14 it tells the C++ fake dispatcher too
                fake_impls.register_op_impl(op)(state.fake_rule)
        yield
    finally:
        for op in record.installed:  # torch's exit, with its own deregistration
            op.py_kernels.clear()
            op.py_kernels.update(saved[op])
            op._dispatch_cache.clear()
            fake_impls._deregister_op_impl(op)


@contextmanager
def _recording(
    original: Callable[..., Any], argument: dict[Any, Any], fake_impls: Any
) -> Iterator[None]:
    """torch's own function, watched: what it installed becomes the record if it did
    nothing else, and its exit left each op as ours will."""
    global _record, _untrusted
    rules, checks = fake_impls.op_implementations_dict, fake_impls.op_implementations_checks
    ops = list(argument)
    before = {op: op_state(op, rules) for op in ops}
    tables = {op: (dict(op.python_key_table), dict(op.functorch_table)) for op in ops}
    others = {op: rule for op, rule in rules.items() if op not in before}
    checks_before = list(checks)
    with original(argument):
        installed = {op: op_state(op, rules) for op in ops}
        trusted = (
            {op: rule for op, rule in rules.items() if op not in before}.keys() == others.keys()
            and all(rules[op] is rule for op, rule in others.items())
            and _identical(tuple(checks), tuple(checks_before))
            and all((op.python_key_table, op.functorch_table) == tables[op] for op in ops)
        )
        yield
    after_exit = [OpState(before[op].kernels, _ABSENT).is_current(op, rules) for op in ops]
    if trusted and all(after_exit):
        _record = Record(tuple(argument.items()), before, installed)
    else:
        _untrusted = True
