"""The ``exportcheck`` fixture: a model defined in a Python test, checked as a YAML case is."""

from __future__ import annotations

import re

import pytest
from casekit import MLP_CASE, write_cases
from casekit import write_api_test as write_test


def line_of(pytester: pytest.Pytester, filename: str, text: str) -> int:
    lines = (pytester.path / filename).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def findings(result: pytest.RunResult) -> list[str]:
    """The check's report lines (``[check] ... failed`` and its ``- finding`` lines),
    without pytest's ``E`` prefix and with every ``file:line`` replaced by ``<here>``.
    The short summary is left out: with ``CI`` set pytest prints whole messages there."""
    found = []
    for line in result.outlines:
        if "short test summary info" in line:
            break
        text = re.sub(r"^E\s+", "", line)
        if re.match(r"(\[\w+\] \w+ check failed|- )", text):
            found.append(re.sub(r"[\w/.]+\.(yaml|py):\d+", "<here>", text))
    return found


def test_a_passing_model_passes(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_counter(exportcheck):
            report = exportcheck(model("Counter"), args=(torch.randn(2, 4),),
                                 expect={"mutated_buffers": ["count"]})
            assert report.failed == []
            assert "mutation[export-cpu]" in report.passed
        """,
    )
    project.runpytest().assert_outcomes(passed=1)


def test_the_fixture_is_registered_without_the_flag(project: pytest.Pytester) -> None:
    result = project.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["exportcheck*", "*Check a model defined in the test*"])


def test_wrong_mutated_buffers_fail_with_the_yaml_case_findings(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "Counter") + "    expect: {mutated_buffers: []}\n")
    yaml_result = project.runpytest("--exportcheck", "-k", "mutation")
    yaml_result.assert_outcomes(failed=1)

    test_file = write_test(
        project,
        """
        def test_counter(exportcheck):
            exportcheck(model("Counter"), args=(torch.randn(2, 4),), checks=["mutation"],
                        expect={"mutated_buffers": []})
        """,
    )
    result = project.runpytest(test_file)
    result.assert_outcomes(failed=1)
    line = line_of(project, test_file, "exportcheck(model")
    result.stdout.fnmatch_lines(
        [
            f"*ExportCheckFailed: 1 of 1 exportcheck item(s) failed for Counter: [[]mutation[]] "
            f"expect.mutated_buffers ({test_file}:{line}) is {{}}, *",
            "*--- mutation[[]export-cpu[]] ---",
            f"*{test_file}:{line}: case Counter, export on cpu",
        ]
    )
    assert findings(result) == findings(yaml_result)
    assert findings(result) == [
        "[mutation] mutation check failed (1 finding):",
        "- expect.mutated_buffers (<here>) is {}, the decomposed program "
        "(ep.run_decompositions()) records {count}",
    ]


def test_a_failing_export_reports_its_capture_kind(project: pytest.Pytester) -> None:
    test_file = write_test(
        project,
        """
        def test_data_dependent(exportcheck):
            exportcheck(model("DataDependent"), args=(torch.randn(2, 4),))
        """,
    )
    result = project.runpytest(test_file)
    result.assert_outcomes(failed=1)
    line = line_of(project, test_file, "exportcheck(model")
    result.stdout.fnmatch_lines(
        [
            f"E *ExportCheckFailed: 5 of 5 exportcheck "
            f"item(s) failed for DataDependent: [[]capture: data-dependent guard[]] "
            f"{test_file}:{line}: torch.export.export (non-strict) raised: *",
        ]
    )
    # Reported in full once; the other items point at it, as YAML items do.
    result.stdout.fnmatch_lines(
        ["*--- hierarchy[[]export-cpu[]] ---", "*(full report on signature[[]export-cpu[]])"]
    )


def test_a_misspelt_expect_key_is_a_did_you_mean_at_the_callers_line(
    project: pytest.Pytester,
) -> None:
    test_file = write_test(
        project,
        """
        def test_typo(exportcheck):
            exportcheck(model("Counter"), args=(torch.randn(2, 4),),
                        expect={"mutated_bufers": ["count"]})
        """,
    )
    result = project.runpytest(test_file)
    result.assert_outcomes(failed=1)
    line = line_of(project, test_file, "exportcheck(model")
    result.stdout.fnmatch_lines(
        [
            f"*InvalidCase: {test_file}:{line}: unknown key 'mutated_bufers' in expect "
            "(did you mean 'mutated_buffers'?); allowed: consistency, mode, modules, mutated_buffers, "
            "mutation, parity, placeholders"
        ]
    )


def test_nothing_to_check_here_skips_naming_why(project: pytest.Pytester) -> None:
    test_file = write_test(
        project,
        """
        def test_far_gpu(exportcheck):
            exportcheck(model("Mlp"), args=(torch.randn(2, 4),), devices=["cuda:97"])
        """,
    )
    result = project.runpytest(test_file, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*exportcheck: nothing to check here; *device cuda:97 is not available here*"]
    )


def test_the_fixture_works_under_xdist(project: pytest.Pytester) -> None:
    test_file = write_test(
        project,
        """
        def test_passes(exportcheck):
            exportcheck(model("Mlp"), args=(torch.randn(2, 4),))

        def test_fails(exportcheck):
            exportcheck(model("PythonCounter"), args=(torch.randn(2, 4),), checks=["mutation"])
        """,
    )
    result = project.runpytest(test_file, "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*after step 2/3: output: 8 / 8 elements outside tolerance*"])


def test_an_xfail_absorbs_the_failure_it_names(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_counter(exportcheck):
            report = exportcheck(
                model("PythonCounter"), args=(torch.randn(2, 4),), checks=["mutation"],
                xfail={"reason": "python-side state is baked into the graph",
                       "stage": "mutation", "match": "outside tolerance"},
            )
            assert report.xfailed == ["mutation[export-cpu]"]
            assert report["mutation[export-cpu]"].message == (
                "python-side state is baked into the graph"
            )
        """,
    )
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


def test_an_xfail_does_not_absorb_another_failure(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_counter(exportcheck):
            exportcheck(
                model("PythonCounter"), args=(torch.randn(2, 4),), checks=["mutation"],
                xfail={"reason": "a capture problem", "stage": "capture"},
            )
        """,
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*expected xfail (stage capture)*, got: [[]mutation[]] *"])


def test_an_xfail_that_passes_fails_the_call(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_mlp(exportcheck):
            exportcheck(model("Mlp"), args=(torch.randn(2, 4),), checks=["parity"],
                        xfail={"reason": "stale"})
        """,
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] stale*"])


@pytest.mark.quick
def test_a_pass_with_gaps_shows_them_and_strict_gaps_fails_it(project: pytest.Pytester) -> None:
    # SetsUpChild's child works only inside its forward (eager's child alone raises too):
    # hierarchy passes with a gap. str(report) says so, as the terminal does; strict_gaps=True,
    # or the run's --exportcheck-strict-gaps through the fixture, fails the item.
    write_test(
        project,
        """
        def check(exportcheck, **options):
            return exportcheck(model("SetsUpChild"), args=(torch.randn(2, 4),), checks=["hierarchy"],
                               **options)

        def test_shown(exportcheck):
            report = check(exportcheck)
            (item,) = report.items
            assert item.outcome == "passed" and item.gaps, item
            text = str(report)
            assert f"passed   hierarchy[export-cpu]  with {len(item.gaps)} gap(s)" in text, text
            for gap in item.gap_texts:
                assert f"\\n    - {gap}" in text, text
            assert "inner not run alone: u.inner(float32[2, 4], scale=3.0) raises" in text, text

        def test_strict(exportcheck):
            check(exportcheck, strict_gaps=True)

        def test_run_strict(exportcheck):
            check(exportcheck)

        def test_run_strict_turned_off(exportcheck):
            check(exportcheck, strict_gaps=False)
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        ["*- not verified (strict_gaps=True): inner not run alone: u.inner(*"]
    )
    strict = project.runpytest("-p", "no:cacheprovider", "--exportcheck-strict-gaps", "-k", "run")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(
        ["*- not verified (--exportcheck-strict-gaps): inner not run alone: *"]
    )


def test_preserve_signatures_is_a_keyword_as_in_yaml(project: pytest.Pytester) -> None:
    # PairChild's inner(x, x * 2): without the key its graph takes (mul, x) and the replay
    # differs; with it, eager's order. A misspelt name fails as [case] at the call's line.
    test_file = write_test(
        project,
        """
        def test_pair(exportcheck):
            pair = model("PairChild")
            exportcheck(pair, args=(torch.randn(2, 4),), checks=["hierarchy"],
                        preserve_signatures=["inner"])
            exportcheck(pair, args=(torch.randn(2, 4),), checks=["hierarchy"],
                        preserve_signatures="iner")
        """,
    )
    result = project.runpytest(test_file)
    result.assert_outcomes(failed=1)
    line = line_of(project, test_file, 'preserve_signatures="iner"') - 1
    result.stdout.fnmatch_lines(
        [
            f"*[[]case[]] {test_file}:{line}: preserve_signatures names 'iner', which is no "
            "submodule of the model (did you mean 'inner'?); its submodules: inner, inner.lin"
        ]
    )
