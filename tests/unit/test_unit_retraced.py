"""A retrace's signature against its capture's: what it lifts (by alias group) and the
user inputs it takes, names aside."""

from __future__ import annotations

from pytest_exportcheck.capture.record import Placeholder
from pytest_exportcheck.checks.retraced import signature_differences

CAPTURED = [
    Placeholder("p_emb_weight", "parameter", "emb.weight"),
    Placeholder("b_count", "buffer", "count"),
    Placeholder("x", "user_input", "args[0]"),
]
TIED = {"emb.weight": ("emb.weight", "head.weight"), "head.weight": ("emb.weight", "head.weight")}


def test_a_retrace_that_renames_and_lifts_a_tied_weight_per_name_agrees() -> None:
    # A constant under a target of the retrace's own (a forward default, lifted again).
    captured = [*CAPTURED, Placeholder("c_y", "constant", "default:y")]
    retraced = [
        Placeholder("c_lifted_tensor_0", "constant", "lifted_tensor_0"),
        Placeholder("p_emb_weight", "parameter", "emb.weight"),
        Placeholder("p_head_weight", "parameter", "head.weight"),  # the same tensor
        Placeholder("b_count_1", "buffer", "count"),
        Placeholder("x_1", "user_input", "args[0]"),
    ]
    assert signature_differences(captured, retraced, "export-strict", TIED) == []


def test_a_buffer_retraced_as_a_constant_and_inputs_reordered_are_told() -> None:
    retraced = [
        Placeholder("p_emb_weight", "parameter", "emb.weight"),
        Placeholder("c_count", "constant", "count"),
        Placeholder("y", "user_input", "args[1]"),
        Placeholder("x", "user_input", "args[0]"),
    ]
    assert signature_differences(CAPTURED, retraced, "export", TIED) == [
        "retrace of export: lifts no buffer count, which the capture lifts",
        "retrace of export: lifts 1 constant(s), where the capture lifts 0",
        "retrace of export: takes user inputs ['args[1]', 'args[0]'], where the capture takes "
        "['args[0]']",
    ]
