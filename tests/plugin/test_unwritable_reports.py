"""A report the run cannot write fails the run, and the last run's file does not stay to
be read as this run's (a full disk: CI would read the old counts)."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, write_cases

# The disk fills as the run writes its reports: every atomic write fails as ENOSPC does.
DISK_FULL = """
import errno

import pytest_exportcheck.reports.html.files as html_files
import pytest_exportcheck.reports.json_report as json_report

WRITE = json_report.write_atomically


def disk_full(path, text):
    raise OSError(errno.ENOSPC, "No space left on device", str(path))


def pytest_configure(config):
    json_report.write_atomically = html_files.write_atomically = disk_full


def pytest_unconfigure(config):  # pytester runs in this process: later runs write again
    json_report.write_atomically = html_files.write_atomically = WRITE
"""


@pytest.mark.parametrize("kind", ["json", "html"])
def test_a_report_that_cannot_be_written_fails_the_run_and_removes_the_old_one(
    project: pytest.Pytester, kind: str
) -> None:
    write_cases(project, MLP_CASE)
    option = "--exportcheck-report" if kind == "json" else "--exportcheck-html"
    name = "report.json" if kind == "json" else "report.html"
    first = project.runpytest("--exportcheck", "-p", "no:cacheprovider", f"{option}={name}")
    assert first.ret == 0 and (project.path / name).exists()
    project.makeconftest(DISK_FULL)
    again = project.runpytest("--exportcheck", "-p", "no:cacheprovider", f"{option}={name}")
    again.stdout.fnmatch_lines(
        ["exportcheck *report not written: *No space left on device*; the run fails"]
    )
    assert again.ret == pytest.ExitCode.TESTS_FAILED  # every item passed
    assert not (project.path / name).exists()
    assert not (project.path / "report.md").exists()
