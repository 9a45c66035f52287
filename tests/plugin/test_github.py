"""GitHub Actions: a failure's root cause annotated on its case's YAML line, the report as
the job summary; nothing of it outside GitHub Actions."""

from __future__ import annotations

import pytest
from casekit import write_cases

# norm's mutation expectation fails the same way under both captures (one cause, line 10);
# strict_xpass's xfail (line 17) expects a failure that does not come.
CASES = """
cases:
  norm:
    description: BatchNorm1d in training mode updates its running statistics
    model: {target: "torch.nn:BatchNorm1d", args: [8], mode: train}
    inputs:
      args: [{shape: [4, 8]}]
    captures: [export, export-strict]
    checks: [mutation]
    expect:
      mutated_buffers: [running_mean, running_var]
  strict_xpass:
    description: an xfail that does not fail
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [signature]
    xfail:
      - {reason: "not really broken, says 100%", checks: [signature]}
"""

GITHUB = {"GITHUB_ACTIONS": "true"}


def annotations(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("::")]


@pytest.fixture
def project_in_ci(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    write_cases(project, CASES)
    for name, value in GITHUB.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "summary.md"))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    return project


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_each_root_cause_is_annotated_at_its_yaml_line(
    project_in_ci: pytest.Pytester, workers: list[str]
) -> None:
    result = project_in_ci.runpytest("--exportcheck", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(failed=3)
    mutation, xpass = annotations(result)
    # The two captures' mutation items failed with the same words at the same line: one
    # annotation, at the expectation's line, the second item counted in it.
    assert mutation.startswith(
        "::error file=cases/main.yaml,line=10,"
        "title=cases/main.yaml%3A%3Anorm%3A%3Amutation[export-cpu] [mutation]::"
        "[mutation] expect.mutated_buffers (cases/main.yaml:10) is {running_mean, running_var}"
    )
    assert mutation.endswith(
        "%0Asame cause: 1 more item(s): cases/main.yaml::norm::mutation[export-strict-cpu]"
    )
    # An XPASS(strict) belongs on the xfail entry that expected a failure; "%" escaped.
    assert xpass == (
        "::error file=cases/main.yaml,line=17,"
        "title=cases/main.yaml%3A%3Astrict_xpass%3A%3Asignature[export-cpu] [XPASS(strict)]::"
        "[XPASS(strict)] not really broken, says 100%25"
    )
    summary = (project_in_ci.path / "summary.md").read_text()
    assert summary.startswith("## exportcheck: 3 items: 3 failed\n")
    assert "### Failures (3)" in summary


def test_the_job_summary_is_appended_to_what_earlier_steps_wrote(
    project_in_ci: pytest.Pytester,
) -> None:
    (project_in_ci.path / "summary.md").write_text("# an earlier step\n")
    project_in_ci.runpytest("--exportcheck", "-p", "no:cacheprovider", "-k", "strict_xpass")
    summary = (project_in_ci.path / "summary.md").read_text()
    assert summary.startswith("# an earlier step\n## exportcheck: 1 item: 1 failed\n")


def test_off_means_neither_annotations_nor_summary(project_in_ci: pytest.Pytester) -> None:
    result = project_in_ci.runpytest(
        "--exportcheck", "-p", "no:cacheprovider", "--exportcheck-github", "off"
    )
    result.assert_outcomes(failed=3)
    assert annotations(result) == []
    assert not (project_in_ci.path / "summary.md").exists()


def test_outside_github_actions_nothing_is_printed_or_written(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_cases(project, CASES)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    assert annotations(result) == []
    # "on" asks for the annotations anywhere (another CI that reads GitHub's syntax).
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "--exportcheck-github=on")
    assert len(annotations(result)) == 2


def test_a_stale_recording_is_a_warning_on_its_file(project_in_ci: pytest.Pytester) -> None:
    recorded = (
        "cases:\n  mlp:\n    description: d\n    model: {target: models.py:Mlp}\n"
        "    inputs: {args: [{shape: [2, 4]}]}\n    checks: [recorded]\n"
    )
    write_cases(project_in_ci, recorded)
    project_in_ci.runpytest("--exportcheck", "-p", "no:cacheprovider", "--exportcheck-update")
    write_cases(project_in_ci, recorded.replace("mlp:", "renamed:"))
    result = project_in_ci.runpytest("--exportcheck", "-p", "no:cacheprovider")
    (warning,) = annotations(result)
    assert warning.startswith(
        "::warning file=cases/main.recorded.json,title=exportcheck%3A stale recording::"
        "recorded entries for cases or captures that no longer exist: mlp"
    )
