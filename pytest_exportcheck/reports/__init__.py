"""End-of-run reports: the conformance matrix, JSON/Markdown reports, and run-to-run compare.

Everything here reads pytest's test reports only (never the items), so it
works the same in one process and on the pytest-xdist controller, which sees
reports but no items; and nothing here imports torch, which the controller
need not have loaded.

* ``results.py``   test reports → one :class:`ItemResult` per item;
* ``matrix.py``    results → the case x capture x check matrix (terminal and Markdown);
* ``json_report.py`` the JSON document, its atomic write, reading a baseline back;
* ``markdown.py``  the Markdown rendering for CI job summaries;
* ``markdown_text.py`` user text in Markdown: no HTML, no link;
* ``repro_outcomes.py`` an item's plain-torch reproduction in words, alike in every report;
* ``inert_output.py`` under GitHub Actions, no printed line of user text is a command;
* ``compare_runs.py`` this run against a baseline report;
* ``gap_summary.py`` passing items whose check verified less than it says, counted;
* ``github.py``    GitHub Actions: annotations per root cause, the job summary;
* ``html/``        the HTML page of a run or of any report (``--exportcheck-html``);
* ``slowest.py``   the slowest cases at the run's end, and where their time went;
* ``live_progress.py`` the live line of a long item's stage, on a terminal (it also
  reads the workers' breadcrumbs, ``containment/crashes.py``);
* ``stated_counts.py`` the counts a Markdown page states about a run, written from its
  report between markers (``python -m pytest_exportcheck counts``);
* ``hooks.py``     the pytest plugin tying them together.
"""

from pytest_exportcheck.reports.hooks import ReportPlugin

__all__ = ["ReportPlugin"]
