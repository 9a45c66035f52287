"""The report plugin: collects test reports, then prints, writes and compares at session end.

Registered for every ``--exportcheck`` run. Under pytest-xdist it is active on
the controller only — the one process that sees every report and owns the
terminal and the output files; workers (``config.workerinput``) do nothing.
The baseline is read at configure time, so a bad ``--exportcheck-compare``
path stops the run before any model is built.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_exportcheck.recordings.atomic import stale_note
from pytest_exportcheck.reports import (
    gap_summary,
    github,
    html,
    inert_output,
    json_report,
    markdown,
    nearest,
)
from pytest_exportcheck.reports import matrix as matrix_mod
from pytest_exportcheck.reports.compare_runs import Comparison, RunScope, compare
from pytest_exportcheck.reports.compare_runs import render as render_comparison
from pytest_exportcheck.reports.merge import cases_digest
from pytest_exportcheck.reports.results import (
    FAILING,
    ItemResult,
    ResultCollector,
    describe_totals,
    totals,
)

_COMPARE_LIMIT = 20  # items listed per kind of change without -v
WORKER_SCOPE = "exportcheck_scope"  # workeroutput key: [files collected, items deselected]


def regression_exit(exitstatus: int, regressions: int, fail_on_regression: bool) -> int:
    """The session's exit status once regressions are known.

    With ``--exportcheck-fail-on-regression`` the baseline is a ratchet: the run
    fails exactly when something got worse (a regression, or a new item that
    fails), and failures the baseline already had no longer fail it — what a
    release engineer upgrading torch asks of a run. An interrupted run or an
    internal error keeps its status. Without the flag, pytest's status stands.
    """
    if not fail_on_regression:
        return exitstatus
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return exitstatus
    return pytest.ExitCode.TESTS_FAILED if regressions else pytest.ExitCode.OK


class ReportPlugin:
    """Results of every exportcheck item, gathered from reports; rendered once at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.active = not hasattr(config, "workerinput")
        self.collector = ResultCollector()
        self.results: list[ItemResult] = []
        self.comparison: Comparison | None = None
        self.nearest: nearest.NearestSummary | None = None
        self.scope_files: set[str] = set()
        self.deselected: set[str] = set()
        self.run: dict[str, Any] = {}
        self.started = time.time()
        self.messages: list[tuple[str, dict[str, bool]]] = []  # (line, markup) after the rest
        self.inert: inert_output.InertLines | None = None  # under GitHub Actions
        base = config.invocation_params.dir
        report = config.getoption("exportcheck_report")
        self.report_path = (base / report) if report else None
        if self.report_path is not None and self.active:
            problem = json_report.overwrite_problem(self.report_path)
            if problem is not None:
                raise pytest.UsageError(f"--exportcheck-report: {problem}")
        html_path = config.getoption("exportcheck_html")
        self.html_path = (base / html_path) if html_path else None
        if self.html_path is not None and self.active:
            problem = html.overwrite_problem(self.html_path)
            if problem is not None:
                raise pytest.UsageError(f"--exportcheck-html: {problem}")
        self.github_mode = config.getoption("exportcheck_github")
        self.fail_on_regression = bool(config.getoption("exportcheck_fail_on_regression"))
        baseline = config.getoption("exportcheck_compare")
        if self.fail_on_regression and not baseline:
            raise pytest.UsageError(
                "--exportcheck-fail-on-regression needs --exportcheck-compare BASELINE.json "
                "(a regression is relative to a baseline report)"
            )
        self.baseline_source = baseline
        self.baseline: dict[str, Any] | None = None
        if baseline and self.active:
            try:
                self.baseline = json_report.load_baseline(base / baseline)
            except json_report.BaselineError as exc:
                raise pytest.UsageError(f"--exportcheck-compare: {exc}") from None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.time()
        # Before the first line is printed: from here on no model's text can act on CI.
        self.inert = (
            inert_output.make_inert(self.config)
            if self.active and github.annotating(self.github_mode, os.environ)
            else None
        )

    # What this run looked at, for --exportcheck-compare: without xdist from the
    # collection itself; under xdist from the workers (each collects the same).
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.update(item.nodeid for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.scope_files.update(item.nodeid.split("::", 1)[0] for item in session.items)
        self.scope_files.update(nodeid.split("::", 1)[0] for nodeid in self.deselected)
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_SCOPE] = [sorted(self.scope_files), sorted(self.deselected)]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        files, deselected = getattr(node, "workeroutput", {}).get(WORKER_SCOPE, ([], []))
        self.scope_files.update(files)
        self.deselected.update(deselected)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.active:
            self.collector.add(report)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Runs before the terminal summary: the exit status can still change here."""
        if not self.active:
            return
        self.results = self.collector.results()
        self.run = json_report.run_info(
            started=self.started,
            finished=time.time(),
            exitstatus=session.exitstatus,  # as the recordings left it (session.py)
            args=self.config.invocation_params.args,
        )
        # Shards of one run (pytest-split) must agree on it to be merged (merge.py).
        self.run["cases"] = cases_digest(self.config.rootpath, self.scope_files)
        current = [r.to_json() for r in self.results]
        from pytest_exportcheck.spec.compat import torch_minor

        self.nearest = nearest.summarize(self.results, str(self.run["torch"]), torch_minor())
        if self.baseline is not None:
            scope = RunScope(frozenset(self.scope_files), frozenset(self.deselected))
            self.comparison = compare(
                self.baseline, current, source=str(self.baseline_source), scope=scope
            )
            regressions = len(self.comparison.regressions) + sum(
                change.after in FAILING for change in self.comparison.new
            )
            status = regression_exit(session.exitstatus, regressions, self.fail_on_regression)
            if status != session.exitstatus:
                session.exitstatus = status
            if self.fail_on_regression and regressions:
                self.messages.append(
                    (f"--exportcheck-fail-on-regression: {regressions} regression(s) "
                     "against the baseline; the run fails", {"red": True, "bold": True})
                )  # fmt: skip
            elif self.fail_on_regression and exitstatus == pytest.ExitCode.TESTS_FAILED:
                self.messages.append(
                    ("--exportcheck-fail-on-regression: no regression against the baseline; "
                     "its known failures do not fail the run", {"green": True})
                )  # fmt: skip
        self.run["exitstatus"] = int(session.exitstatus)  # the process's, whatever set it
        if self.config.option.collectonly:
            return
        summary = github.summary_path(self.github_mode, os.environ)
        if not self.results:
            summary = None
        if self.report_path is None and self.html_path is None and summary is None:
            return
        # One document and one Markdown rendering for every file that holds them.
        doc = self._document()
        text = self._markdown(doc) if self.report_path is not None or summary else ""
        written = True
        if self.report_path is not None:
            written &= self._write(self.report_path, doc, text)
        if self.html_path is not None:
            written &= self._write_html(self.html_path, doc)
        if not written and session.exitstatus == pytest.ExitCode.OK:
            # CI reads the report's counts as this run's: a run without its report fails.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if summary is not None:
            problem = github.append_summary(summary, text)
            if problem is not None:
                self.messages.append((problem, {"red": True}))

    def _document(self) -> dict[str, Any]:
        summary = self.comparison.summary() if self.comparison is not None else None
        doc = json_report.document(self.results, self.run, summary)
        if self.nearest is not None:
            doc["recordings"] = self.nearest.to_json()
        return doc

    def _markdown(self, doc: dict[str, Any]) -> str:
        return markdown.render(doc, matrix_mod.build(self.results), self.comparison, self.nearest)

    def _write(self, path: Path, doc: dict[str, Any], text: str) -> bool:
        md_path = json_report.markdown_path(path)
        try:
            removed = json_report.write_atomically(path, json_report.dumps(doc))
            removed += json_report.write_atomically(md_path, text)
        except OSError as exc:
            self._not_written("report", exc, [path, md_path])
            return False
        note = stale_note(removed)
        self.messages.append((f"exportcheck report: {path} and {md_path.name}{note}", {}))
        return True

    def _write_html(self, path: Path, doc: dict[str, Any]) -> bool:
        try:
            removed = html.write_page(path, doc, self.config.rootpath)
        except OSError as exc:
            self._not_written("HTML report", exc, [path])
            return False
        self.messages.append((f"exportcheck HTML report: {path}{stale_note(removed)}", {}))
        return True

    def _not_written(self, what: str, error: OSError, paths: list[Path]) -> None:
        """Say so, fail the run, and take away the last run's file at that path: read as
        this run's, its counts would be a false report (a full disk leaves it in place)."""
        left = []
        for path in paths:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                left.append(str(path))
        stale = (
            f"; the previous run's {', '.join(left)} could not be removed: it is NOT this run's"
            if left
            else ""
        )
        self.messages.append(
            (f"exportcheck {what} not written: {error}; the run fails{stale}", {"red": True})
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.active:
            return
        if self.results:
            matrix = matrix_mod.build(self.results)
            terminalreporter.section("exportcheck matrix")
            width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", 120)
            for line in matrix_mod.render_text(matrix, width=width):
                terminalreporter.line(line)
            terminalreporter.line(describe_totals(totals(r.outcome for r in self.results)))
        gaps = gap_summary.summarize(r.to_json() for r in self.results)
        if gaps.items:
            terminalreporter.section("exportcheck gaps")
            limit = None if self.config.get_verbosity() > 0 else _COMPARE_LIMIT
            for index, line in enumerate(gap_summary.render_text(gaps, limit)):
                terminalreporter.line(line, yellow=index == 0, bold=index == 0)
        if self.nearest is not None:
            terminalreporter.section("exportcheck torch versions")
            limit = None if self.config.get_verbosity() > 0 else nearest.GROUPS_SHOWN
            for index, line in enumerate(nearest.render(self.nearest, limit)):
                terminalreporter.line(line, yellow=index == 0, bold=index == 0)
        if self.comparison is not None:
            terminalreporter.section("exportcheck compare")
            verbose = self.config.get_verbosity() > 0
            limit = None if verbose else _COMPARE_LIMIT
            for line in render_comparison(self.comparison, self.run, limit):
                red = line.startswith("regressions (")
                terminalreporter.line(line, red=red, bold=red)
        if self.messages and not self.results and self.comparison is None:
            terminalreporter.section("exportcheck")
        for line, markup in self.messages:
            terminalreporter.line(line, **markup)
        if github.annotating(self.github_mode, os.environ):
            # Last, each alone on its line: GitHub reads them from the step's output.
            session = self.config.pluginmanager.get_plugin("exportcheck-session")
            stale = getattr(session, "stale_recordings", [])
            root = self.config.rootpath
            for line in github.annotations(self.results, stale, root=root, environ=os.environ):
                if self.inert is not None:
                    self.inert.command(line)
                else:
                    terminalreporter.write_line(line)
