"""Case files → Case objects, or a SpecError at the file:line a case author must fix."""

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest

from pytest_exportcheck.spec import Case, SpecError, load_case_file
from pytest_exportcheck.spec.case import ALL_CHECKS
from pytest_exportcheck.spec.load import case_schema
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS
from pytest_exportcheck.spec.yaml_lines import load_yaml

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CASE_FILES = sorted((REPO / "cases").glob("**/*.yaml")) + sorted(
    (REPO / "cases").glob("**/*.yml")
)


def write(tmp_path, text, name="cases.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(tmp_path, text):
    return load_case_file(write(tmp_path, text))


def file_error(tmp_path, text):
    """The SpecError that makes the whole file unusable."""
    with pytest.raises(SpecError) as info:
        load(tmp_path, text)
    return info.value


def case_error(tmp_path, text, name="a"):
    """The SpecError of one case of the file (the file itself loads)."""
    loaded = {entry.name: entry for entry in load(tmp_path, text)}
    entry = loaded[name]
    assert entry.case is None, f"case {name!r} unexpectedly loaded"
    assert entry.error is not None
    return entry.error


def line_with(text, needle):
    """1-based line of the first line of ``text`` containing ``needle``."""
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)


def any_error(tmp_path, text, name):
    """The SpecError that stops case ``name``: its own, or the whole file's."""
    try:
        entries = {entry.name: entry for entry in load(tmp_path, text)}
    except SpecError as error:
        return error
    assert entries[name].error is not None, f"case {name!r} unexpectedly loaded"
    return entries[name].error


def one_case(extra="", inputs="args:\n        - {shape: [2]}"):
    """A valid case `a` (its name on line 2) plus ``extra`` lines at case level."""
    return (
        "cases:\n"
        "  a:\n"
        "    description: a case\n"
        "    model: {target: 'models.py:Model'}\n"
        "    inputs:\n"
        f"      {inputs}\n"
        f"{extra}"
    )


def tensor_case(spec):
    """Case `a` whose only input is the tensor spec ``spec`` (on line 7)."""
    return one_case(inputs=f"args:\n        - {spec}")


# --- valid files ------------------------------------------------------------------------------


def test_minimal_case_gets_the_documented_defaults(tmp_path):
    (entry,) = load(tmp_path, one_case())

    assert entry.error is None
    case = entry.case
    assert isinstance(case, Case)
    assert case.name == "a"
    assert case.line == 2
    assert case.description == "a case"
    assert case.model.target == "models.py:Model"
    assert case.model.args == []
    assert case.model.kwargs == {}
    assert case.model.mode == "eval"
    assert case.inputs == {"args": [{"shape": [2]}]}
    assert case.seed == 0
    assert case.captures == ("export",)
    assert case.checks == ALL_CHECKS
    assert case.xfails == ()


def test_minimal_case_has_no_exact_expectations_and_default_steps(tmp_path):
    (entry,) = load(tmp_path, one_case())
    expect = entry.case.expect

    assert expect.placeholders is None
    assert expect.modules is None
    assert expect.mutated_buffers is None
    assert (expect.parity.atol, expect.parity.rtol, expect.parity.steps) == (None, None, 1)
    assert expect.mutation_steps == 3


def test_case_knows_its_file_location_and_base_dir(tmp_path):
    path = write(tmp_path, one_case())

    (entry,) = load_case_file(path)

    assert entry.case.path == path
    assert entry.case.location.endswith("cases.yaml:2")
    assert entry.case.base_dir == tmp_path


def test_fully_specified_case_keeps_every_field(tmp_path):
    text = one_case(
        "    seed: 7\n"
        "    captures: [export, export-strict]\n"
        "    checks: [parity, signature]\n"
        "    expect:\n"
        "      placeholders:\n"
        "        - {name: p_w, kind: parameter, target: w}\n"
        "        - {name: x, kind: user_input}\n"
        "      modules: [lin]\n"
        "      mutated_buffers: []\n"
        "      parity: {atol: 0.1, rtol: 0.0, steps: 2}\n"
        "      mutation: {steps: 5}\n"
        "    xfail:\n"
        "      reason: known\n"
        "      captures: [export-strict]\n"
        "      strict: false\n"
    ).replace("model: {target: 'models.py:Model'}", "model: {target: 'm.py:M', mode: train}")

    (entry,) = load(tmp_path, text)
    case = entry.case

    assert entry.error is None
    assert case.seed == 7
    assert case.model.mode == "train"
    assert case.captures == ("export", "export-strict")
    assert [p.render() for p in case.expect.placeholders] == [
        "p_w: parameter -> w",
        "x: user_input",
    ]
    assert case.expect.placeholders_line == line_with(text, "placeholders:")
    assert case.expect.modules == ["lin"]
    assert case.expect.modules_line == line_with(text, "modules:")
    assert case.expect.mutated_buffers == []
    assert (case.expect.parity.atol, case.expect.parity.rtol, case.expect.parity.steps) == (
        0.1,
        0.0,
        2,
    )
    assert case.expect.mutation_steps == 5
    (xfail,) = case.xfails
    assert (xfail.reason, xfail.captures, xfail.checks, xfail.strict) == (
        "known",
        ("export-strict",),
        None,
        False,
    )


def test_checks_are_kept_in_canonical_order(tmp_path):
    (entry,) = load(tmp_path, one_case("    checks: [parity, signature]\n"))

    assert entry.case.checks == ("signature", "parity")


def test_xfail_list_applies_per_capture_and_check(tmp_path):
    text = one_case(
        "    captures: [export, export-strict]\n"
        "    xfail:\n"
        "      - {reason: strict only, captures: [export-strict]}\n"
        "      - {reason: parity only, checks: [parity]}\n"
    )

    (entry,) = load(tmp_path, text)
    case = entry.case

    assert case.xfail_for("export-strict", "signature", "cpu").reason == "strict only"
    assert case.xfail_for("export", "parity", "cpu").reason == "parity only"
    assert case.xfail_for("export", "signature", "cpu") is None
    assert all(x.strict for x in case.xfails)


def test_model_args_and_kwargs_are_kept_verbatim(tmp_path):
    text = one_case().replace(
        "model: {target: 'models.py:Model'}",
        "model:\n"
        "      target: m.py:M\n"
        "      args: [1, {_target_: 'm.py:Sub', _args_: [2], k: 3}]\n"
        "      kwargs: {dim: 4}",
    )

    (entry,) = load(tmp_path, text)

    assert entry.case.model.args == [1, {"_target_": "m.py:Sub", "_args_": [2], "k": 3}]
    assert entry.case.model.kwargs == {"dim": 4}


def test_cases_come_in_file_order_with_their_lines(tmp_path):
    text = one_case() + one_case().replace("cases:\n", "").replace("  a:", "  b:")

    entries = load(tmp_path, text)

    assert [(e.name, e.line) for e in entries] == [("a", 2), ("b", line_with(text, "  b:"))]


def test_factory_inputs_skip_tensor_spec_rules(tmp_path):
    (entry,) = load(tmp_path, one_case(inputs="factory: 'm.py:make'\n      kwargs: {n: 3}"))

    assert entry.error is None
    assert entry.case.inputs == {"factory": "m.py:make", "kwargs": {"n": 3}}


# --- file-level errors ---------------------------------------------------------------------------


def test_yaml_syntax_error_is_a_file_error_at_its_line(tmp_path):
    error = file_error(tmp_path, "cases:\n  a: [1, 2\n  b: 3\n")

    assert error.line == 3
    assert error.message.startswith("invalid YAML:")
    assert "expected ',' or ']'" in error.message
    assert str(error).endswith("cases.yaml:3: " + error.message)


def test_tab_indentation_is_a_yaml_error_at_its_line(tmp_path):
    error = file_error(
        tmp_path, one_case("    seed:\t1\n").replace("    description", "\tdescription")
    )

    assert error.line == 3
    assert "found character '\\t' that cannot start any token" in error.message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "", "# only a comment\n"])
def test_top_level_that_is_not_a_mapping_is_a_file_error(tmp_path, text):
    error = file_error(tmp_path, text)

    assert error.line == 1
    assert error.message == "a case file is a mapping with a top-level `cases:` key"


def test_missing_cases_key_is_a_file_error(tmp_path):
    error = file_error(tmp_path, "{}\n")

    assert error.message == "<top level>: 'cases' is a required property"


def test_misspelled_cases_key_suggests_the_right_one(tmp_path):
    error = file_error(tmp_path, "# header\ncase:\n  a: {}\n")

    assert error.line == 2
    assert "unknown key 'case' in <top level> (did you mean 'cases'?)" in error.message
    assert "allowed: cases" in error.message


def test_empty_cases_mapping_is_a_file_error(tmp_path):
    error = file_error(tmp_path, "cases: {}\n")

    assert error.line == 1
    assert "should be non-empty" in error.message


def test_duplicate_case_name_is_a_file_error_naming_both_lines(tmp_path):
    text = one_case() + "  a:\n    description: again\n"

    error = file_error(tmp_path, text)

    assert error.line == line_with(text, "description: again") - 1
    assert "duplicate key 'a' (first defined on line 2)" in error.message


def test_python_tags_are_refused_as_invalid_yaml(tmp_path):
    error = file_error(tmp_path, "cases: !!python/object/apply:os.system ['echo pwned']\n")

    assert error.line == 1
    assert "could not determine a constructor" in error.message


def test_unreadable_file_is_a_file_error(tmp_path):
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"cases: \xff\xfe\n")

    with pytest.raises(SpecError, match="cannot read case file"):
        load_case_file(path)


def test_spec_error_without_a_line_shows_only_the_path(tmp_path):
    error = SpecError("broken", tmp_path / "x.yaml")

    assert str(error) == f"{tmp_path / 'x.yaml'}: broken"


# --- case-level schema errors --------------------------------------------------------------------


def test_unknown_case_key_suggests_the_closest_one(tmp_path):
    text = one_case("    captrues: [export]\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "captrues")
    assert "unknown key 'captrues' in cases.a (did you mean 'captures'?)" in error.message
    assert (
        "allowed: captures, checks, description, devices, expect, inputs, loss_output, model, "
        "requires, seed, timeout, torch, when, xfail" in (error.message)
    )


def test_unknown_key_without_a_close_match_lists_the_allowed_ones(tmp_path):
    error = case_error(tmp_path, one_case("    zzzzzz: 1\n"))

    assert "did you mean" not in error.message
    assert "unknown key 'zzzzzz' in cases.a; allowed:" in error.message


def test_unknown_nested_key_names_its_path(tmp_path):
    text = one_case().replace("model: {target: 'models.py:Model'}", "model:\n      targte: m.py:M")

    error = case_error(tmp_path, text)

    assert error.line == 5
    assert "unknown key 'targte' in cases.a.model (did you mean 'target'?)" in error.message


def test_wrong_type_names_the_path_and_the_expected_type(tmp_path):
    text = one_case("    seed: abc\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "seed: abc")
    assert error.message == "cases.a.seed: 'abc' is not of type 'integer'"


def test_missing_required_case_key_points_at_the_case(tmp_path):
    text = "cases:\n  a:\n    model: {target: 'm.py:M'}\n    inputs: {}\n"

    error = case_error(tmp_path, text)

    assert error.line == 2
    assert error.message == "cases.a: 'description' is a required property"


def test_malformed_target_is_reported_with_its_pattern(tmp_path):
    text = one_case().replace("'models.py:Model'", "'models.py'")

    error = case_error(tmp_path, text)

    assert error.line == 4
    assert "cases.a.model.target: 'models.py' does not match" in error.message


def test_bad_dtype_lists_the_allowed_dtypes(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], dtype: float33}"))

    assert error.line == 7
    assert error.message.startswith("cases.a.inputs.args[0].dtype: 'float33' is not one of: ")
    assert "float32, float64" in error.message
    assert "bfloat16" in error.message


def test_bad_capture_lists_the_allowed_captures(tmp_path):
    text = one_case("    captures: [exprot]\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "exprot")
    assert error.message == (
        "cases.a.captures[0]: 'exprot' is not one of: export, export-strict, dynamo, "
        "dynamo-legacy, aot-joint"
    )


def test_bad_check_names_its_index(tmp_path):
    error = case_error(tmp_path, one_case("    checks: [parity, nope]\n"))

    assert error.message == (
        "cases.a.checks[1]: 'nope' is not one of: signature, hierarchy, mutation, parity, moved, "
        "consistency, recorded"
    )


def test_bad_placeholder_kind_lists_the_allowed_kinds(tmp_path):
    text = one_case("    expect:\n      placeholders:\n        - {name: w, kind: paramter}\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "paramter")
    assert error.message.startswith(
        "cases.a.expect.placeholders[0].kind: 'paramter' is not one of:"
    )
    assert "parameter, buffer, constant, custom_obj, token, user_input" in error.message


def test_bad_init_lists_the_allowed_inits(tmp_path):
    error = case_error(tmp_path, tensor_case("{shape: [2], init: normal}"))

    assert "'normal' is not one of: randn, rand, randint, zeros, ones, arange, full" in (
        error.message
    )


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


# --- one broken case does not hide the others ---------------------------------------------------


def test_a_broken_case_does_not_hide_the_others(tmp_path):
    text = (
        one_case() + "  schema_broken:\n    description: x\n    model: {target: 'm.py:M'}\n"
        "    inputs: {}\n    seed: -1\n"
        + "  semantics_broken:\n    description: y\n    model: {target: 'm.py:M'}\n"
        "    inputs:\n      args: [{shape: [2], init: full}]\n"
        + "  fine:\n    description: z\n    model: {target: 'm.py:M'}\n    inputs: {}\n"
    )

    entries = {e.name: e for e in load(tmp_path, text)}

    assert list(entries) == ["a", "schema_broken", "semantics_broken", "fine"]
    assert entries["a"].case is not None
    assert entries["fine"].case is not None
    assert entries["schema_broken"].error.message == (
        "cases.schema_broken.seed: -1 is less than the minimum of 0"
    )
    assert entries["schema_broken"].error.line == line_with(text, "seed: -1")
    assert entries["semantics_broken"].error.message == "init 'full' needs `value`"
    assert entries["semantics_broken"].error.line == line_with(text, "init: full")


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


# --- the schema and the shipped cases ------------------------------------------------------------


def test_packaged_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(case_schema())


def test_packaged_schema_is_the_json_file_shipped_in_the_package():
    import pytest_exportcheck

    path = Path(pytest_exportcheck.__file__).parent / "case.schema.json"

    assert json.loads(path.read_text("utf-8")) == case_schema()


@pytest.mark.skipif(not SHIPPED_CASE_FILES, reason="no case files under cases/")
@pytest.mark.parametrize(
    "path", SHIPPED_CASE_FILES, ids=[str(p.relative_to(REPO)) for p in SHIPPED_CASE_FILES]
)
def test_shipped_case_file_validates_against_the_schema(path):
    document = load_yaml(path.read_text("utf-8"))

    jsonschema.Draft202012Validator(case_schema()).validate(document)


@pytest.mark.skipif(not SHIPPED_CASE_FILES, reason="no case files under cases/")
@pytest.mark.parametrize(
    "path", SHIPPED_CASE_FILES, ids=[str(p.relative_to(REPO)) for p in SHIPPED_CASE_FILES]
)
def test_shipped_case_file_loads_without_errors(path):
    errors = [str(e.error) for e in load_case_file(path) if e.error is not None]

    assert errors == []


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
