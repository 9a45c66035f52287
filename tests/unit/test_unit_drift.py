"""drift.py: each difference between two observations of a capture gets a kind that groups."""

from __future__ import annotations

import pytest

from pytest_exportcheck.recordings.drift import Drift, drifts, group

W = ["p_lin_weight", "parameter", "lin.weight"]
B = ["p_lin_bias", "parameter", "lin.bias"]
X = ["x", "user_input", "args[0]"]
MUTATED = {"buffers": ["count"], "parameters": [], "user_inputs": []}


def observation(placeholders=None, modules=None, mutations=None) -> dict:
    return {
        "placeholders": placeholders if placeholders is not None else [W, B, X],
        "modules": modules if modules is not None else ["lin"],
        "mutations": mutations if mutations is not None else MUTATED,
    }


def kinds(before: dict, after: dict, capture: str = "export") -> list[tuple[str, str]]:
    return [(d.kind, d.example) for d in drifts(capture, before, after)]


def test_equal_observations_have_no_drift() -> None:
    assert drifts("export", observation(), observation()) == []


def test_the_same_tensors_under_other_names() -> None:
    renamed = [["L__self___lin_weight", "parameter", "lin.weight"], B, X]
    assert kinds(observation(), observation(renamed), "dynamo-legacy") == [
        ("dynamo-legacy placeholder names", "p_lin_weight now L__self___lin_weight")
    ]


def test_the_same_placeholders_in_another_order() -> None:
    assert kinds(observation(), observation([B, W, X])) == [
        ("export placeholder order", "#1 was p_lin_weight, now p_lin_bias")
    ]


def test_renamed_and_reordered() -> None:
    after = [["b", "parameter", "lin.bias"], ["w", "parameter", "lin.weight"], X]
    assert kinds(observation(), observation(after))[0][0] == "export placeholder names and order"


def test_state_lifted_or_dropped_is_lifted_state() -> None:
    assert kinds(observation(), observation([W, X])) == [
        ("export lifted state", "-p_lin_bias (parameter lin.bias)")
    ]


def test_a_user_input_that_changes_is_a_placeholder_change() -> None:
    other = ["x", "user_input", "kwargs['x']"]
    assert kinds(observation(), observation([W, B, other]))[0][0] == "export placeholders"


@pytest.mark.parametrize(
    ("before", "after", "kind", "example"),
    [
        (["lin"], "unflatten raised ValueError", "unflatten fails", "unflatten raised ValueError"),
        ("unflatten raised ValueError", ["lin"], "unflatten works", "was: unflatten raised …"),
        (["lin"], ["lin", "true_graph_0"], "unflattened modules", "+true_graph_0"),
    ],
)
def test_module_changes(before, after, kind: str, example: str) -> None:
    (found,) = kinds(observation(modules=before), observation(modules=after))
    assert found[0] == f"export {kind}"
    assert found[1].startswith(example.removesuffix("…"))


def test_mutation_records() -> None:
    none = {"buffers": [], "parameters": [], "user_inputs": ["args[0]"]}
    assert kinds(observation(), observation(mutations=none)) == [
        ("export mutation records", "buffers: -count; user_inputs: +args[0]")
    ]
    failed = "run_decompositions() raised"
    assert kinds(observation(), observation(mutations=failed)) == [
        ("export decomposition fails", failed)
    ]


def test_a_capture_that_starts_or_stops_raising() -> None:
    failed = {"capture": "[other] AttributeError: no attribute 'is_input'"}
    other = {"capture": "[other] KeyError: 'x'"}
    assert kinds(observation(), failed, "export-strict") == [
        ("export-strict capture fails", "[other] AttributeError: no attribute 'is_input'")
    ]
    assert kinds(failed, observation()) == [
        ("export capture works", "was: [other] AttributeError: no attribute 'is_input'")
    ]
    assert kinds(failed, other) == [("export capture fails differently", "[other] KeyError: 'x'")]


def test_several_aspects_give_one_drift_each() -> None:
    after = observation([W, X], modules=["lin", "extra"])
    assert [k for k, _ in kinds(observation(), after)] == [
        "export lifted state",
        "export unflattened modules",
    ]


def test_groups_count_items_most_common_first_with_the_first_items_example() -> None:
    found = [
        ("b[export]", Drift("export placeholder names", "b_old now b_new")),
        ("a[export]", Drift("export placeholder names", "a_old now a_new")),
        ("c[dynamo]", Drift("dynamo lifted state", "-x")),
    ]
    groups = group(found)
    assert [(g.kind, g.items, g.example) for g in groups] == [
        ("export placeholder names", ["a[export]", "b[export]"], "a_old now a_new"),
        ("dynamo lifted state", ["c[dynamo]"], "-x"),
    ]
    assert groups[0].line() == "export placeholder names: 2 items, e.g. a[export]: a_old now a_new"


def test_a_dim_a_torch_made_static_is_a_dynamic_dims_drift() -> None:
    before = {**observation(), "dims": {"args[0] dim 0 (batch)": "symbolic [1, 64]"}}
    after = {**observation(), "dims": {"args[0] dim 0 (batch)": "static 4"}}
    assert kinds(before, after) == [
        ("export dynamic dims", "args[0] dim 0 (batch): symbolic [1, 64] now static 4")
    ]
    narrowed = {**observation(), "dims": {"args[0] dim 0 (batch)": "symbolic [2, 64]"}}
    assert kinds(before, narrowed)[0][1] == (
        "args[0] dim 0 (batch): symbolic [1, 64] now symbolic [2, 64]"
    )
