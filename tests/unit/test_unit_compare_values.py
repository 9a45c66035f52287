"""compare_trees: how two pytrees of outputs differ, told so a user can act on it."""

import math

import pytest
import torch

from pytest_exportcheck.comparison.compare_values import (
    DEFAULT_TOLERANCES,
    EXACT,
    Tolerance,
    compare_trees,
    tracking_errors,
    untracked,
)

NAN = float("nan")
INF = float("inf")

# The numbers torch.testing.assert_close documents (rtol, atol).
DOCUMENTED_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def only(problems):
    assert len(problems) == 1, problems
    return problems[0]


# --- agreement -------------------------------------------------------------------------------


def test_equal_trees_have_no_differences():
    tree = {"logits": torch.randn(2, 3), "aux": [torch.arange(4), (1, "x", None)]}

    assert compare_trees(tree, {k: v for k, v in tree.items()}) == []


def test_differences_within_the_default_tolerance_are_equal():
    want = torch.ones(3)

    assert compare_trees(want, want + 1e-6) == []


def test_empty_tensors_are_equal():
    assert compare_trees(torch.empty(0, 3), torch.empty(0, 3)) == []


def test_plain_python_leaves_compare_by_equality():
    assert compare_trees((1, "a", 2.5), (1, "a", 2.5)) == []
    assert only(compare_trees((1, "a"), (1, "b"))) == "output[1]: eager 'a' != exported 'b'"


def test_nan_python_floats_are_equal_to_each_other():
    assert compare_trees([NAN], [NAN]) == []


# --- structure, dtype and shape ----------------------------------------------------------------


def test_structure_difference_shows_both_structures():
    problem = only(compare_trees((torch.ones(1), torch.ones(1)), [torch.ones(1)]))

    assert problem.startswith("output: structure differs\n")
    eager_line, exported_line = problem.splitlines()[1:]
    assert eager_line.startswith("  eager: ")
    assert exported_line.startswith("  exported: ")
    assert "tuple" in eager_line
    assert "list" in exported_line


def test_tensor_versus_non_tensor_names_both_types():
    problem = only(compare_trees([torch.ones(1)], [1.0]))

    assert problem == "output[0]: eager gives Tensor, exported gives float"


def test_dtype_mismatch_names_both_dtypes():
    problem = only(compare_trees({"y": torch.ones(2)}, {"y": torch.ones(2, dtype=torch.float64)}))

    assert problem == "output['y']: dtype eager float32 != exported float64"


def test_shape_mismatch_names_both_shapes():
    problem = only(compare_trees([torch.ones(2, 3)], [torch.ones(3, 2)]))

    assert problem == "output[0]: shape eager [2, 3] != exported [3, 2]"


def test_root_and_side_names_are_configurable():
    problem = only(
        compare_trees(torch.ones(2), torch.ones(3), root="state['w']", names=("before", "after"))
    )

    assert problem == "state['w']: shape before [2] != after [3]"


def test_each_differing_leaf_is_reported():
    want = {"a": torch.zeros(2), "b": torch.zeros(2), "c": torch.zeros(2)}
    got = {"a": torch.ones(2), "b": torch.zeros(2), "c": torch.ones(2)}

    problems = compare_trees(want, got)

    assert [p.split(":")[0] for p in problems] == ["output['a']", "output['c']"]


# --- value mismatches ---------------------------------------------------------------------------


def test_value_mismatch_says_where_how_many_how_far_and_what_tolerance():
    want = torch.zeros(2, 3)
    got = want.clone()
    got[1, 2] = 0.5
    got[0, 1] = 0.25

    problem = only(compare_trees({"out": [want]}, {"out": [got]}))

    assert problem.startswith("output['out'][0]: 2 / 6 elements outside tolerance")
    assert "(atol=1e-05, rtol=1.3e-06, float32 default)" in problem
    assert "max abs err 0.5" in problem
    assert "worst at index (1, 2): eager 0, exported 0.5" in problem


def test_value_mismatch_reports_the_max_relative_error():
    problem = only(compare_trees(torch.tensor([2.0, 4.0]), torch.tensor([2.0, 5.0])))

    assert "max abs err 1," in problem
    assert "max rel err 0.25;" in problem


def test_case_tolerance_is_named_as_such():
    problem = only(
        compare_trees(torch.zeros(3), torch.full((3,), 0.5), tolerance=Tolerance(atol=0.1))
    )

    assert "3 / 3 elements outside tolerance (atol=0.1, rtol=1.3e-06, case tolerance)" in problem


def test_case_tolerance_loosens_the_comparison():
    assert (
        compare_trees(torch.zeros(3), torch.full((3,), 0.05), tolerance=Tolerance(atol=0.1)) == []
    )


def test_default_tolerance_is_named_after_the_dtype():
    want = torch.zeros(2, dtype=torch.float64)

    problem = only(compare_trees(want, want + 1))

    assert "(atol=1e-07, rtol=1e-07, float64 default)" in problem


def test_relative_tolerance_is_relative_to_the_expected_side():
    tolerance = Tolerance(atol=0.0, rtol=0.1)

    assert compare_trees(torch.tensor([10.0]), torch.tensor([11.0]), tolerance=tolerance) == []
    assert compare_trees(torch.tensor([1.0]), torch.tensor([2.0]), tolerance=tolerance) != []


def test_exact_tolerance_refuses_any_difference():
    assert compare_trees(torch.ones(1), torch.ones(1) + 1e-7, tolerance=EXACT) != []


def test_zero_dimensional_tensors_report_an_empty_index():
    problem = only(compare_trees(torch.tensor(1.0), torch.tensor(2.0)))

    assert "1 / 1 elements outside tolerance" in problem
    assert "worst at index (): eager 1, exported 2" in problem


def test_complex_tensors_compare_by_magnitude_of_the_difference():
    want = torch.tensor([1 + 1j, 2 + 0j])

    assert compare_trees(want, want.clone()) == []
    problem = only(compare_trees(want, torch.tensor([1 + 1j, 2 + 1j])))
    assert "1 / 2 elements outside tolerance" in problem
    assert "max abs err 1," in problem


# --- NaN and infinities --------------------------------------------------------------------------


def test_nan_in_the_same_place_on_both_sides_is_equal():
    want = torch.tensor([1.0, NAN, 3.0])

    assert compare_trees(want, want.clone()) == []


def test_nan_on_the_exported_side_only_is_a_mismatch():
    problem = only(compare_trees(torch.tensor([1.0, 2.0]), torch.tensor([1.0, NAN])))

    assert "1 / 2 elements outside tolerance" in problem
    assert "max abs err inf" in problem
    assert "worst at index (1,): eager 2, exported nan" in problem


def test_nan_on_the_eager_side_only_is_a_mismatch():
    problem = only(compare_trees(torch.tensor([NAN, 2.0]), torch.tensor([1.0, 2.0])))

    assert "1 / 2 elements outside tolerance" in problem
    assert "worst at index (0,): eager nan, exported 1" in problem


def test_equal_infinities_are_equal():
    want = torch.tensor([INF, -INF, 1.0])

    assert compare_trees(want, want.clone()) == []


def test_finite_eager_versus_infinite_exported_is_a_mismatch():
    problem = only(compare_trees(torch.tensor([1.0]), torch.tensor([INF])))

    assert "1 / 1 elements outside tolerance" in problem


@pytest.mark.parametrize("got", [1.0, -INF, NAN], ids=["finite", "opposite-inf", "nan"])
@pytest.mark.parametrize("tolerance", [Tolerance(), EXACT], ids=["default", "exact"])
def test_infinite_eager_versus_anything_else_exported_is_a_mismatch(got, tolerance):
    problems = compare_trees(torch.tensor([INF]), torch.tensor([got]), tolerance=tolerance)

    assert len(problems) == 1


# --- exact dtypes ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_integers_compare_exactly_by_default(dtype):
    want = torch.tensor([[1, 2], [3, 4]], dtype=dtype)
    got = torch.tensor([[1, 2], [3, 5]], dtype=dtype)

    problem = only(compare_trees(want, got))

    dtype_name = str(dtype).removeprefix("torch.")
    assert problem == (
        f"output: 1 / 4 elements differ (exact dtype {dtype_name}); "
        "first at index (1, 1): eager 4, exported 5"
    )


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8])
def test_integers_honour_a_tolerance_the_case_states(dtype):
    want = torch.tensor([[1, 2], [3, 4]], dtype=dtype)
    got = torch.tensor([[1, 2], [3, 5]], dtype=dtype)

    assert compare_trees(want, got, tolerance=Tolerance(atol=1.0, rtol=0.0)) == []
    assert "1 / 4 elements outside tolerance (atol=0.5, rtol=0, case tolerance)" in only(
        compare_trees(want, got, tolerance=Tolerance(atol=0.5, rtol=0.0))
    )


def test_bools_compare_exactly():
    problem = only(compare_trees(torch.tensor([True, False]), torch.tensor([True, True])))

    assert problem == (
        "output: 1 / 2 elements differ (exact dtype bool); first at index (1,): "
        "eager False, exported True"
    )


def test_equal_integers_are_equal():
    assert compare_trees(torch.arange(5), torch.arange(5)) == []


# --- default tolerances ----------------------------------------------------------------------------


def torch_default_tolerances():
    try:
        from torch.testing._comparison import default_tolerances
    except ImportError:
        return {dtype: pair for dtype, pair in DOCUMENTED_TOLERANCES.items()}
    return {dtype: default_tolerances(dtype) for dtype in DEFAULT_TOLERANCES}


@pytest.mark.parametrize("dtype", list(DOCUMENTED_TOLERANCES), ids=str)
def test_default_tolerances_are_those_of_assert_close(dtype):
    rtol, atol, origin = Tolerance().for_dtype(dtype)

    assert (rtol, atol) == torch_default_tolerances()[dtype]
    assert (rtol, atol) == DOCUMENTED_TOLERANCES[dtype]
    assert origin == f"{str(dtype).removeprefix('torch.')} default"


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.uint8], ids=str)
def test_non_floating_dtypes_default_to_exact(dtype):
    rtol, atol, _ = Tolerance().for_dtype(dtype)

    assert (rtol, atol) == (0.0, 0.0)


def test_a_partial_case_tolerance_keeps_the_dtype_default_for_the_other_bound():
    rtol, atol, origin = Tolerance(rtol=0.5).for_dtype(torch.float32)

    assert (rtol, atol, origin) == (0.5, 1e-5, "case tolerance")


def test_default_tolerance_agrees_with_assert_close_at_the_boundary():
    want = torch.tensor([1.0], dtype=torch.float64)
    rtol, atol, _ = Tolerance().for_dtype(torch.float64)
    inside = want + 0.9 * (atol + rtol)
    outside = want + 1.1 * (atol + rtol)

    torch.testing.assert_close(inside, want)
    assert compare_trees(want, inside) == []
    with pytest.raises(AssertionError):
        torch.testing.assert_close(outside, want)
    assert compare_trees(want, outside) != []
    assert math.isfinite(float(outside))


def test_the_float64_run_is_made_only_for_a_comparison_allclose_failed() -> None:
    asked: list[int] = []

    def reference() -> torch.Tensor:
        asked.append(1)
        return torch.ones(3, dtype=torch.float64)

    same = torch.ones(3)
    assert compare_trees(same, same.clone(), reference=reference) == []
    assert asked == []
    off = same + torch.tensor([0.0, 0.0, 1e-3])
    assert compare_trees(same, off, reference=reference)  # eager is exact: the export is not
    assert asked == [1]


def test_auto_without_a_float64_run_is_plain_allclose() -> None:
    off = torch.ones(3) + 1e-3
    (problem,) = compare_trees(torch.ones(3), off)
    assert "fp64" not in problem


def test_auto_says_when_the_model_cannot_run_in_float64() -> None:
    off = torch.ones(3) + 1e-3
    (problem,) = compare_trees(torch.ones(3), off, reference=lambda: None)
    assert problem.endswith(
        "no fp64 reference (the model did not run in float64): allclose decided (policy auto)"
    )


@pytest.mark.parametrize(
    ("leaf", "heard"),
    [
        (torch.randn(3, 4), [0.0]),  # bit-equal floats: within tolerance, error 0
        (torch.tensor([True, False]), []),  # exact dtypes never report an error size
        (torch.tensor([float("inf")]), []),  # nothing finite to measure
    ],
)
def test_bit_equal_leaves_pass_and_report_as_the_full_comparison_does(
    leaf: torch.Tensor, heard: list[float]
) -> None:
    with tracking_errors() as errors:
        assert compare_trees(leaf, leaf.clone()) == []
    assert errors.max_abs_err == (max(heard) if heard else None)


def test_the_tracker_keeps_the_tolerance_of_the_comparison_with_the_largest_error() -> None:
    with tracking_errors() as errors:
        compare_trees(torch.ones(3), torch.ones(3))  # equal: an error of 0
        assert errors.tolerance == "atol=1e-05, rtol=1.3e-06 (float32 default)"
        compare_trees(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64) + 1e-9)
        compare_trees(torch.ones(3), torch.ones(3) + 1e-3, tolerance=Tolerance(atol=1e-2))
        compare_trees(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64) + 1e-8)
    assert errors.max_abs_err == pytest.approx(1e-3, rel=1e-3)
    assert errors.tolerance is not None and errors.tolerance.startswith("atol=0.01, rtol=1.3e-06")


def test_the_tracker_counts_the_tensor_pairs_compared_and_no_probe_s() -> None:
    with tracking_errors() as errors:
        with untracked():  # a check's probe: what it decides is told, not judged
            compare_trees(torch.zeros(3), torch.ones(3))
        assert (errors.compared, errors.max_abs_err, errors.tolerance) == (0, None, None)
        compare_trees(
            {"a": torch.ones(2), "b": torch.tensor([True]), "n": 3}, {"a": torch.ones(2),
             "b": torch.tensor([True]), "n": 3},
        )  # fmt: skip
        compare_trees(torch.ones(2, device="meta"), torch.ones(2, device="meta"))  # no values
    assert (errors.compared, errors.max_abs_err) == (2, 0.0)
    assert errors.tolerance == "atol=1e-05, rtol=1.3e-06 (float32 default)"
