"""xdist: what the session knows of dying workers, and how it reports their items.

A worker leaves breadcrumbs in the controller's crash log (``containment/crashes.py``)
as it builds subjects and captures; when one dies, the controller reports the item
it was running as ``[crashed]`` with the stage and the signal (or as xfailed, where
the item's xfail expects the crash: ``expected_crashes.py``), keeps the recording
entries it can no longer observe, and, once xdist's restarts are used up, lists the
items that never ran. A subject or capture that killed a worker is not built again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_exportcheck.containment.crashes import (
    EXIT_SIGNAL,
    Breadcrumb,
    CrashLog,
    Where,
    exit_signal,
)
from pytest_exportcheck.items.expected_crashes import CRASHED, expected_crash_lines, judge

if TYPE_CHECKING:
    from pytest_exportcheck.recordings.recording import RecordingStore

WORKER_CRASHES = "exportcheck_crashes"  # workerinput key: the controller's crash log directory


class WorkerCrashes:
    """The session's part in crash reporting (mixed into ``ExportCheckSession``)."""

    config: pytest.Config
    recordings: RecordingStore
    _reported: set[str]  # node ids with a report (the session's logreport adds them)

    def _start_crash_log(self, workerinput: dict[str, Any]) -> None:
        self._stopped_collection: list[str] = []  # xdist stopped at a crash: what it had
        self._expected_crashes: list[tuple[str, str]] = []  # (node id, text): xfailed
        self._node_errors: dict[str, object] = {}
        self._crash_log: CrashLog | None = None
        if WORKER_CRASHES in workerinput:
            self._crash_log = CrashLog(Path(workerinput[WORKER_CRASHES]))
        self.breadcrumb = Breadcrumb(
            self._crash_log.breadcrumb_path(workerinput["workerid"]) if self._crash_log else None
        )

    def _worker_died(self, node: Any, error: object) -> None:
        self._node_errors[node.gateway.id] = error
        setattr(node, EXIT_SIGNAL, exit_signal(node))  # the scheduler reads it next

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """xdist controller: say what the dead worker was doing, as one of our items."""
        crash = self.crash_log.by_item.get(crashitem)
        if crash is None:  # it died outside an exportcheck item: xdist's report stands
            return
        stops = restarts_used_up(self.config)
        error = self._node_errors.get(crash.worker)
        verdict = judge(crash.xfail, f"[{CRASHED}] {crash.describe(error, run_goes_on=not stops)}")
        report.longrepr = verdict.text
        if verdict.wasxfail is not None:  # as pytest reports an xfail: skipped, wasxfail
            report.outcome = "skipped"
            report.wasxfail = verdict.wasxfail
            report.when = "call"  # xdist's "???" reads "XFAIL at ??? of" in the summary
            self._expected_crashes.append((crashitem, verdict.text))
        if stops:
            self._stopped_collection = next(iter(sched.registered_collections.values()), [])
        if self.recordings.update:  # its observation died with it: keep the file's entries
            case_file = Path(self.config.rootpath, crash.location.rpartition(":")[0])
            self.recordings.incomplete.add(str(case_file.resolve()))
        report.user_properties = [*crash.properties, ("exportcheck_stage", CRASHED)]
        path, _, line = crash.location.rpartition(":")
        if line.isdigit():
            report.location = (path, int(line) - 1, crashitem.split("::", 1)[-1])

    @property
    def crash_log(self) -> CrashLog:
        """The controller's crash log, made on first use (only xdist runs need one)."""
        if self._crash_log is None:
            import tempfile

            self._crash_log = CrashLog(Path(tempfile.mkdtemp(prefix="exportcheck-crashes-")))
        return self._crash_log

    def where_items_are(self) -> dict[str, tuple[str | None, Where]]:
        """Node id -> (worker, where it is), for the live progress line's thread: on the
        xdist controller from each worker's breadcrumb file, in one process from its own
        breadcrumb (no worker). A file may name an item that has finished: the caller
        knows which items run."""
        if self._crash_log is None or hasattr(self.config, "workerinput"):
            where = self.breadcrumb.where()
            return {where.nodeid: (None, where)} if where is not None else {}
        found: dict[str, tuple[str | None, Where]] = {}
        for path in self._crash_log.directory.glob("*.at"):
            where = Breadcrumb.where_in(path)
            if where is not None:
                found[where.nodeid] = (path.stem, where)
        return found

    def _raise_if_crashed(self, key: tuple[str, ...]) -> None:
        """A subject or capture that killed a worker before is not built again."""
        crashed = self._crash_log.find(key) if self._crash_log is not None else None
        if crashed is not None:
            raise crashed

    def _crash_lines(self) -> list[tuple[str, dict[str, bool]]]:
        """The summary's lines and their markup: the crashes xfails expected, the items a
        stop left unrun."""
        expected = expected_crash_lines(self._expected_crashes)
        unrun = unrun_lines(self._stopped_collection, self._reported)
        return [(line, {"yellow": True}) for line in expected] + [
            (line, {"red": True}) for line in unrun
        ]


def restarts_used_up(config: Any) -> bool:
    """Whether xdist stops the run at the crash being handled, replacing no worker (it
    counts the crash after ``pytest_handlecrashitem``: ``DSession.worker_errordown``)."""
    dsession = config.pluginmanager.getplugin("dsession")
    limit = getattr(dsession, "_max_worker_restart", None)
    failed = getattr(dsession, "_failed_nodes_count", 0)
    return limit is not None and failed + 1 > limit


def unrun_lines(collection: list[str], reported: set[str]) -> list[str]:
    """After xdist stopped the run at a crash: the items it never ran."""
    unrun = [nodeid for nodeid in collection if nodeid not in reported]
    if not unrun:
        return []
    shown = ", ".join(unrun[:10]) + (f" and {len(unrun) - 10} more" if len(unrun) > 10 else "")
    return [
        "exportcheck: the run stopped at a crashed worker (--max-worker-restart used up): "
        f"{len(unrun)} item(s) not run: {shown}"
    ]
