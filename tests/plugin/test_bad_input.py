"""Bad input: each problem is reported at its stage with file:line, and the run goes on."""

from __future__ import annotations

import json

import pytest
from casekit import MLP_CASE, inject, write_cases


def good_file(pytester: pytest.Pytester) -> None:
    write_cases(pytester, MLP_CASE.replace("  mlp:", "  good:"), "cases/good.yaml")


def test_malformed_yaml_fails_one_item_and_the_rest_runs(project: pytest.Pytester) -> None:
    good_file(project)
    write_cases(project, "cases:\n  broken: {description: [unclosed\n", "cases/bad.yaml")
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        ["*[[]case[]] cases/bad.yaml:3: invalid YAML: *", "FAILED cases/bad.yaml::load*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_unknown_key_names_the_line_and_suggests_the_key(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE
        + """  typo:
    description: a misspelt key
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    captrues: [export]
""",
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:10: unknown key 'captrues' in cases.typo "
            "(did you mean 'captures'?)*"
        ]
    )


def test_wrong_type_names_the_line(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("[2, 4]", "[2, four]"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:5: cases.mlp.inputs.args[[]0[]].shape[[]1[]]: 'four' is not of type 'integer'"
        ]
    )


def test_duplicate_case_name_is_an_error_not_a_silent_override(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE + MLP_CASE.replace("cases:\n", ""))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cases/main.yaml:7: invalid YAML: *duplicate key 'mlp' (first defined on line 2)*"]
    )


def test_unimportable_model_is_a_case_error(project: pytest.Pytester) -> None:
    good_file(project)
    write_cases(
        project, MLP_CASE.replace("models.py:Mlp", "no_such_pkg.models:Net"), "cases/bad.yaml"
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=5)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/bad.yaml:2: cannot import 'no_such_pkg.models': "
            "ModuleNotFoundError: No module named 'no_such_pkg'",
        ]
    )


def test_target_that_is_not_a_module_is_a_case_error(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("models.py:Mlp", "models.py:not_a_module"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:2: models.py:not_a_module returned a int, not a torch.nn.Module"
        ]
    )


# Each bad file of the tests above in one project, and a line its failure prints.
BAD_FILES = {
    "bad_yaml": ("cases:\n  broken: {description: [unclosed\n", "invalid YAML: *"),
    "typo": (
        MLP_CASE.replace("  mlp:", "  typo:").replace(
            "models.py:Mlp}", "models.py:Mlp}\n    captrues: [export]"
        ),
        "unknown key 'captrues' in cases.typo (did you mean 'captures'?)*",
    ),
    "wrong_type": (MLP_CASE.replace("[2, 4]", "[2, four]"), "*'four' is not of type 'integer'"),
    "duplicate": (MLP_CASE + MLP_CASE.replace("cases:\n", ""), "*duplicate key 'duplicate'*"),
    "unimportable": (
        MLP_CASE.replace("models.py:Mlp", "no_such_pkg.models:Net"),
        "cannot import 'no_such_pkg.models': ModuleNotFoundError: *",
    ),
    "not_a_module": (
        MLP_CASE.replace("models.py:Mlp", "models.py:not_a_module"),
        "models.py:not_a_module returned a int, not a torch.nn.Module",
    ),
    "bad_tensor": (
        MLP_CASE.replace("{shape: [2, 4]}", "{shape: [2, 4], dtype: int64}"),
        "init 'randint' needs `high`*",
    ),
}


def test_under_xdist_each_bad_file_fails_as_in_one_process(project: pytest.Pytester) -> None:
    """What xdist adds is the hand-over of each failure from worker to controller: one
    xdist run of every bad file above reports each item as one process does."""
    good_file(project)
    for name, (text, _) in BAD_FILES.items():
        # Case names are the run's, not the file's: each file's its own.
        write_cases(project, text.replace("  mlp:", f"  {name}:"), f"cases/{name}.yaml")
    reports = {}
    for label, args in [("one", ["-p", "no:xdist"]), ("xdist", ["-n", "1"])]:
        result = project.runpytest("--exportcheck", *args, f"--exportcheck-report={label}.json")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        for name, (_, shown) in BAD_FILES.items():
            result.stdout.fnmatch_lines([f"*[[]case[]] cases/{name}.yaml:*: {shown}"])
        doc = json.loads((project.path / f"{label}.json").read_text())
        reports[label] = {i["nodeid"]: (i["outcome"], i["message"]) for i in doc["items"]}
    assert reports["xdist"] == reports["one"]
    # One item for each file refused whole, one per check for the two cases that load.
    assert sum(outcome == "failed" for outcome, _ in reports["one"].values()) == 5 + 2 * 5


def test_eager_forward_that_raises_is_a_case_error_reported_once(project: pytest.Pytester) -> None:
    good_file(project)
    write_cases(project, MLP_CASE.replace("Mlp", "Raising"), "cases/bad.yaml")
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=5)
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/bad.yaml:2: the eager forward raised: ValueError: forward is broken on purpose",
            "*raised from user code:",
            '*File "cases/models.py", line *, in forward',
            '*raise ValueError("forward is broken on purpose")',
        ]
    )
    assert result.stdout.str().count("forward is broken on purpose\n") >= 1
    result.stdout.fnmatch_lines(
        ["*(full report on cases/bad.yaml::mlp::signature[[]export-cpu[]])"]
    )


def test_export_that_raises_is_a_capture_failure_reported_once(project: pytest.Pytester) -> None:
    good_file(project)
    write_cases(project, MLP_CASE.replace("Mlp", "DataDependent"), "cases/bad.yaml")
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=5)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*[[]capture: data-dependent guard[]] cases/bad.yaml:2: torch.export.export "
            "(non-strict) raised: *",
            "*raised from user code:*",
            "*if x.sum() > 0:*",
        ]
    )
    assert out.count("raised from user code:") == 1
    assert out.count("(full report on cases/bad.yaml::mlp::signature[export-cpu])") == 4


def test_full_traceback_with_very_verbose(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "Raising"))
    result = project.runpytest("--exportcheck", "-vv", "-k", "signature")
    result.stdout.fnmatch_lines(
        ["*Traceback (most recent call last):*", "*ValueError: forward is broken on purpose"]
    )


def test_full_traceback_with_exportcheck_tb_long(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "DataDependent"))
    short = project.runpytest("--exportcheck", "-k", "signature")
    assert "Traceback (most recent call last):" not in short.stdout.str()
    result = project.runpytest("--exportcheck", "--exportcheck-tb", "long", "-k", "signature")
    result.stdout.fnmatch_lines(
        ["*[[]capture: data-dependent guard[]]*", "*Traceback (most recent call last):*"]
    )


def test_bad_tensor_spec_is_caught_at_collection(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("{shape: [2, 4]}", "{shape: [2, 4], dtype: int64}"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cases/main.yaml:5: init 'randint' needs `high`*"])


def test_an_xfail_for_export_does_not_hide_a_broken_case(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("models.py:Mlp", "models.py:Mlpp").replace(
            "inputs:", "xfail: {reason: strict export cannot trace it}\n    inputs:"
        ),
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*[[]case[]] cases/main.yaml:2: target 'models.py:Mlpp': *"])


def test_an_unexpected_exception_is_an_internal_error_with_its_traceback(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    inject(project, "record.placeholders = None")
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]internal[]] cases/main.yaml:2: unexpected TypeError: *",
            "*Traceback (most recent call last):*",
        ]
    )


def test_the_summary_line_carries_the_headline_under_xdist(project: pytest.Pytester) -> None:
    write_cases(
        project, MLP_CASE.replace("Mlp", "PythonCounter") + "    expect: {parity: {steps: 2}}\n"
    )
    result = project.runpytest("--exportcheck", "-n", "1", "-rf", "-k", "parity")
    result.stdout.fnmatch_lines(
        ["FAILED cases/main.yaml::mlp::parity[[]export-cpu[]] - [[]parity[]] step 2: output: 8*"]
    )


def test_the_tensor_size_limit_comes_from_the_ini(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("[2, 4]", "[100, 100]"))
    project.makeini("[pytest]\nexportcheck_max_elements = 1000\n")
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:5: tensor of shape [[]100, 100[]] has 10000 elements, "
            "over the limit of 1000 (the exportcheck_max_elements ini option)"
        ]
    )


def test_a_model_over_the_ini_limit_is_refused_before_it_is_allocated(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE.replace("models.py:Mlp}", "models.py:Mlp, kwargs: {dim: 64}}"))
    project.makeini("[pytest]\nexportcheck_max_elements = 100\n")
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:2: constructing models.py:Mlp: a tensor of shape "
            "[[]8, 64[]] (512 elements, aten.empty.memory_format) is over the limit of 100*"
        ]
    )


NOISY_CAPTURE = """
cases:
  noisy:
    description: prints a graph dump to stderr while export fails
    model: {target: models.py:PrintsThenBranches}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export]
    checks: [signature, parity]
"""


def test_what_torch_prints_while_a_capture_fails_is_not_pasted_into_the_report(
    project: pytest.Pytester,
) -> None:
    write_cases(project, NOISY_CAPTURE)
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["(torch printed or logged * lines while capturing; -vv shows them)"]
    )
    result.stdout.no_fnmatch_line("*graph dump line*")


def test_vv_shows_what_torch_printed(project: pytest.Pytester) -> None:
    write_cases(project, NOISY_CAPTURE)
    result = project.runpytest("--exportcheck", "-vv")
    result.stdout.fnmatch_lines(
        ["torch printed or logged while capturing (* lines):", "graph dump line 0"]
    )
