"""Isolation helpers: cloned inputs share nothing, flat inputs have readable paths."""

from collections import namedtuple

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.model.isolation import (
    clone_tree,
    flat_inputs,
    private_copy,
    snapshot_state,
    to_device,
)


def storages(tree):
    found = []

    def visit(value):
        if isinstance(value, torch.Tensor):
            found.append(value.untyped_storage().data_ptr())
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit(tree)
    return found


# --- clone_tree ---------------------------------------------------------------------------------


def test_clone_tree_keeps_an_input_factorys_dynamic_marks():
    # mark_dynamic stores the mark on the tensor object; a plain clone() would drop it
    # and every capture would see a static input.
    marked = torch.randn(8, 4)
    torch._dynamo.mark_dynamic(marked, 0)

    (cloned,) = clone_tree((marked,))
    (moved,) = to_device(clone_tree((marked,)), "meta")

    assert cloned._dynamo_dynamic_indices == {0}
    assert moved._dynamo_dynamic_indices == {0}
    cloned._dynamo_dynamic_indices.add(1)  # each copy's marks are its own
    assert marked._dynamo_dynamic_indices == {0}


def test_clone_tree_keeps_structure_and_values():
    tree = ((torch.arange(3), {"a": [torch.ones(2)]}), {"mask": torch.tensor([True])})

    cloned = clone_tree(tree)

    assert isinstance(cloned, tuple)
    assert isinstance(cloned[0][1]["a"], list)
    assert torch.equal(cloned[0][0], torch.arange(3))
    assert torch.equal(cloned[0][1]["a"][0], torch.ones(2))
    assert torch.equal(cloned[1]["mask"], torch.tensor([True]))


def test_cloned_tensors_share_no_storage_with_the_originals():
    base = torch.arange(6.0)
    tree = ((base, base[2:4], base.view(2, 3)), {"x": torch.zeros(2)})

    cloned = clone_tree(tree)

    assert not set(storages(cloned)) & set(storages(tree))


def test_mutating_a_clone_leaves_the_original_alone():
    original = torch.zeros(3)
    (cloned,) = clone_tree((original,))

    cloned.add_(1)

    assert torch.equal(original, torch.zeros(3))


def test_clone_tree_keeps_requires_grad_and_makes_leaves():
    weight = torch.ones(2, requires_grad=True)
    derived = weight * 2
    plain = torch.ones(2)

    cloned_weight, cloned_derived, cloned_plain = clone_tree([weight, derived, plain])

    assert cloned_weight.requires_grad and cloned_weight.is_leaf
    assert cloned_derived.requires_grad and cloned_derived.is_leaf
    assert not cloned_plain.requires_grad
    assert cloned_weight is not weight


def test_clone_tree_shares_non_tensor_leaves():
    marker = object()

    cloned = clone_tree({"m": marker, "n": 3, "s": "text", "none": None})

    assert cloned["m"] is marker
    assert cloned == {"m": marker, "n": 3, "s": "text", "none": None}


def test_private_copy_of_a_module_shares_no_parameter_storage():
    model = torch.nn.Linear(2, 2)

    copy = private_copy(model)

    assert copy.weight.data_ptr() != model.weight.data_ptr()
    assert torch.equal(copy.weight, model.weight)


def test_snapshot_state_names_tied_parameters_under_every_name():
    model = torch.nn.Module()
    model.a = torch.nn.Linear(2, 2)
    model.b = torch.nn.Linear(2, 2)
    model.b.weight = model.a.weight
    model.register_buffer("steps", torch.zeros(()))

    state = snapshot_state(model)

    assert {"a.weight", "b.weight", "a.bias", "b.bias", "steps"} <= set(state)
    assert state["a.weight"].data_ptr() != model.a.weight.data_ptr()


# --- flat_inputs --------------------------------------------------------------------------------


def test_flat_inputs_paths_name_args_by_index_and_kwargs_by_key():
    x, a0, a1, mask = (torch.ones(1) * i for i in range(4))
    args = (x, {"a": [a0, a1]})
    kwargs = {"mask": mask}

    flat = flat_inputs(args, kwargs)

    assert [path for path, _ in flat] == [
        "args[0]",
        "args[1]['a'][0]",
        "args[1]['a'][1]",
        "kwargs['mask']",
    ]
    assert [leaf for _, leaf in flat] == [x, a0, a1, mask]


# torch < 2.13 registers None as a pytree node without children (None inputs vanish);
# newer torch makes None a leaf, which torch.export keeps as a constant user input.
NONE_IS_A_LEAF = pytree.tree_leaves([None]) == [None]


def test_flat_inputs_keeps_none_exactly_when_torch_pytree_does():
    flat = flat_inputs((None, torch.ones(1)), {"mask": None, "bias": torch.zeros(1)})

    if NONE_IS_A_LEAF:
        assert flat[0] == ("args[0]", None)
        assert [path for path, _ in flat] == [
            "args[0]",
            "args[1]",
            "kwargs['mask']",
            "kwargs['bias']",
        ]
    else:
        assert [path for path, _ in flat] == ["args[1]", "kwargs['bias']"]


def test_flat_inputs_has_one_entry_per_export_user_input():
    class Model(torch.nn.Module):
        def forward(self, x, mask=None, scale=1):
            return x * scale

    args, kwargs = (torch.ones(2), None), {"scale": 3}

    program = torch.export.export(Model(), args, kwargs)

    user_inputs = [s for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    assert len(flat_inputs(args, kwargs)) == len(user_inputs)


def test_flat_inputs_keeps_non_tensor_leaves():
    flat = flat_inputs((3, "mean"), {"flag": True})

    assert flat == [("args[0]", 3), ("args[1]", "mean"), ("kwargs['flag']", True)]


def test_flat_inputs_of_nothing_is_empty():
    assert flat_inputs((), {}) == []


def test_flat_inputs_nested_tuples_use_indexes():
    flat = flat_inputs(((torch.ones(1), (torch.ones(1),)),), {})

    assert [path for path, _ in flat] == ["args[0][0]", "args[0][1][0]"]


Point = namedtuple("Point", ["x", "y"])


def test_flat_inputs_namedtuple_fields_are_named():
    flat = flat_inputs((Point(torch.ones(1), torch.zeros(1)),), {})

    assert [path for path, _ in flat] in (
        ["args[0].x", "args[0].y"],
        ["args[0][0]", "args[0][1]"],
    )


def test_seeded_gives_the_callers_rng_state_back():
    import random

    import numpy

    from pytest_exportcheck.model.isolation import seeded

    torch.manual_seed(123)
    random.seed(123)
    numpy.random.seed(123)
    expected = (torch.rand(1).item(), random.random(), numpy.random.rand())
    torch.manual_seed(123)
    random.seed(123)
    numpy.random.seed(123)
    with seeded(0):
        inside = torch.rand(1).item()
    assert (torch.rand(1).item(), random.random(), numpy.random.rand()) == expected
    with seeded(0):
        assert torch.rand(1).item() == inside


def test_seed_torch_gives_the_stream_torch_manual_seed_gives():
    from pytest_exportcheck.model.isolation import seed_torch

    torch.manual_seed(7)
    expected = torch.rand(4)
    seed_torch(7)
    assert torch.equal(torch.rand(4), expected)


def test_seed_torch_leaves_seeding_to_torch_where_an_accelerator_is_available(monkeypatch):
    from pytest_exportcheck.model import isolation

    calls = []
    monkeypatch.setattr(isolation, "_accelerator_available", lambda: True)
    monkeypatch.setattr(torch, "manual_seed", calls.append)
    isolation.seed_torch(3)
    assert calls == [3]


def test_seed_torch_seeds_only_the_cpu_generator_where_none_is(monkeypatch):
    from pytest_exportcheck.model import isolation

    calls = []
    monkeypatch.setattr(isolation, "_accelerator_available", lambda: False)
    monkeypatch.setattr(torch, "manual_seed", calls.append)
    isolation.seed_torch(3)
    assert calls == []
    assert torch.default_generator.initial_seed() == 3
