"""Case files → Case objects, or a SpecError at the file:line a case author must fix:
valid files, file-level and schema errors, the schema and the shipped cases.
The rules a schema cannot state are in test_unit_spec_rules.py."""

import json
from pathlib import Path

import jsonschema
import pytest
from speckit import (
    case_error,
    file_error,
    line_with,
    load,
    one_case,
    tensor_case,
    write,
)

from pytest_exportcheck.spec import Case, SpecError, load_case_file
from pytest_exportcheck.spec.case import ALL_CHECKS
from pytest_exportcheck.spec.load import case_schema
from pytest_exportcheck.spec.yaml_lines import load_yaml

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CASE_FILES = sorted((REPO / "cases").glob("**/*.yaml")) + sorted(
    (REPO / "cases").glob("**/*.yml")
)

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
    # Every check but shapes, which has nothing to hold a case without `dynamic:` to.
    assert case.checks == tuple(c for c in ALL_CHECKS if c != "shapes")
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
        "allowed: captures, checks, description, devices, dynamic, expect, inputs, load_imports, "
        "loss_output, lower, model, preserve_signatures, programs, requires, seed, timeout, torch, "
        "when, xfail" in (error.message)
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
        "cases.a.checks[1]: 'nope' is not one of: signature, hierarchy, mutation, parity, shapes, "
        "moved, mode, consistency, recorded, lowered-inductor, lowered-aoti, lowered-executorch, "
        "lowered-onnx, lowered-saved, loaded"
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


def test_an_unknown_lowering_target_names_the_known_ones(tmp_path):
    text = one_case("    lower: [aoti, tflite]\n")

    error = case_error(tmp_path, text)

    assert error.line == line_with(text, "tflite")
    assert error.message == (
        "cases.a.lower[1]: 'tflite' is not one of: inductor, aoti, executorch, onnx, saved"
    )


def test_load_imports_take_module_names_and_python_files(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        one_case("    lower: [saved]\n    load_imports: [my_ops.kernels, models/x.py]\n")
    )

    (loaded,) = load_case_file(path)

    assert loaded.case.load_imports == ("my_ops.kernels", "models/x.py")
    text = one_case("    lower: [saved]\n    load_imports: ['pkg:attr']\n")
    error = case_error(tmp_path, text)
    assert error.line == line_with(text, "pkg:attr")
    assert error.message.startswith("cases.a.load_imports[0]: 'pkg:attr' does not match")


def test_lower_adds_its_targets_as_checks_after_the_others(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(one_case("    checks: [parity]\n    lower: [aoti, inductor]\n"))

    (loaded,) = load_case_file(path)

    assert loaded.case.checks == ("parity", "lowered-inductor", "lowered-aoti")
