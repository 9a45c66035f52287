"""own_scale: an output whose largest magnitude does not dwarf atol is compared at its scale."""

import pytest
import torch

from pytest_exportcheck.comparison.compare_values import (
    OWN_SCALE,
    Tolerance,
    compare_trees,
    own_scale,
)


def float64_of(want: torch.Tensor):
    return lambda: want.double()


@pytest.mark.parametrize("scale", [1e-13, 1e-8, 1.65e-5, 5e-3])
def test_below_the_bound_atol_is_the_same_fraction_of_any_output(scale: float) -> None:
    atol, origin = own_scale(torch.tensor([scale, -scale / 2]), 1e-5, "float32 default")
    assert atol == pytest.approx(scale / OWN_SCALE)
    assert origin == (
        f"float32 default, at the output's scale: max |eager| {scale:.3g} < 1000 x atol 1e-05"
    )


@pytest.mark.parametrize("scale", [2e-2, 1.0, 1e3])
def test_an_output_that_dwarfs_atol_keeps_it(scale: float) -> None:
    assert own_scale(torch.tensor([scale, 0.0]), 1e-5, "o") == (1e-5, "o")


def test_the_cap_is_continuous_at_the_bound() -> None:
    just_below = own_scale(torch.tensor([OWN_SCALE * 1e-5 * (1 - 1e-9)]), 1e-5, "o")[0]
    assert just_below == pytest.approx(1e-5)


@pytest.mark.parametrize("values", [[0.0, 0.0], [float("nan"), float("inf")]])
def test_no_finite_magnitude_leaves_atol_alone(values: list[float]) -> None:
    assert own_scale(torch.tensor(values), 1e-5, "o") == (1e-5, "o")


def test_half_of_an_output_just_above_atol_fails_against_eager() -> None:
    """efficientnet_v2_s at random init: 1.65e-5, and a program returning 0.5 * out."""
    want = torch.linspace(-1.65e-5, 1.65e-5, 8)
    (problem,) = compare_trees(want, 0.5 * want, reference=float64_of(want))
    assert "8 / 8 elements outside tolerance (atol=1.65e-08, rtol=1.3e-06" in problem
    # Without a float64 run (not a comparison against eager), atol is the dtype's.
    assert compare_trees(want, 0.5 * want) == []


def test_float_noise_at_the_output_s_scale_passes() -> None:
    want = torch.linspace(-1.65e-5, 1.65e-5, 8)
    noisy = want * (1 + 1e-6)
    assert compare_trees(want, noisy, reference=float64_of(want)) == []


def test_a_case_atol_is_the_case_s_choice() -> None:
    want = torch.linspace(-1.65e-5, 1.65e-5, 8)
    case = Tolerance(atol=1e-5)
    assert compare_trees(want, 0.5 * want, tolerance=case, reference=float64_of(want)) == []


def test_a_case_atol_not_small_against_the_output_is_noted() -> None:
    from pytest_exportcheck.checks.signal import loose_atol

    output = {"logits": torch.linspace(-2e-4, 2e-4, 8), "big": torch.ones(3)}
    (note,) = loose_atol(output, Tolerance(atol=1e-5))
    assert note == (
        "note: output['logits']: the case's atol 1e-05 is not small against the output "
        "(max |eager| 0.0002 < 1000 x atol): a program off by up to 1e-05 passes"
    )
    assert loose_atol(output, Tolerance()) == []  # the default atol: compared at its scale
    assert loose_atol(output, Tolerance(atol=0.0)) == []


def test_a_tolerance_without_own_scale_keeps_atol_for_noise_level_state() -> None:
    # mobilenet_v3_small in training mode, through Inductor: a running mean that is the
    # float noise of a mean of just-normalized activations (eager 1.4e-10, fp64 ~0),
    # recomputed in another order (-4.3e-9). At its own scale that is a finding;
    # lowered state is held to atol (checks/lowered.py).
    eager = torch.tensor([1.38347e-10, 5.0e-10, -2.0e-10])
    lowered = torch.tensor([-4.2835e-09, 3.1e-09, 1.0e-09])
    fp64 = torch.tensor([0.0, 1.0e-11, 0.0], dtype=torch.float64)
    at_own_scale = compare_trees(eager, lowered, tolerance=Tolerance(), reference=lambda: fp64)
    assert at_own_scale and "at the output's scale" in at_own_scale[0]
    held_to_atol = Tolerance(own_scale=False)
    assert compare_trees(eager, lowered, tolerance=held_to_atol, reference=lambda: fp64) == []
    # A real difference is still one.
    assert compare_trees(eager, eager + 1e-3, tolerance=held_to_atol, reference=lambda: fp64)
