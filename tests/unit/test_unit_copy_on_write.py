"""Private copies copied on write: each copy behaves as a clone (writes stay its own, views
stay views), yet holds no bytes of its own until written; and what was not written is
left alone by a reset."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_exportcheck.capture.record import Resettable
from pytest_exportcheck.checks.signature import tensor_identity
from pytest_exportcheck.model.copy_on_write import WriteMark, is_shared, lazily_copyable, same_bytes
from pytest_exportcheck.model.frozen_values import bit_identical
from pytest_exportcheck.model.isolation import private_copy

MIB = 1 << 20


class Viewed(nn.Module):
    """A parameter, a buffer, and a buffer that is a view of the parameter's storage."""

    def __init__(self, size: int = 4) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(size, size))
        self.register_buffer("stats", torch.zeros(size))
        self.register_buffer("row", self.weight.detach()[0])


def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_a_copy_is_a_clone_to_every_reader_and_writer() -> None:
    model = Viewed()
    copy = private_copy(model)
    assert type(copy.weight) is nn.Parameter and copy.weight.requires_grad
    assert torch.equal(copy.weight, model.weight) and copy.weight is not model.weight
    assert is_shared(copy.weight) and is_shared(model.weight)  # no bytes of its own yet
    with torch.no_grad():
        copy.weight[0].fill_(7.0)  # written through a view: the copy's view sees it
        copy.stats.add_(1)
    assert torch.equal(copy.row, torch.full((4,), 7.0))
    assert not torch.equal(model.weight[0], copy.weight[0])
    assert torch.equal(model.stats, torch.zeros(4)) and torch.equal(model.row, model.weight[0])
    with torch.no_grad():
        model.weight.data.mul_(2)  # the original written through .data: the copy keeps its own
    assert torch.equal(copy.row, torch.full((4,), 7.0))


def test_a_copy_of_a_big_model_costs_no_memory_until_written() -> None:
    model = nn.Linear(4096, 4096)  # 64 MiB of weight
    before = resident()
    copies = [private_copy(model) for _ in range(4)]
    assert resident() - before < 32 * MIB  # four clones would be 256 MiB
    with torch.no_grad():
        copies[0].weight.add_(1)  # the written one gets its bytes
    assert resident() - before > 48 * MIB
    assert torch.equal(copies[1].weight, model.weight)


def test_tensors_that_cannot_be_lazy_are_cloned_as_before() -> None:
    assert not lazily_copyable(torch.ones(2, device="meta"))
    assert not lazily_copyable(torch.ones(2).to_sparse())
    assert not lazily_copyable(torch.ones(2, dtype=torch.complex64).conj())
    model = nn.Module()
    model.register_buffer("sparse", torch.eye(3).to_sparse())
    copy = private_copy(model)
    assert torch.equal(copy.sparse.to_dense(), torch.eye(3))


def test_a_write_mark_sees_every_kind_of_write_and_no_read() -> None:
    original = torch.randn(8)
    for write in (
        lambda t: t.add_(1),
        lambda t: t.data.mul_(3),  # bypasses the version counter
        lambda t: t.copy_(torch.zeros(8)),
    ):
        copy = private_copy([original])[0]
        mark = WriteMark(copy)
        _ = (copy + 1, copy.sum(), torch.equal(copy, original), tensor_identity(copy))
        assert mark.unwritten(copy)  # reads, and telling tensors apart, write nothing
        with torch.no_grad():
            write(copy)
        assert not mark.unwritten(copy)
    assert not WriteMark(torch.randn(3)).unwritten(torch.randn(3))  # never lazy: written


def test_a_reset_puts_back_what_was_written_and_leaves_the_rest_shared() -> None:
    model = Viewed(64)
    runtime = private_copy(model)
    resettable = Resettable(runtime)
    with torch.no_grad():
        runtime.stats.add_(5)
    resettable.reset()
    assert torch.equal(runtime.stats, model.stats)
    assert is_shared(runtime.weight)  # unwritten: not rewritten, so still no bytes of its own
    runtime.stats = torch.ones(64)  # rebound: the object is put back too
    resettable.reset()
    assert torch.equal(runtime.stats, torch.zeros(64))


def test_shared_unwritten_bytes_are_known_the_same_without_reading_them() -> None:
    model = Viewed()
    copy = private_copy(model)
    if not hasattr(copy.weight, "const_data_ptr"):  # torch 2.9: values are compared instead
        assert not same_bytes(copy.weight, model.weight)
        return
    assert same_bytes(copy.weight, model.weight)
    assert same_bytes(copy.row, model.weight[0])  # a view lines up with the same view
    assert not same_bytes(copy.weight[1:], model.weight[:-1])  # same storage, other place
    assert is_shared(copy.weight)  # asking copied nothing
    with torch.no_grad():
        copy.weight.add_(0.0)  # written: its own bytes now, the same values
    assert not same_bytes(copy.weight, model.weight)
    assert bit_identical(copy.weight, model.weight)  # which the value comparison still finds


@pytest.mark.skipif(
    not hasattr(torch.Tensor, "const_data_ptr"),
    reason="this torch has no Tensor.const_data_ptr (2.9.1): a save reads a reading copy",
)
def test_a_borrowed_copy_reads_the_same_bytes_without_unsharing_them() -> None:
    """What torch.export.save is given: tensors over the originals' bytes, views of one
    storage still views of one, and reading their data_ptr() copies nothing."""
    import copy

    from pytest_exportcheck.model.copy_on_write import borrowed_memo

    original = torch.arange(12.0)
    base = torch._lazy_clone(original)  # copy-on-write, as a capture's tensors are
    weight = nn.Parameter(base[:6].view(2, 3))
    tail = base[6:]
    originals = [weight, tail]
    borrowed_weight, borrowed_tail = copy.deepcopy(originals, borrowed_memo(originals))

    assert type(borrowed_weight) is nn.Parameter
    assert torch.equal(borrowed_weight, weight) and torch.equal(borrowed_tail, tail)
    assert borrowed_weight.untyped_storage()._cdata == borrowed_tail.untyped_storage()._cdata
    assert borrowed_tail.data_ptr() == tail.const_data_ptr()  # no copy made for the reader
    assert is_shared(weight) and is_shared(tail)
