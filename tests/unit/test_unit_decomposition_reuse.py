"""What ``run_decompositions()`` derives alike for every program, derived once: torch's
table of CompositeImplicitAutograd ops (``operator_table.py``) and the kernels it overrides
them with (``cia_overrides.py``). The reuse gives the programs torch gives, leaves torch's
operators as torch leaves them, sees an operator registered later, and runs torch's own
function wherever a record cannot stand for it."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
import torch.export.exported_program as exported_program
from torch import nn
from torch._subclasses import fake_impls

from pytest_exportcheck.capture import cia_overrides, operator_table
from pytest_exportcheck.capture.cia_overrides import replaying_cia_overrides, same_callable
from pytest_exportcheck.capture.operator_table import reusing_cia_ops

ORIGINAL = exported_program._override_composite_implicit_decomp


class Block(nn.Module):
    """Ops that decompose (LayerNorm, GELU, dropout, linear) beside a buffer mutation."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 8)
        self.norm = nn.LayerNorm(8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return nn.functional.dropout(nn.functional.gelu(self.norm(self.lin(x))), 0.0)


class Attention(nn.Module):
    """scaled_dot_product_attention: a CIA op whose kernel branches on the device."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class Upsample(nn.Module):
    """upsample_bilinear2d.vec, a CIA op the default table preserves; a dtype conversion."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = nn.functional.interpolate(x, scale_factor=2, mode="bilinear")
        return up.to(torch.float64).sum(dim=1)


class TrainingNorm(nn.Module):
    """BatchNorm in train mode: running statistics mutated."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x).relu()


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "block": lambda: (Block(), (torch.randn(2, 4),)),
    "attention": lambda: (Attention(), tuple(torch.randn(1, 2, 3, 4) for _ in range(3))),
    "upsample": lambda: (Upsample(), (torch.randn(1, 2, 3, 3),)),
    "training_norm": lambda: (TrainingNorm().train(), (torch.randn(3, 4),)),
}


def decomposed(name: str, decomp_table: dict[Any, Any] | None = None) -> tuple[str, str]:
    model, args = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, args).run_decompositions(decomp_table)
    return program.graph_module.code, str(program.graph_signature)


@pytest.fixture
def no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not recorded torch's overrides yet."""
    monkeypatch.setattr(cia_overrides, "_record", None)
    monkeypatch.setattr(cia_overrides, "_untrusted", False)


@pytest.fixture
def torch_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often torch's own function is entered with a decomposition's table (through the
    replaying block or not). torch 2.6 and 2.7 also enter it with ``safe=False`` for the
    ``aten.to`` variants, which always runs torch's function: not counted."""
    calls: list[int] = []
    original = exported_program._override_composite_implicit_decomp

    def counted(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs:
            calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(exported_program, "_override_composite_implicit_decomp", counted)
    return calls


@pytest.mark.parametrize("name", list(MODELS))
def test_replayed_overrides_give_torchs_decomposed_program(
    name: str, no_record: None, torch_calls: list[int]
) -> None:
    plain = decomposed(name)
    torch_calls.clear()
    with reusing_cia_ops(), replaying_cia_overrides():
        replayed = [decomposed(name) for _ in range(3)]
    assert replayed == [plain] * 3
    # torch's function ran to record (again after the first call, whose exit dropped
    # fake-tensor rules torch had registered at import); the last call was replayed
    assert len(torch_calls) < 3
    assert cia_overrides._record is not None


def test_a_table_that_preserves_an_op_is_not_given_the_default_tables_overrides(
    no_record: None,
) -> None:
    keep_linear = torch.export.default_decompositions()
    del keep_linear[torch.ops.aten.linear.default]
    plain = decomposed("block", keep_linear)
    with reusing_cia_ops(), replaying_cia_overrides():
        default_first = [decomposed("block") for _ in range(2)]
        kept = decomposed("block", keep_linear)
    assert "torch.ops.aten.linear.default" in kept[0]
    assert kept == plain
    assert default_first[1] == decomposed("block")


def operator_state() -> dict[Any, tuple[dict[Any, Any], object]]:
    ops = exported_program._collect_all_valid_cia_ops()
    rules = fake_impls.op_implementations_dict
    return {op: (dict(op.py_kernels), rules.get(op)) for op in ops}


def test_operators_are_left_as_torchs_own_function_leaves_them(no_record: None) -> None:
    decomposed("block")
    decomposed("block")  # the first exit drops rules registered at import; now settled
    after_torch = operator_state()
    with reusing_cia_ops(), replaying_cia_overrides():
        for _ in range(3):
            decomposed("block")
    assert cia_overrides._record is not None
    assert operator_state() == after_torch


UNRELATED = object()  # a key no op of torch's has


@contextmanager
def doing_more(argument: dict[Any, Any]) -> Iterator[None]:
    """A stand-in for torch's function that also registers a fake-tensor rule outside its
    argument: more than a record could put back."""
    with ORIGINAL(argument):
        fake_impls.op_implementations_dict[UNRELATED] = print
        try:
            yield
        finally:
            del fake_impls.op_implementations_dict[UNRELATED]


def test_a_torch_function_doing_more_than_the_record_stands_for_runs_every_time(
    no_record: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered: list[int] = []

    def torch_function(argument: dict[Any, Any]) -> Any:
        entered.append(1)
        return doing_more(argument)

    monkeypatch.setattr(exported_program, "_override_composite_implicit_decomp", torch_function)
    argument = {torch.ops.aten.gelu.default: torch.nn.functional.gelu}
    with replaying_cia_overrides():
        for _ in range(3):
            with exported_program._override_composite_implicit_decomp(argument):
                pass
    assert entered == [1, 1, 1]
    assert cia_overrides._untrusted
    assert cia_overrides._record is None


@pytest.mark.parametrize(
    "reuse, name",
    [
        (replaying_cia_overrides, "_override_composite_implicit_decomp"),
        (reusing_cia_ops, "_collect_all_valid_cia_ops"),
    ],
)
def test_torch_is_given_back_its_own_function(reuse: Callable[[], Any], name: str) -> None:
    original = getattr(exported_program, name)
    with reuse():
        assert getattr(exported_program, name) is not original
        with reuse():  # nested: not wrapped twice
            inner = getattr(exported_program, name)
        assert getattr(exported_program, name) is inner
    assert getattr(exported_program, name) is original


def test_the_reused_table_alone_gives_the_same_decomposed_program() -> None:
    plain = decomposed("block")
    with reusing_cia_ops():
        assert [decomposed("block"), decomposed("block")] == [plain, plain]


def test_an_operator_registered_later_is_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operator_table, "_cached", None)
    with reusing_cia_ops():
        before = {op.name() for op in exported_program._collect_all_valid_cia_ops()}
        library = torch.library.Library("exportcheck_table_test", "DEF")
        library.define("double(Tensor x) -> Tensor")
        library.impl("double", lambda x: x * 2, "CompositeImplicitAutograd")
        after = {op.name() for op in exported_program._collect_all_valid_cia_ops()}
    assert "exportcheck_table_test::double" not in before
    assert "exportcheck_table_test::double" in after


def _made_by_one_def(kernel: object) -> Callable[..., Any]:
    def decompose(*args: Any, **kwargs: Any) -> Any:
        return kernel

    return decompose


def test_partials_of_functions_from_one_def_with_the_same_arguments_do_the_same() -> None:
    op = torch.ops.aten.gelu.default
    shared = _made_by_one_def(None)
    assert same_callable(functools.partial(shared, kernel=op), functools.partial(shared, kernel=op))
    assert same_callable(_made_by_one_def(op), _made_by_one_def(op))


@pytest.mark.parametrize(
    "first, second",
    [
        (functools.partial(print, 1), functools.partial(print, 2)),
        (functools.partial(print, sep=1), functools.partial(print, end=1)),
        (
            _made_by_one_def(torch.ops.aten.gelu.default),
            _made_by_one_def(torch.ops.aten.mish.default),
        ),
        (functools.partial(print), print),
        # Two defs of the same text, on two lines: two code objects in every Python
        # (on the GPU machine, Python 3.12 gave two such lambdas on one line one code).
        (
            lambda: 1,
            lambda: 1,
        ),
    ],
    ids=["args", "keywords", "closure", "partial-vs-function", "two-defs"],
)
def test_callables_that_may_differ_are_not_the_same(first: Any, second: Any) -> None:
    assert not same_callable(first, second)
