"""How YAML cases become pytest items: names, selection, where cases are found."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, write_cases


def test_one_item_per_case_capture_and_check(project: pytest.Pytester) -> None:
    write_cases(
        project,
        """
        cases:
          mlp:
            description: a plain MLP
            model: {target: models.py:Mlp}
            inputs: {args: [{shape: [2, 4]}]}
            captures: [export, export-strict]
        """,
    )
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "cases/main.yaml::mlp::signature[[]export-cpu[]]",
            "cases/main.yaml::mlp::hierarchy[[]export-cpu[]]",
            "cases/main.yaml::mlp::mutation[[]export-cpu[]]",
            "cases/main.yaml::mlp::parity[[]export-cpu[]]",
            "cases/main.yaml::mlp::mode[[]export-cpu[]]",
            "cases/main.yaml::mlp::signature[[]export-strict-cpu[]]",
            "cases/main.yaml::mlp::hierarchy[[]export-strict-cpu[]]",
            "cases/main.yaml::mlp::mutation[[]export-strict-cpu[]]",
            "cases/main.yaml::mlp::parity[[]export-strict-cpu[]]",
            "cases/main.yaml::mlp::mode[[]export-strict-cpu[]]",
            "cases/main.yaml::mlp::consistency[[]cpu[]]",
            "11 tests collected*",
        ]
    )


def test_keyword_selection_reads_naturally(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "-k", "mlp and parity", "-q")
    result.assert_outcomes(passed=1, deselected=4)


def test_checks_key_limits_the_items(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("inputs:", "checks: [parity]\n    inputs:"))
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["cases/main.yaml::mlp::parity[[]export-cpu[]]", "1 test collected*"]
    )


def test_flag_without_paths_collects_the_case_dirs_not_testpaths(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    project.makeini("[pytest]\ntestpaths = tests\n")
    project.mkdir("tests")
    (project.path / "tests" / "test_other.py").write_text("def test_other(): pass\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["cases/main.yaml::mlp::signature*"])
    result.stdout.no_fnmatch_line("*test_other*")
    # The header says what is collected: pytest's own line would name testpaths.
    header = project.runpytest("--exportcheck", "--collect-only")
    header.stdout.fnmatch_lines(
        ["exportcheck: collecting exportcheck_paths (cases), not testpaths"]
    )
    header.stdout.no_fnmatch_line("testpaths: tests")


def test_flag_without_paths_loads_the_case_dirs_conftests_not_testpaths(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    project.makeini("[pytest]\ntestpaths = tests\n")
    project.mkdir("tests")
    # A test suite's conftest may import much (this project's imports torch): the
    # corpus run must not pay for it, in the controller or any worker.
    (project.path / "tests" / "conftest.py").write_text("raise RuntimeError('loaded')\n")
    (project.path / "cases" / "conftest.py").write_text("LOADED = True\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["cases/main.yaml::mlp::signature*", "5 tests collected*"])
    assert result.ret == 0
    without_flag = project.runpytest("--collect-only", "-q")
    without_flag.stderr.fnmatch_lines(["*RuntimeError: loaded*"])


def test_case_dirs_come_from_the_ini(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("models.py", "../cases/models.py"), "models/zoo.yaml")
    project.makeini("[pytest]\nexportcheck_paths = models\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["models/zoo.yaml::mlp::signature*", "5 tests collected*"])


def test_yaml_outside_case_dirs_is_ignored_unless_named(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    write_cases(project, MLP_CASE.replace("models.py", "../cases/models.py"), "other/x.yaml")
    (project.path / "ci.yml").write_text("jobs: {build: {}}\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["cases/main.yaml::mlp::signature*", "5 tests collected*"])
    named = project.runpytest("--exportcheck", "--collect-only", "-q", "other/x.yaml")
    named.stdout.fnmatch_lines(["other/x.yaml::mlp::signature*", "5 tests collected*"])


def test_xfail_scoped_to_a_capture_and_check(project: pytest.Pytester, dist: list[str]) -> None:
    write_cases(
        project,
        """
        cases:
          counter:
            description: tight parity on purpose
            model: {target: models.py:PythonCounter}
            inputs: {args: [{shape: [2, 4]}]}
            checks: [mutation, parity]
            xfail: {reason: "python-side state is baked into the graph", checks: [mutation]}
        """,
    )
    result = project.runpytest("--exportcheck", "-q", "-rxX", *dist)
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["XFAIL*mutation*python-side state is baked into the graph"])


def test_xfail_that_passes_fails_the_run(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("inputs:", "xfail: {reason: stale, checks: [parity]}\n    inputs:"),
    )
    result = project.runpytest("--exportcheck", "-q")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*stale*"])


def test_last_failed_reruns_only_the_failed_items(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE
        + MLP_CASE.replace("cases:\n", "")
        .replace("mlp:", "broken:")
        .replace("Mlp", "PythonCounter"),
    )
    project.runpytest("--exportcheck").assert_outcomes(passed=9, failed=1)
    rerun = project.runpytest("--exportcheck", "--lf")
    rerun.assert_outcomes(failed=1, deselected=9)


def test_a_directory_named_on_the_command_line_holds_cases(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("models.py", "../cases/models.py"), "zoo/x.yaml")
    result = project.runpytest("--exportcheck", "--collect-only", "-q", "zoo")
    result.stdout.fnmatch_lines(["zoo/x.yaml::mlp::signature*", "5 tests collected*"])


def test_no_case_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--exportcheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--exportcheck: no case directory to collect (*cases not found)*"]
    )
