"""The ``exportcheck`` fixture's items in the run's reports, beside the YAML items.

A test that checks a model from Python makes the same items a YAML case makes;
with ``--exportcheck`` they appear in the matrix, the JSON and Markdown reports
and ``--exportcheck-compare``, under node ids that extend the test's own.
"""

from __future__ import annotations

import json

import pytest
from casekit import write_api_test as write_test

OFF = ["-p", "no:cacheprovider"]

TESTS = """
def test_counter(exportcheck):
    exportcheck(model("Counter"), args=(torch.randn(2, 4),), captures=["export", "dynamo-legacy"],
                checks=["mutation", "parity"], name="counter")

def test_python_state(exportcheck):
    exportcheck(model("PythonCounter"), args=(torch.randn(2, 4),), checks=["mutation"],
                name="python_state", xfail={"reason": "python state baked in",
                                            "checks": ["mutation"], "stage": "mutation"})
"""
COUNTER = "test_model.py::test_counter::counter"
PYTHON_STATE = "test_model.py::test_python_state::python_state"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", *OFF, "test_model.py", *args)


def items(pytester: pytest.Pytester, name: str) -> dict[str, dict]:
    doc = json.loads((pytester.path / name).read_text())
    return {item["nodeid"]: item for item in doc["items"]}


def test_fixture_items_are_in_the_matrix_and_the_reports_under_their_test_file(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_test(project, TESTS)
    result = run(project, *dist, "--exportcheck-report", "report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= exportcheck matrix =*",
            "*export  dynamo-legacy",
            "case*MP*MP",
            "test_model.py",
            "  test_counter::counter*..*..",
            "  test_python_state::python_state*x",
            "5 items: 4 passed, 1 xfailed",
        ]
    )
    found = items(project, "report.json")
    assert sorted(found) == [
        f"{COUNTER}::mutation[dynamo-legacy-cpu]",
        f"{COUNTER}::mutation[export-cpu]",
        f"{COUNTER}::parity[dynamo-legacy-cpu]",
        f"{COUNTER}::parity[export-cpu]",
        f"{PYTHON_STATE}::mutation[export-cpu]",
    ]
    parity = found[f"{COUNTER}::parity[export-cpu]"]
    assert (parity["case"], parity["file"], parity["capture"], parity["check"]) == (
        "counter", "test_model.py", "export", "parity",
    )  # fmt: skip
    assert parity["outcome"] == "passed" and parity["max_abs_err"] is not None
    xfailed = found[f"{PYTHON_STATE}::mutation[export-cpu]"]
    assert (xfailed["outcome"], xfailed["stage"], xfailed["reason"]) == (
        "xfailed", "mutation", "python state baked in",
    )  # fmt: skip
    assert xfailed["message"].startswith("[mutation] after step 2/3: output:")
    assert (
        "| `test_model.py` | `test_counter::counter` | `..` | `..` |"
        in (project.path / "report.md").read_text()
    )


def test_compare_names_a_fixture_item_that_regressed(project: pytest.Pytester) -> None:
    write_test(project, TESTS)
    run(project, "--exportcheck-report", "base.json")
    # The xfail is dropped: the known failure now fails the test and is a regression.
    write_test(project, TESTS.replace('"stage": "mutation"', '"stage": "parity"'))
    result = run(project, "--exportcheck-compare", "base.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "1 regression; 4 unchanged",
            "regressions (1):",
            f"  {PYTHON_STATE}::mutation[[]export-cpu[]]  xfailed -> failed",
            "      [[]mutation[]] expected xfail (stage parity), got*",
        ]
    )


def test_a_deselected_fixture_test_is_not_run_not_removed(project: pytest.Pytester) -> None:
    write_test(project, TESTS)
    run(project, "--exportcheck-report", "base.json")
    result = run(project, "-k", "counter and not python", "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(["no changes; 4 unchanged; 1 baseline item not run here *"])
    result.stdout.no_fnmatch_line("*removed item*")


# Issue 28, item 9: a deliberately xfailed test's call and another test's call of a
# model of the same class were one matrix row (the xfailed call showed as F in the
# other test's row) and the plugin counted the xfailed call's item as failed.
SAME_CLASS = """
import pytest

@pytest.mark.xfail(reason="data-dependent branch, known")
def test_known_failure(exportcheck):
    exportcheck(model("DataDependent"), args=(torch.randn(4),), checks=["parity"], name="Net")

def test_working(exportcheck):
    exportcheck(model("Mlp"), args=(torch.randn(2, 4),), checks=["parity"], name="Net")
"""


def test_calls_of_one_class_in_two_tests_are_rows_of_their_own(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_test(project, SAME_CLASS)
    result = run(project, *dist, "--exportcheck-report", "report.json")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "test_model.py",
            "  test_known_failure::Net  x",
            "  test_working::Net        .",
            "2 items: 1 passed, 1 xfailed",
        ]
    )
    found = items(project, "report.json")
    known = found["test_model.py::test_known_failure::Net::parity[export-cpu]"]
    assert known["outcome"] == "xfailed"
    assert known["reason"] == "the test is xfailed: data-dependent branch, known"
    assert known["stage"] and known["message"]  # where and how it failed, as a failure tells
    assert found["test_model.py::test_working::Net::parity[export-cpu]"]["outcome"] == "passed"
