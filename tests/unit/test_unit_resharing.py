"""Sharing put back after a read through data_ptr(): only for bytes nobody wrote, and views
of one storage stay views of one storage."""

from __future__ import annotations

import torch
from torch import nn

from pytest_exportcheck.model.copy_on_write import is_shared
from pytest_exportcheck.model.isolation import held_tensors, private_copy
from pytest_exportcheck.model.resharing import ShareKeeper


class Viewed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(64, 64))
        self.register_buffer("row", self.weight.detach()[0])  # a view of the weight's storage
        self.register_buffer("stats", torch.zeros(64))


def unshared(model: nn.Module) -> None:
    """What strict export does to the weights it traces: reads their pointers."""
    for tensor in held_tensors(model):
        tensor.data_ptr()


def test_bytes_read_through_data_ptr_are_shared_again_and_views_stay_views() -> None:
    model = Viewed()
    copy = private_copy(model)
    keeper = ShareKeeper(held_tensors(copy))
    unshared(copy)
    assert not any(is_shared(tensor) for tensor in held_tensors(copy))

    assert keeper.put_back() == 64 * 64 * 4 + 64 * 4  # the weight's storage, the stats'
    assert all(is_shared(tensor) for tensor in held_tensors(copy))
    assert type(copy.weight) is nn.Parameter and copy.weight.requires_grad
    assert torch.equal(copy.weight, model.weight) and torch.equal(copy.row, model.row)
    with torch.no_grad():
        copy.weight[0].fill_(3.0)  # the view sees a write through the weight, the model does not
    assert torch.equal(copy.row, torch.full((64,), 3.0))
    assert not torch.equal(model.weight[0], copy.weight[0])


def test_a_tensor_written_after_the_keeper_is_left_with_its_own_bytes() -> None:
    copy = private_copy(Viewed())
    keeper = ShareKeeper(held_tensors(copy))
    unshared(copy)
    with torch.no_grad():
        copy.stats.add_(1)  # through torch: its version counter moves
        copy.weight.data[1, 1] = 5.0  # through .data: the counter does not, the bytes differ
    assert keeper.put_back() == 0
    assert torch.equal(copy.stats, torch.ones(64)) and copy.weight[1, 1] == 5.0
    assert not is_shared(copy.stats) and not is_shared(copy.weight)


def test_tensors_still_sharing_are_left_as_they_are() -> None:
    copy = private_copy(Viewed())
    keeper = ShareKeeper(held_tensors(copy))
    storage = copy.weight.untyped_storage()._cdata
    assert keeper.put_back() == 0
    assert copy.weight.untyped_storage()._cdata == storage
