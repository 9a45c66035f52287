"""The case rules a schema cannot state (spec/semantics.py, versions, requires), YAML
scalars PyYAML reads surprisingly, per-capture expectations, cases given as mappings, and
case names."""

import pytest
from speckit import any_error, case_error, line_with, load, one_case, tensor_case

from pytest_exportcheck.spec import SpecError, load_case_file
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS

# --- case-level semantic errors ------------------------------------------------------------------


def test_xfail_naming_a_capture_the_case_does_not_run(tmp_path):
    text = one_case("    xfail:\n      reason: r\n      captures: [export-strict]\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "captures: [export-strict]")
    assert error.message == (
        "xfail names capture 'export-strict', which this case does not run (captures: export)"
    )


def test_xfail_in_a_list_naming_a_check_the_case_does_not_run(tmp_path):
    text = one_case(
        "    checks: [parity]\n    xfail:\n      - reason: r\n        checks: [mutation]\n"
    )

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "checks: [mutation]")
    assert error.message == (
        "xfail names check 'mutation', which this case does not run (checks: parity)"
    )


def test_randint_without_high(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], dtype: int64}"))

    assert error.line == 7
    assert error.message == "init 'randint' needs `high` (exclusive upper bound)"


def test_randint_with_low_not_below_high(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], dtype: int64, low: 5, high: 5}"))

    assert error.line == 7
    assert error.message == "low (5) must be below high (5)"


def test_rand_with_low_not_below_high(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], init: rand, low: 2, high: 1}"))

    assert error.message == "low must be below high"


def test_low_high_on_an_init_that_ignores_them(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], init: zeros, low: 1}"))

    assert error.message == "`low`/`high` apply to init 'randint' or 'rand', not 'zeros'"


def test_randn_on_an_integer_dtype(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], dtype: int64, init: randn}"))

    assert error.message == "init 'randn' needs a floating dtype, not 'int64'"


def test_full_without_value(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], init: full}"))

    assert error.message == "init 'full' needs `value`"


def test_value_without_full(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], init: ones, value: 3}"))

    assert error.message == "`value` applies to init 'full', not 'ones'"


def test_tensor_over_the_element_limit(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [100000, 100000]}"))

    assert error.line == 7
    assert error.message == (
        f"tensor of shape [100000, 100000] has 10000000000 elements, over the limit of "
        f"{MAX_TENSOR_ELEMENTS} (the exportcheck_max_elements ini option)"
    )


def test_the_element_limit_is_the_callers(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(tensor_case("{shape: [100, 100]}"))
    (loaded,) = load_case_file(path, max_elements=1000)
    assert loaded.error is not None
    assert loaded.error.message.startswith(
        "tensor of shape [100, 100] has 10000 elements, over the limit of 1000"
    )


def test_tensor_spec_errors_are_found_in_nested_inputs(tmp_path):
    text = one_case(
        inputs="kwargs:\n"
        "        state:\n"
        "          tuple:\n"
        "            - {shape: [2]}\n"
        "            - dict:\n"
        "                ids: {shape: [2], dtype: int64}\n"
    )

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "ids:")
    assert error.message == "init 'randint' needs `high` (exclusive upper bound)"


def test_bool_tensor_needs_no_high(tmp_path):
    (entry,) = load(tmp_path, tensor_case("{shape: [2], dtype: bool}"))

    assert entry.error is None


def test_literal_data_is_not_a_tensor_spec(tmp_path):
    (entry,) = load(tmp_path, tensor_case("{data: [[1, 2]], dtype: int64}"))

    assert entry.error is None


# --- gaps found while writing these tests -------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["2024-13-01", "2024-02-30", "0x_", "!!int x", "!!float x", "!!bool maybe", "!!timestamp x"],
)
def test_scalars_pyyaml_cannot_construct_are_spec_errors_at_their_line(tmp_path, value):
    text = one_case(f"    seed: {value}\n")

    with pytest.raises(SpecError) as info:
        load(tmp_path, text)

    assert info.value.line == line_with(text, "seed:")


def test_integral_float_steps_are_rejected_or_made_int(tmp_path):
    (entry,) = load(tmp_path, one_case("    expect:\n      parity: {steps: 2.0}\n"))

    if entry.case is not None:
        assert type(entry.case.expect.parity.steps) is int


def test_integral_float_shape_entries_are_rejected_or_made_int(tmp_path):
    (entry,) = load(tmp_path, tensor_case("{shape: [2.0, 3]}"))

    if entry.case is not None:
        assert all(type(size) is int for size in entry.case.inputs["args"][0]["shape"])


def test_requires_grad_on_an_integer_dtype_is_a_spec_error(tmp_path):
    error = case_error(
        tmp_path, tensor_case("{shape: [2], dtype: int64, high: 3, requires_grad: true}")
    )

    assert error.line == 7
    assert "requires_grad" in error.message


def test_value_on_a_random_bool_tensor_is_a_spec_error(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], dtype: bool, value: 1}"))

    assert error.message == "`value` applies to init 'full', not 'randint'"


def test_a_float_yaml_reads_as_a_string_gets_a_hint(tmp_path):
    text = one_case("    expect: {parity: {atol: 1e-5}}\n")

    error = any_error(tmp_path, text, "a")

    assert error.message.endswith(
        "'1e-5' is not of type 'number' (YAML 1.1 reads 1e-5 as a string: a float needs a dot "
        "and a signed exponent, e.g. 1.0e-5)"
    )


# --- capture paths ---------------------------------------------------------------------------------


def test_placeholders_may_be_given_per_capture(tmp_path):
    text = one_case(
        "    captures: [export, dynamo]\n"
        "    expect:\n"
        "      placeholders:\n"
        "        export: [{name: x, kind: user_input}]\n"
        "        dynamo: [{name: L_x_, kind: user_input}]\n"
    )
    (entry,) = load(tmp_path, text)
    assert [p.name for p in entry.case.expect.placeholders_for("dynamo")] == ["L_x_"]
    assert [p.name for p in entry.case.expect.placeholders_for("export")] == ["x"]


def test_placeholders_for_a_capture_the_case_does_not_run(tmp_path):
    text = one_case(
        "    captures: [export]\n"
        "    expect:\n"
        "      placeholders:\n"
        "        dynamo: [{name: L_x_, kind: user_input}]\n"
    )
    error = case_error(tmp_path, text)
    assert error.line == line_with(text, "dynamo:")
    assert error.message == (
        "expect.placeholders names capture 'dynamo', which this case does not run "
        "(captures: export)"
    )


def test_the_joint_graph_capture_needs_a_loss_output(tmp_path):
    text = one_case("    captures: [export, aot-joint]\n")
    error = case_error(tmp_path, text)
    assert error.line == line_with(text, "captures:")
    assert error.message.startswith("capture 'aot-joint' needs `loss_output`")


def test_preserve_signatures_are_read_with_their_line(tmp_path):
    text = one_case("    preserve_signatures: [encoder.layers.0, head]\n")
    (entry,) = load(tmp_path, text)
    assert entry.case.preserve_signatures == ("encoder.layers.0", "head")
    assert entry.case.preserve_signatures_line == line_with(text, "preserve_signatures")


def test_preserve_signatures_need_an_export_capture(tmp_path):
    text = one_case("    captures: [dynamo]\n    preserve_signatures: [head]\n")
    error = case_error(tmp_path, text)
    assert error.line == line_with(text, "preserve_signatures")
    assert error.message == (
        "preserve_signatures applies to the export captures (export, export-strict: "
        "torch.export.export's preserve_module_call_signature), and this case runs neither "
        "(captures: dynamo)"
    )


def test_an_accepted_difference_needs_a_reason(tmp_path):
    text = one_case(
        "    captures: [export, dynamo]\n"
        "    expect:\n"
        "      consistency:\n"
        "        accept: [{row: 'lifted: w'}]\n"
    )
    error = case_error(tmp_path, text)
    assert error.line == line_with(text, "accept:")
    assert "'reason' is a required property" in error.message


def test_accepted_differences_are_loaded(tmp_path):
    text = one_case(
        "    captures: [export, dynamo]\n"
        "    expect:\n"
        "      consistency:\n"
        "        accept: [{row: 'lifted: w', reason: tied}]\n"
    )
    (entry,) = load(tmp_path, text)
    assert [(a.row, a.reason) for a in entry.case.expect.accepted_differences] == [
        ("lifted: w", "tied")
    ]


def test_a_case_given_as_a_mapping_goes_through_the_file_loader_s_rules(tmp_path):
    from pytest_exportcheck.spec.load import case_from_mapping

    raw = {"description": "d", "model": {"target": "m.py:M"}, "inputs": {}}
    where = tmp_path / "test_x.py"
    case = case_from_mapping("m", {**raw, "requires": ["pyyaml"]}, where, 7)
    assert (case.name, case.location.endswith("test_x.py:7"), case.requires) == (
        "m",
        True,
        ("pyyaml",),
    )
    with pytest.raises(SpecError) as typo:
        case_from_mapping("m", {**raw, "expect": {"mutated_bufers": []}}, where, 7)
    assert typo.value.line == 7
    assert typo.value.message.startswith(
        "unknown key 'mutated_bufers' in expect (did you mean 'mutated_buffers'?)"
    )
    with pytest.raises(SpecError, match="requires: 'x >>= 1' is not a requirement"):
        case_from_mapping("m", {**raw, "requires": ["x >>= 1"]}, where, 7)


# --- case names ---------------------------------------------------------------------------------


def test_bad_case_name_is_named_at_its_line(tmp_path):
    text = one_case() + "  bad-name:\n    description: x\n    model: {target: 'm.py:M'}\n"

    entries = {e.name: e for e in load(tmp_path, text)}

    error = entries["bad-name"].error
    assert error.line == line_with(text, "bad-name")
    assert error.message == (
        "invalid case name 'bad-name': use letters, digits and _, starting with a letter or _"
    )


def test_bad_case_name_does_not_hide_the_other_cases(tmp_path):
    text = one_case() + "  bad-name:\n    description: x\n    model: {target: 'm.py:M'}\n"

    entries = {e.name: e for e in load(tmp_path, text)}

    assert entries["a"].case is not None
    assert entries["bad-name"].error is not None


def test_bad_case_name_is_an_error_naming_the_name(tmp_path):
    text = one_case() + "  bad-name:\n    description: x\n    model: {target: 'm.py:M'}\n"

    error = any_error(tmp_path, text, "bad-name")

    assert "'bad-name'" in error.message


@pytest.mark.parametrize("name", ["123", "true", "null", "1.5"])
def test_case_names_that_yaml_reads_as_non_strings_are_rejected(tmp_path, name):
    text = one_case().replace("  a:", f"  {name}:")

    try:
        (entry,) = load(tmp_path, text)
    except SpecError as error:
        message = error.message
    else:
        assert entry.case is None, f"case {entry.name!r} loaded"
        message = entry.error.message

    assert "case name" in message
