"""--exportcheck-html: the run's page, written at session end beside (or without) the JSON report."""

from __future__ import annotations

import json
import re

import pytest
from casekit import MLP_CASE, write_cases

OFF = ["-p", "no:cacheprovider"]
FAILING = MLP_CASE.rstrip() + "\n    expect: {modules: [fc1, fc3]}\n"


def page_items(pytester: pytest.Pytester, name: str) -> list[dict]:
    page = (pytester.path / name).read_text()
    found = re.search(r'id="exportcheck-data">(.*?)</script>', page, re.S)
    assert found, "no data element in the page"
    return json.loads(found.group(1))["items"]


def test_the_page_holds_every_item_the_json_report_has(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, FAILING)
    result = project.runpytest(
        "--exportcheck", *OFF, *dist, "--exportcheck-report=r.json", "--exportcheck-html=out/r.html"
    )
    result.stdout.fnmatch_lines(["exportcheck HTML report: */out/r.html"])
    report = json.loads((project.path / "r.json").read_text())["items"]
    assert page_items(project, "out/r.html") == report
    assert sorted(p.name for p in (project.path / "out").iterdir()) == ["r.html"]


def test_the_page_is_written_without_a_json_report(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    project.runpytest("--exportcheck", *OFF, "--exportcheck-html=r.html").assert_outcomes(passed=5)
    assert {i["outcome"] for i in page_items(project, "r.html")} == {"passed"}
    # the next run replaces a page it wrote
    result = project.runpytest(
        "--exportcheck", *OFF, "-k", "signature", "--exportcheck-html=r.html"
    )
    assert result.ret == pytest.ExitCode.OK
    assert [i["check"] for i in page_items(project, "r.html")] == ["signature"]


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("cases/main.yaml", "cases/main.yaml: an HTML report's path ends in .html"),
        ("index.html", "index.html exists and is not an HTML report this plugin wrote: not overwritten"),
    ],
    ids=["case file", "someone's page"],
)  # fmt: skip
def test_a_page_path_that_would_destroy_a_file_is_a_usage_error(
    project: pytest.Pytester, path: str, said: str
) -> None:
    write_cases(project, MLP_CASE)
    (project.path / "index.html").write_text("<p>the team's page</p>\n")
    before = (project.path / path).read_text()
    result = project.runpytest("--exportcheck", *OFF, f"--exportcheck-html={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exportcheck-html: *{said}"])
    assert (project.path / path).read_text() == before
