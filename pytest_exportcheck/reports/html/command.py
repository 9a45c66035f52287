"""``python -m pytest_exportcheck html REPORT.json -o PAGE.html``: the page of any report.

A run's ``--exportcheck-report``, or shards merged by ``merge``: both are read
and validated as a baseline is (``json_report.load_baseline``), so a file that
is not a report is refused by name before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from pytest_exportcheck.recordings.atomic import stale_note
from pytest_exportcheck.reports.html.files import overwrite_problem, write_page
from pytest_exportcheck.reports.json_report import BaselineError, load_baseline

PROG = "python -m pytest_exportcheck html"


def main(report: Path, output: Path, root: Path) -> int:
    """Write the page; 2, with the reason on one line, if the report or the output is bad."""
    problem = overwrite_problem(output)
    if problem is not None:
        print(f"{PROG}: {problem}")
        return 2
    try:
        doc = load_baseline(report)
    except BaselineError as exc:
        print(f"{PROG}: {exc}")
        return 2
    try:
        removed = write_page(output, doc, root)
    except OSError as exc:
        print(f"{PROG}: {output}: not written ({exc})")
        return 2
    print(f"{output}: the HTML report of {report} ({len(doc['items'])} items){stale_note(removed)}")
    return 0
