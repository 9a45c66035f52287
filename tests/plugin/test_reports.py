"""End-of-run reports: the matrix, --exportcheck-report, --exportcheck-compare, junit properties."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from casekit import MLP_CASE, write_cases

from pytest_exportcheck.spec.compat import torch_version

MIXED = """
cases:
  agree:
    description: two captures that agree
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, dynamo-legacy]
  python_state:
    description: mutation xfails, parity fails at step 2
    model: {target: models.py:PythonCounter}
    inputs: {args: [{shape: [2, 4]}]}
    expect: {parity: {steps: 2}}
    xfail: {reason: python state baked in, checks: [mutation]}
  xpass:
    description: an xfail that does not fail
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [signature]
    xfail: {reason: not really broken, strict: false}
  future:
    description: needs a torch that does not exist
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    torch: "<1.0"
  bad_key:
    description: spec error
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    seeed: 1
"""

MIXED_MATRIX = [
    "*= exportcheck matrix =*",
    "legend: . passed  g passed with gaps  F failed  E error  x xfailed  X xpassed  s skipped  - n/a  "
    "(blank: no such item)",
    "checks: S signature  H hierarchy  M mutation  P parity  N mode  C consistency",
    "                 export  dynamo-legacy",
    "case             SHMPN   SHMPN          C",
    "cases/main.yaml",
    # agree's Counter mutates a buffer: its submodules are replayed from the state eager's
    # call found, so no gap
    "  agree          .....   .-...          .",
    "  python_state   ..xF.",
    "  xpass          X",
    "  future         sssss",
    "  bad_key        broken: [[]case[]] cases/main.yaml:28: unknown key 'seeed' *",
    "23 items: 13 passed, 2 failed, 1 xfailed, 1 xpassed, 5 skipped, 1 not applicable",
]

OFF = ["-p", "no:cacheprovider"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", *OFF, *args)


def report(pytester: pytest.Pytester, name: str = "report.json") -> dict:
    return json.loads((pytester.path / name).read_text())


def items(doc: dict) -> dict[str, dict]:
    return {item["nodeid"]: item for item in doc["items"]}


# -- the matrix ------------------------------------------------------------------------------


def test_the_matrix_has_a_line_per_case_and_a_symbol_per_item(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    result = run(project)
    result.stdout.fnmatch_lines(MIXED_MATRIX)
    assert result.stdout.str().count("exportcheck matrix") == 1  # the controller's only


def test_the_matrix_has_a_line_per_device_when_the_run_has_several(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    result = run(project, "--exportcheck-devices", "cpu,meta")
    result.stdout.fnmatch_lines(
        [
            "                         export",
            "case             device  SHMPN",
            "cases/main.yaml",
            "  mlp            cpu     .....",
            "  mlp            meta    ..---",
        ]
    )


def test_no_matrix_when_no_exportcheck_item_ran(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = run(project, "-k", "no_such_case")
    assert "exportcheck matrix" not in result.stdout.str()


# -- the JSON and Markdown reports ------------------------------------------------------------


def test_the_json_report_has_every_item_and_the_run(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    run(project, "--exportcheck-report", "report.json")
    doc = report(project)
    assert doc["format"] == 1
    assert [i["nodeid"] for i in doc["items"]] == sorted(i["nodeid"] for i in doc["items"])
    assert doc["totals"] == {
        "items": 23, "passed": 13, "failed": 2, "error": 0, "xfailed": 1, "xpassed": 1,
        "skipped": 5, "not_applicable": 1,
    }  # fmt: skip
    assert doc["run"]["torch"] == str(torch_version())
    assert doc["run"]["exitstatus"] == pytest.ExitCode.TESTS_FAILED
    assert {"python", "platform", "started", "finished", "duration"} <= doc["run"].keys()
    found = items(doc)
    assert (
        found["cases/main.yaml::agree::hierarchy[dynamo-legacy-cpu]"]["outcome"] == "not_applicable"
    )
    assert found["cases/main.yaml::agree::consistency[cpu]"]["capture"] == "export+dynamo-legacy"
    assert found["cases/main.yaml::xpass::signature[export-cpu]"]["outcome"] == "xpassed"
    broken = found["cases/main.yaml::bad_key"]
    assert (broken["outcome"], broken["stage"], broken["check"]) == ("failed", "case", None)


def test_a_failure_is_reported_with_its_stage_headline_and_error(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MIXED)
    run(project, "-k", "python_state", "--exportcheck-report", "report.json")
    found = items(report(project))
    parity = found["cases/main.yaml::python_state::parity[export-cpu]"]
    assert parity["case"] == "python_state"
    assert (parity["file"], parity["line"]) == ("cases/main.yaml", 7)
    assert (parity["capture"], parity["check"], parity["device"]) == ("export", "parity", "cpu")
    assert (parity["outcome"], parity["stage"]) == ("failed", "parity")
    assert parity["message"].startswith("[parity] step 2: output: 8 / 8 elements outside")
    assert "\n" not in parity["message"]
    assert parity["max_abs_err"] > 0.1
    assert parity["tolerance"] == "atol=1e-05, rtol=1.3e-06 (float32 default)"
    # The whole text as the terminal shows it, for the HTML report's details.
    assert parity["text"].startswith(parity["message"] + "\n")
    assert "cases/main.yaml:7: case python_state, export on cpu" in parity["text"]
    assert parity["capture_seconds"] > 0
    assert parity["duration"] > 0
    mutation = found["cases/main.yaml::python_state::mutation[export-cpu]"]
    assert (mutation["outcome"], mutation["reason"]) == ("xfailed", "python state baked in")
    assert mutation["message"].startswith("[mutation] ")


TRAIN_STEM = """
cases:
  stem:
    description: conv / batch norm in training mode, whose output depends on the mode
    model: {target: models.py:ConvBatchNorm, mode: train}
    inputs: {args: [{shape: [2, 3, 6, 6]}]}
    captures: [export]
    checks: [signature, hierarchy, mode, parity]
"""


def test_an_item_reports_a_tolerance_and_an_error_only_for_the_values_its_check_judged(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TRAIN_STEM)
    run(project, "--exportcheck-report", "report.json").assert_outcomes(passed=4)
    found = {i["check"]: i for i in report(project)["items"]}
    judged = {c: (i["max_abs_err"], i["tolerance"]) for c, i in found.items()}
    float32 = "atol=1e-05, rtol=1.3e-06 (float32 default)"
    # signature compares no values; mode's comparisons (does eager depend on the mode?
    # does .eval() switch?) only decide what it tells: it reported their 0.13 before.
    # hierarchy's state is compared for identity, its outputs at the case's tolerance:
    # it named the first ("atol=0, rtol=0 (exact)") before.
    assert judged == {
        "signature": (None, None), "mode": (None, None),
        "hierarchy": (0.0, float32), "parity": (0.0, float32),
    }  # fmt: skip
    compared = {c: i["compared"] for c, i in found.items()}
    assert compared["signature"] == compared["mode"] == 0
    assert compared["hierarchy"] > 0 and compared["parity"] > 0


def test_skips_are_reported_with_their_reason(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    run(project, "-k", "future or agree", "--exportcheck-report", "report.json")
    found = items(report(project))
    hierarchy = found["cases/main.yaml::agree::hierarchy[dynamo-legacy-cpu]"]
    assert hierarchy["message"].startswith("not applicable: a Dynamo GraphModule is flat")
    future = found["cases/main.yaml::future::parity[export-cpu]"]
    assert future["outcome"] == "skipped"
    assert future["message"] == f"the case needs torch <1.0; installed: {torch_version()}"


def test_recorded_observations_are_in_the_report(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_RECORDED)
    run(project, "--exportcheck-update", "--exportcheck-report", "report.json")
    (item,) = report(project)["items"]
    assert item["observation"]["modules"] == ["lin"]
    assert item["observation"]["mutations"]["buffers"] == ["count"]


def test_xdist_writes_the_matrix_and_the_report_one_process_writes(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MIXED)
    run(project, "-p", "no:xdist", "--exportcheck-report", "single.json")
    result = run(project, "-n", "2", "--exportcheck-report", "parallel.json")
    result.stdout.fnmatch_lines(MIXED_MATRIX)
    assert result.stdout.str().count("exportcheck matrix") == 1  # the controller's only
    timings = ("duration", "capture_seconds")

    def comparable(name: str) -> list[dict]:
        return [
            {k: v for k, v in item.items() if k not in timings}
            for item in report(project, name)["items"]
        ]

    assert comparable("parallel.json") == comparable("single.json")


@pytest.mark.quick
def test_the_markdown_report_summarizes_the_run(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    run(project, "--exportcheck-report", "out/report.json")
    markdown = (project.path / "out" / "report.md").read_text()
    assert markdown.startswith(
        "## exportcheck: 23 items: 13 passed, 2 failed, 1 xfailed, 1 xpassed, 5 skipped, "
        "1 not applicable\n"
    )
    assert "| file | case | export<br>`SHMPN` | dynamo-legacy<br>`SHMPN` | `C` |" in markdown
    assert "| `cases/main.yaml` | `agree` | `.....` | `.-...` | `.` |" in markdown
    assert "| `cases/main.yaml` | `python_state` | `..xF.` |  |  |" in markdown
    assert "### Failures (2)" in markdown
    assert "| `cases/main.yaml::python_state::parity[export-cpu]` | parity | [parity] step 2" in (
        markdown
    )
    assert "### Not applicable (1)" in markdown
    assert "| dynamo-legacy | hierarchy | 1 | a Dynamo GraphModule is flat" in markdown


def test_reports_are_written_whole_and_leave_no_temporary_file(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    result = run(project, "-n", "1", "--exportcheck-report", "deep/dir/report.json")
    result.stdout.fnmatch_lines(["exportcheck report: */deep/dir/report.json and report.md"])
    assert sorted(p.name for p in (project.path / "deep" / "dir").iterdir()) == [
        "report.json",
        "report.md",
    ]
    assert report(project, "deep/dir/report.json")["totals"]["passed"] == 5


# -- --exportcheck-compare --------------------------------------------------------------------

WRONG_MODULES = MLP_CASE.rstrip() + "\n    expect: {modules: [fc1, fc3]}\n"

COUNTER_RECORDED = """
cases:
  counter:
    description: a counter buffer
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [recorded]
"""


def test_compare_names_a_regression_with_its_headline(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    run(project, "--exportcheck-report", "base.json").assert_outcomes(passed=5)
    write_cases(project, WRONG_MODULES)
    result = run(project, "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(
        [
            "*= exportcheck compare =*",
            f"baseline: torch {torch_version()}, Python *, finished * (base.json)",
            f"this run: torch {torch_version()}, Python *",
            "1 regression; 4 unchanged",
            "regressions (1):",
            "  cases/main.yaml::mlp::hierarchy[[]export-cpu[]]  passed -> failed",
            "      [[]hierarchy[]] *",
        ]
    )
    assert "fail-on-regression" not in result.stdout.str()  # reported, not enforced


def test_the_reports_carry_the_comparison(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    run(project, "--exportcheck-report", "base.json")
    write_cases(project, WRONG_MODULES)
    run(project, "--exportcheck-compare", "base.json", "--exportcheck-report", "now.json")
    comparison = report(project, "now.json")["comparison"]
    assert comparison["baseline"] == "base.json"
    assert comparison["regressions"] == ["cases/main.yaml::mlp::hierarchy[export-cpu]"]
    assert comparison["unchanged"] == 4
    markdown = (project.path / "now.md").read_text()
    assert "### Compared with the baseline\n\n1 regression; 4 unchanged" in markdown
    assert "- `cases/main.yaml::mlp::hierarchy[export-cpu]` passed → failed<br>[hierarchy] " in (
        markdown
    )


def test_compare_names_fixes_new_and_removed_items(project: pytest.Pytester) -> None:
    gone = "\n  gone:\n    description: removed later\n    model: {target: models.py:Mlp}\n"
    gone += "    inputs: {args: [{shape: [2, 4]}]}\n    checks: [signature]\n"
    write_cases(project, WRONG_MODULES + gone)
    run(project, "--exportcheck-report", "base.json")
    write_cases(project, MLP_CASE + gone.replace("gone", "added"))
    result = run(project, "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(
        [
            "1 fix, 1 new item, 1 removed item; 4 unchanged",
            "fixes (1):",
            "  cases/main.yaml::mlp::hierarchy[[]export-cpu[]]  failed -> passed",
            "      was: [[]hierarchy[]] *",
            "new items (1):",
            "  cases/main.yaml::added::signature[[]export-cpu[]]  new: passed",
            "removed items (1):",
            "  cases/main.yaml::gone::signature[[]export-cpu[]]  was: passed",
        ]
    )


def test_items_a_run_deselects_are_not_run_not_removed(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    run(project, "--exportcheck-report", "base.json")
    result = run(project, "-k", "parity", "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(
        [
            "no changes; 1 unchanged; 4 baseline items not run here (deselected, or outside "
            "the paths given)"
        ]
    )
    result.stdout.no_fnmatch_line("*removed item*")


def test_items_of_files_a_run_was_not_given_are_not_run_not_removed(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    write_cases(project, MLP_CASE.replace("mlp:", "other:"), "cases/other.yaml")
    run(project, "--exportcheck-report", "base.json")
    result = run(project, "cases/main.yaml", "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(["no changes; 5 unchanged; 5 baseline items not run here *"])
    result.stdout.no_fnmatch_line("*removed item*")


def test_under_xdist_compare_says_what_one_process_says(project: pytest.Pytester) -> None:
    """The controller compares what its workers ran: a regression with its headline,
    and items deselected or in files not given counted as not run, not removed."""
    write_cases(project, MLP_CASE)
    write_cases(project, MLP_CASE.replace("mlp:", "other:"), "cases/other.yaml")
    run(project, "--exportcheck-report", "base.json")
    write_cases(project, WRONG_MODULES)
    sections = {}
    for label, args in [("one", ["-p", "no:xdist"]), ("xdist", ["-n", "1"])]:
        result = run(
            project, *args, "cases/main.yaml", "-k", "parity or hierarchy",
            "--exportcheck-compare", "base.json",
        )  # fmt: skip
        lines = result.stdout.lines
        start = next(i for i, line in enumerate(lines) if "= exportcheck compare =" in line)
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
        sections[label] = lines[start + 3 : end]  # after the baseline's and this run's times
    assert sections["xdist"] == sections["one"]
    assert sections["one"][0] == (
        "1 regression; 1 unchanged; 8 baseline items not run here (deselected, or outside "
        "the paths given)"
    )
    assert sections["one"][2].startswith(
        "  cases/main.yaml::mlp::hierarchy[export-cpu]  passed -> failed"
    )


def test_compare_diffs_changed_recorded_observations(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_RECORDED)
    run(project, "--exportcheck-update", "--exportcheck-report", "base.json")
    baseline = report(project, "base.json")
    observation = baseline["items"][0]["observation"]
    observation["placeholders"][0][0] = "p_old_name"
    observation["mutations"]["buffers"] = []
    (project.path / "base.json").write_text(json.dumps(baseline))
    result = run(project, "--exportcheck-compare", "base.json")
    result.stdout.fnmatch_lines(
        [
            "1 observation changed; 0 unchanged",
            "observations changed (1):",
            "  cases/main.yaml::counter::recorded[[]export-cpu[]]  passed",
            "      placeholders: -p_old_name (parameter lin.weight), "
            "+p_lin_weight (parameter lin.weight)",
            "      mutations.buffers: +count",
        ]
    )


def test_fail_on_regression_fails_the_run_and_says_why(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    run(project, "--exportcheck-report", "base.json")
    write_cases(project, WRONG_MODULES)
    result = run(project, "--exportcheck-compare", "base.json", "--exportcheck-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["--exportcheck-fail-on-regression: 1 regression(s) against the baseline; the run fails"]
    )


def test_fail_on_regression_passes_a_run_without_regressions(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    run(project, "--exportcheck-report", "base.json")
    result = run(project, "--exportcheck-compare", "base.json", "--exportcheck-fail-on-regression")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["no changes; 5 unchanged"])


def test_fail_on_regression_lets_known_failures_pass(project: pytest.Pytester) -> None:
    write_cases(project, WRONG_MODULES)
    run(project, "--exportcheck-report", "base.json")
    result = run(project, "--exportcheck-compare", "base.json", "--exportcheck-fail-on-regression")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "--exportcheck-fail-on-regression: no regression against the baseline; "
            "its known failures do not fail the run"
        ]
    )


def test_fail_on_regression_without_a_baseline_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    result = run(project, "--exportcheck-fail-on-regression")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --exportcheck-fail-on-regression needs --exportcheck-compare BASELINE.json *"]
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ('{"format": 1, "items": [', "not valid JSON (*)"),
        ('{"format": 1, "torch": {}}', "*; expected a report written by --exportcheck-report"),
        ('{"format": 7, "items": []}', "report format 7, this plugin reads format 1"),
        (
            '{"format": 1, "items": [{"nodeid": "a", "outcome": {}}]}',
            "items[[]0[]].outcome: {} is not one of *",
        ),
        ('{"format": 1, "items": ' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply *"),
    ],
    ids=["missing", "not-json", "a-recording", "future-format", "wrong-type", "deep"],
)
def test_a_bad_baseline_is_a_usage_error(
    project: pytest.Pytester, content: str | None, problem: str
) -> None:
    write_cases(project, MLP_CASE)
    if content is not None:
        (project.path / "base.json").write_text(content)
    result = run(project, "--exportcheck-compare", "base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --exportcheck-compare: *base.json: {problem}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_baseline_that_is_not_a_regular_file_is_refused_unread(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = run(project, "--exportcheck-compare=/dev/zero")  # it would read forever
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --exportcheck-compare: /dev/zero: not a regular file"])


# -- junit XML --------------------------------------------------------------------------------


def test_junitxml_carries_stage_device_and_max_error(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    run(project, "-k", "python_state and parity", "--junitxml", "junit.xml")
    (case,) = ET.parse(project.path / "junit.xml").getroot().iter("testcase")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["exportcheck_stage"] == "parity"
    assert properties["exportcheck_device"] == "cpu"
    assert float(properties["exportcheck_max_abs_err"]) > 0.1
