"""Program copies: the runnables share one set of runtime tensors, never the program's own;
what only reads the program's tensors leaves them as they were."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from pytest_exportcheck.capture.program_copies import ProgramCopies, program_tensors
from pytest_exportcheck.model.frozen_values import bit_identical


class Stateful(nn.Module):
    """A parameter, running statistics in training mode, a counter, a tensor constant."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)
        self.register_buffer("calls", torch.zeros(()))
        self.register_buffer("scratch", torch.ones(4), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return self.norm(self.lin(x)) * self.scratch


def exported() -> torch.export.ExportedProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(Stateful(), (torch.randn(3, 4),))


def values(program: torch.export.ExportedProgram) -> list[torch.Tensor]:
    return [tensor.clone() for tensor in program_tensors(program)]


def storages(module: nn.Module) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}


def test_runnables_share_runtime_tensors_with_each_other_and_not_with_the_program() -> None:
    program = exported()
    copies = ProgramCopies(program)

    first = copies.runnable(program).module()
    second = copies.runnable(program).module()

    own = {t.untyped_storage().data_ptr() for t in program_tensors(program)}
    assert storages(first) == storages(second)
    assert not storages(first) & own


def test_a_runnable_copy_starts_from_the_programs_values_after_another_ran() -> None:
    program = exported()
    copies = ProgramCopies(program)
    first = copies.runnable(program).module()
    fresh = {name: value.clone() for name, value in first.state_dict().items()}
    first(torch.randn(3, 4))  # moves the running statistics and the counter in place
    assert not torch.equal(first.state_dict()["calls"], fresh["calls"])

    second = copies.runnable(program).module()

    for name, value in second.state_dict().items():
        assert bit_identical(value, fresh[name]), name


def test_running_a_runnable_leaves_the_program_as_exported() -> None:
    program = exported()
    as_exported = values(program)
    module = ProgramCopies(program).runnable(program).module()

    module(torch.randn(3, 4))

    assert all(bit_identical(a, b) for a, b in zip(as_exported, values(program), strict=True))


def test_decomposing_a_reading_copy_leaves_the_programs_tensors_as_they_were() -> None:
    # run_decompositions() traces with fake tensors: it reads the program's tensors and
    # writes none, so it needs no copy of its own (a BatchNorm in training mode and a
    # counter would show a write).
    program = exported()
    as_exported = values(program)
    copies = ProgramCopies(program)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decomposed = copies.reading(program).run_decompositions()

    assert all(bit_identical(a, b) for a, b in zip(as_exported, values(program), strict=True))
    assert set(decomposed.graph_signature.buffers_to_mutate.values()) >= {"calls"}
    own = {t.untyped_storage().data_ptr() for t in program_tensors(program)}
    # the decomposition holds the program's storage (no copy of its weights), through
    # tensor objects of its own
    assert {t.untyped_storage().data_ptr() for t in program_tensors(decomposed)} == own
    assert not {id(t) for t in program_tensors(program)} & {
        id(t) for t in program_tensors(decomposed)
    }


class CacheWrite(nn.Module):
    """A buffer written from a parameter's output: a KV-cache update."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4, bias=False)
        self.register_buffer("cache", torch.zeros(1, 3, 4))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(1, pos, self.lin(x))
        return self.cache.sum(1)


def test_a_strict_program_that_writes_a_buffer_from_a_parameter_decomposes() -> None:
    # torch 2.6 and 2.7 keep, in a strict program's fake mode, the fake each real tensor
    # became while tracing; the cache's came out requiring grad, and a decomposition that
    # met the program's own buffer again refused it as a mutated input requiring grad.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(
            CacheWrite(), (torch.randn(1, 2, 4), torch.tensor([0, 2])), strict=True
        )
        decomposed = ProgramCopies(program).reading(program).run_decompositions()
    assert set(decomposed.graph_signature.buffers_to_mutate.values()) == {"cache"}


def test_a_decomposed_program_runs_on_the_runtime_tensors() -> None:
    program = exported()
    copies = ProgramCopies(program)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decomposed = copies.reading(program).run_decompositions()

    runnable = copies.runnable(decomposed).module()
    plain = copies.runnable(program).module()

    assert storages(runnable) & storages(plain)
    assert not storages(runnable) & {
        t.untyped_storage().data_ptr() for t in program_tensors(program)
    }


class NamedInput(nn.Module):
    """torchvision's lraspp_mobilenet_v3_large names its forward argument ``input``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self.lin(input)


def test_a_copy_keeps_a_placeholder_named_after_a_builtin_and_saves() -> None:
    import io

    from pytest_exportcheck.model.isolation import private_copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(NamedInput(), (torch.randn(2, 4),))
    copies = ProgramCopies(program)

    copied_ways = (copies.reading(program), copies.saving(program), copies.runnable(program))
    for copied in (*copied_ways, private_copy(program)):  # private_copy: a lowering target's
        names = [node.name for node in copied.graph.nodes if node.op == "placeholder"]
        assert names == [spec.arg.name for spec in copied.graph_signature.input_specs]
        assert "input" in names
        torch.export.save(copied, io.BytesIO())  # SpecViolationError for input_1 unfixed


@pytest.mark.skipif(
    not hasattr(torch.Tensor, "const_data_ptr"),
    reason="this torch has no Tensor.const_data_ptr (2.9.1): a save reads a reading copy",
)
def test_saving_a_copy_leaves_the_programs_tensors_sharing_their_bytes() -> None:
    """torch.export.save reads through data_ptr(), which unshares a copy-on-write tensor:
    the saving copy reads borrowed storages instead, over the same bytes, so nothing
    is copied (a lazy copy would have been materialized: VGG-11's 507 MB per save)."""
    import io

    from pytest_exportcheck.model.copy_on_write import is_shared
    from pytest_exportcheck.model.isolation import private_copy

    program = private_copy(exported())  # its tensors share bytes with the export's
    before = values(program)
    assert all(is_shared(tensor) for tensor in program_tensors(program))
    buffer = io.BytesIO()
    saving = ProgramCopies(program).saving(program)
    torch.export.save(saving, buffer)
    assert all(is_shared(tensor) for tensor in program_tensors(program))
    assert [t.const_data_ptr() for t in program_tensors(saving)] == [
        t.const_data_ptr() for t in program_tensors(program)
    ]
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    for tensor, saved, value in zip(
        program_tensors(program), program_tensors(loaded), before, strict=True
    ):
        assert torch.equal(tensor, value) and torch.equal(saved, value)

    torch.export.save(ProgramCopies(program).reading(program), io.BytesIO())
    assert not any(is_shared(tensor) for tensor in program_tensors(program))  # why it exists
