"""Frozen values: state copies share a tensor only where the bits are the same."""

from __future__ import annotations

import torch

from pytest_exportcheck.capture.record import Resettable
from pytest_exportcheck.model.frozen_values import FrozenValues, bit_identical
from pytest_exportcheck.model.isolation import snapshot_state

# --- bit_identical --------------------------------------------------------------------------


def test_bit_identical_tells_negative_zero_from_zero() -> None:
    # torch.equal calls them equal; a shared copy must not turn one into the other.
    assert torch.equal(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert not bit_identical(torch.tensor([0.0]), torch.tensor([-0.0]))


def test_bit_identical_matches_a_nan_with_the_same_nan() -> None:
    nan = torch.tensor([float("nan"), 1.0])
    assert bit_identical(nan, nan.clone())
    assert not bit_identical(nan, torch.tensor([1.0, 1.0]))


def test_bit_identical_needs_the_same_dtype_shape_and_strides() -> None:
    square = torch.arange(4.0).reshape(2, 2)
    assert not bit_identical(square, square.double())
    assert not bit_identical(square, square.reshape(4))
    assert not bit_identical(square.t(), square.t().contiguous())


def test_bit_identical_compares_integers_and_booleans_by_value() -> None:
    assert bit_identical(torch.tensor([1, 2]), torch.tensor([1, 2]))
    assert not bit_identical(torch.tensor([True]), torch.tensor([False]))


def test_tensors_without_values_are_never_identical() -> None:
    meta = torch.empty(2, device="meta")
    assert not bit_identical(meta, meta)


# --- FrozenValues -------------------------------------------------------------------------


def test_an_unchanged_value_is_the_held_tensor_itself() -> None:
    built = torch.nn.Linear(4, 4)
    live = torch.nn.Linear(4, 4)
    live.load_state_dict(built.state_dict())
    frozen = FrozenValues(dict(built.named_parameters()))

    copied = frozen.copy_of("weight", live.weight)

    assert copied.untyped_storage().data_ptr() == built.weight.untyped_storage().data_ptr()
    assert not copied.requires_grad  # a read-only copy, not the parameter


def test_a_changed_value_is_a_clone_that_later_writes_do_not_reach() -> None:
    built = torch.zeros(3)
    frozen = FrozenValues({"count": built})
    live = torch.ones(3)

    copied = frozen.copy_of("count", live)
    live.add_(1)

    assert copied.untyped_storage().data_ptr() != live.untyped_storage().data_ptr()
    assert torch.equal(copied, torch.ones(3))
    assert torch.equal(built, torch.zeros(3))


def test_copy_of_holds_nothing_new_and_keep_does() -> None:
    frozen = FrozenValues({})
    first = frozen.copy_of("x", torch.ones(2))
    assert frozen.copy_of("x", torch.ones(2)) is not first  # a step's copy lives as long as it
    kept = frozen.keep("x", torch.ones(2))
    assert frozen.copy_of("x", torch.ones(2)) is kept


def test_a_value_is_shared_under_its_own_name_only() -> None:
    frozen = FrozenValues({"a": torch.ones(2)})
    assert frozen.copy_of("b", torch.ones(2)) is not frozen.copy_of("a", torch.ones(2))


def test_snapshots_of_unchanged_weights_share_the_built_values_and_changed_state_is_copied() -> (
    None
):
    built = torch.nn.BatchNorm1d(3)
    live = torch.nn.BatchNorm1d(3)
    live.load_state_dict(built.state_dict())
    frozen = FrozenValues(dict(built.state_dict(keep_vars=True)))
    live(torch.randn(4, 3))  # training mode: the running statistics move, the weights do not

    state = snapshot_state(live, frozen)

    assert state["weight"].data_ptr() == built.weight.data_ptr()
    assert state["running_mean"].data_ptr() != live.running_mean.data_ptr()
    assert state["running_mean"].data_ptr() != built.running_mean.data_ptr()
    assert torch.equal(state["running_mean"], live.running_mean)


def test_a_data_write_the_version_counter_misses_is_still_seen() -> None:
    # .data writes do not bump _version: only the values tell.
    built = torch.nn.Linear(2, 2)
    live = torch.nn.Linear(2, 2)
    live.load_state_dict(built.state_dict())
    frozen = FrozenValues(dict(built.named_parameters()))
    version = live.weight._version
    live.weight.data.add_(1)
    assert live.weight._version == version

    state = snapshot_state(live, frozen)

    assert state["weight"].data_ptr() != built.weight.data_ptr()
    assert torch.equal(state["weight"], live.weight)


# --- Resettable -------------------------------------------------------------------------------


def test_a_reset_puts_back_values_held_frozen_and_keeps_no_copy_of_its_own() -> None:
    built = torch.nn.BatchNorm1d(3)
    live = torch.nn.BatchNorm1d(3)
    live.load_state_dict(built.state_dict())
    frozen = FrozenValues(dict(built.state_dict(keep_vars=True)))
    resettable = Resettable(live, frozen=frozen)
    before = {name: value.clone() for name, value in live.state_dict().items()}

    live(torch.randn(4, 3))
    with torch.no_grad():
        live.weight.mul_(2)
    resettable.reset()

    for name, value in live.state_dict().items():
        assert torch.equal(value, before[name]), name
    pristine = {id(slot[2]): slot[3] for slot in resettable.slots}
    assert pristine[id(live.weight)].data_ptr() == built.weight.data_ptr()
