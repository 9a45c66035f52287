"""An unflattened child's outputs matched to eager's leaves; a call replayed under its RNG state."""

from __future__ import annotations

import torch

from pytest_exportcheck.checks.child_outputs import compare_child_outputs
from pytest_exportcheck.comparison.compare_values import DEFAULT
from pytest_exportcheck.model.rng_state import rng_state, under_rng


def compare(eager: object, unflat: object) -> tuple[list[str], list[str]]:
    return compare_child_outputs(eager, unflat, tolerance=DEFAULT, root="child output")


def test_an_output_the_parent_discards_is_dropped_not_a_structure_difference() -> None:
    context, probs = torch.randn(2, 3, 8), torch.rand(2, 3, 3)
    assert compare((context, probs), context.clone()) == ([], ["[1] (float32[2, 3, 3])"])


def test_none_beside_the_output_is_no_leaf() -> None:
    # nn.MultiheadAttention(need_weights=False) returns (out, None); its child returns out.
    out = torch.randn(2, 3, 8)
    assert compare((out, None), out.clone()) == ([], [])


def test_outputs_returned_in_the_order_the_graph_computes_them_match() -> None:
    context, probs = torch.randn(2, 3, 8), torch.rand(2, 3, 3)
    assert compare((context, probs), [probs.clone(), context.clone()]) == ([], [])
    a, b = torch.randn(4), torch.randn(4)  # same shape: matched by value, each leaf once
    assert compare((a, b), [b.clone(), a.clone()]) == ([], [])


def test_a_returned_output_that_equals_no_eager_leaf_is_a_problem() -> None:
    context, probs = torch.randn(2, 3, 8), torch.rand(2, 3, 3)
    problems, dropped = compare((context, probs), context + 1)
    assert len(problems) == 1 and problems[0].startswith("child output[0]: 48 / 48 elements")
    assert dropped == ["[1] (float32[2, 3, 3])"]
    problems, _ = compare((context, probs), torch.zeros(5))
    assert problems == [
        "child output: unflattened returns a float32[5] leaf (position 0) that no output leaf "
        "of eager matches; eager returns [0] float32[2, 3, 8], [1] float32[2, 3, 3]"
    ]


def test_a_dropout_replayed_under_the_state_its_call_saw_draws_the_same_mask() -> None:
    # The plain-torch fact the hierarchy replay rests on (torch 2.13, CPU).
    drop = torch.nn.Dropout(0.5).train()
    x = torch.ones(64)
    torch.manual_seed(0)
    torch.rand(3)  # whatever ran before the call
    state = rng_state()
    eager = drop(x)
    assert not state.same_as(rng_state())  # the call drew from the generator
    assert not torch.equal(drop(x), eager)  # another state, another mask
    before = rng_state()
    with under_rng(state):
        assert torch.equal(drop(x), eager)
    assert before.same_as(rng_state())  # the caller's generator is given back


def test_a_long_list_is_capped_and_counted() -> None:
    from pytest_exportcheck.checks.listdiff import capped

    names = [f"layer{i}.bn.running_mean" for i in range(150)]
    assert capped(names, limit=3) == (
        "layer0.bn.running_mean, layer1.bn.running_mean, layer2.bn.running_mean ... and 147 more"
    )
    assert capped(names[:3], limit=3) == ", ".join(names[:3])


def test_a_return_is_told_by_its_container() -> None:
    from pytest_exportcheck.checks.child_calls import return_change, structure

    out = torch.randn(2)
    assert structure((out, None)) == "tuple(Tensor, None)"
    assert return_change((out, (out, out)), [out, out, out]) == (
        "returns list(Tensor, Tensor, Tensor) where eager's returns tuple(Tensor, tuple(Tensor, "
        "Tensor))"
    )
    assert return_change(out, out.clone()) is None


def test_what_a_caller_reads_is_where_the_return_first_breaks() -> None:
    from pytest_exportcheck.checks.child_calls import read_by_caller

    out = torch.randn(2)
    # XCiT's patch embedding, preserved: (x, (Hp, Wp)) comes back as (x, (None, None)).
    assert read_by_caller((out, (4, 4)), (out, (None, None))) == "[1][0]"
    assert read_by_caller((out, (4, 4)), out) == "[0]"  # a bare tensor: indexing breaks
    assert read_by_caller({"out": out}, out) == "['out']"
    assert read_by_caller((out, out), [out, out]) is None  # a list reads as the tuple did
    other = torch.randn(3)
    assert read_by_caller((out, other), [other, out]) == "[0]"  # reordered: [0] is another
