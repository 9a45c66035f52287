"""Per-process state of an ``--exportcheck`` run: case files, devices, and the capture cache.

One subject (eager model and inputs) per (case, device) and one capture per
(case, device, capture path) serve every item that needs them. Items are
counted at the end of collection (after ``-k`` / ``-m`` deselection), and a
subject or capture is dropped as soon as its last item has run — with
accelerator memory handed back. An LRU bound on captures keeps memory flat
even where counts overestimate (an xdist worker collects every item but runs
only some).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter, OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_exportcheck.containment.failures import Failed
from pytest_exportcheck.containment.memory_return import HeapKeeper
from pytest_exportcheck.containment.stages import StageTimeout, stage
from pytest_exportcheck.containment.user_exits import user_exit_error
from pytest_exportcheck.items import option_values
from pytest_exportcheck.items.capture_summaries import WORKER_SUMMARIES, SummaryHandoff
from pytest_exportcheck.items.item_run import Source, SourceFor
from pytest_exportcheck.items.time_spent import spent_building, spent_capturing
from pytest_exportcheck.items.worker_crashes import WORKER_CRASHES, WorkerCrashes
from pytest_exportcheck.model.devices import WORKER_DEVICES, DeviceSelection, is_accelerator
from pytest_exportcheck.recordings.recording import OBSERVATION, RECORDED_ENTRY
from pytest_exportcheck.spec.case import LOWERED_PREFIX

if TYPE_CHECKING:
    from pytest_exportcheck.capture import CaptureRecord
    from pytest_exportcheck.items.check_items import CheckItem
    from pytest_exportcheck.model.subject import Subject

Key = tuple[str, ...]
WORKER_RECORDINGS = "exportcheck_recordings"  # workeroutput key: observations for the controller
WORKER_GPU_PEAK = "exportcheck_gpu_peak"  # workeroutput key: the worker's peak GPU memory


class ExportCheckSession(WorkerCrashes):
    def __init__(self, config: pytest.Config, case_dirs: list[Path]) -> None:
        self.config = config
        self.case_dirs = case_dirs
        # Paths named on the command line are case files / case directories too.
        self.explicit_paths = {option_values.resolved_argument(arg) for arg in config.args}
        self.max_captures = max(1, option_values.whole_number(config, "exportcheck_cache_size"))
        self.devices = DeviceSelection(config)
        option_values.check_gpu_sharing(config)
        timeout = config.getoption("exportcheck_timeout") or config.getini("exportcheck_timeout")
        self.timeout = option_values.seconds(timeout)
        self.max_elements = option_values.whole_number(config, "exportcheck_max_elements")
        self.max_case_bytes = option_values.whole_number(config, "exportcheck_max_case_bytes")
        self.memory_limit, self.memory_limit_derived = option_values.memory_limit(config)
        self.lowered_checks = option_values.lowering_targets(config)  # added to every case
        self.run_programs = option_values.run_programs(config)  # chains added to every case
        self.reproductions = option_values.reproductions(config)  # --exportcheck-repro
        self._limit_replaced: tuple[int, int] | None = None
        # Case name → where it was first defined: names are unique across files.
        self.case_names: dict[str, str] = {}
        from pytest_exportcheck.recordings.recording import RecordingStore
        from pytest_exportcheck.spec.compat import torch_minor

        self.recordings = RecordingStore(
            update=bool(config.getoption("exportcheck_update")), minor=torch_minor()
        )
        self._recording_lines: list[str] = []
        # (recording file, what is stale): for the run's end and CI annotations (github.py)
        self.stale_recordings: list[tuple[str, str]] = []
        self.gpu_sharing: list[str] = []  # set by the xdist scheduler: workers per GPU and why
        self.gpu_peak: int | None = None  # the largest GPU memory one process reserved
        self._subjects: dict[Key, Subject | Failed] = {}
        self._captures: OrderedDict[Key, CaptureRecord | Failed] = OrderedDict()
        # Per capture, the compiled graphs Dynamo left as globals (capture/dynamo_globals.py).
        self._dynamo_globals: dict[Key, list[tuple[str, str]]] = {}
        self._freed = False  # a case's objects were dropped: memory to give back
        self._reported: set[str] = set()  # node ids with a report, for the unrun ones
        # Cases whose model changed process-wide state: every item of theirs fails with it.
        self.leaked_state: dict[str, Failed] = {}
        self._remaining: Counter[Key] = Counter()
        self.heap = HeapKeeper()  # freezes and collections between cases
        workerinput = getattr(config, "workerinput", {})
        self._start_crash_log(workerinput)
        # Captures' consistency summaries between workers (capture_summaries.py): the
        # controller makes the directory for its workers; one process needs none.
        handed = workerinput.get(WORKER_SUMMARIES)
        self.summaries = SummaryHandoff(Path(handed)) if handed else None

    def is_case_file(self, path: Path) -> bool:
        """YAML under an ``exportcheck_paths`` directory or a path named on the command line."""
        try:
            path = path.resolve()
        except (OSError, RuntimeError):  # a symlink loop met while walking a directory
            return False
        roots = [*self.case_dirs, *self.explicit_paths]
        return path in self.explicit_paths or any(root in path.parents for root in roots)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # After every modifyitems hook (-k, -m, --lf, plugins): the items that will run.
        from pytest_exportcheck.items.check_items import CheckItem

        for item in session.items:
            if isinstance(item, CheckItem):
                self._remaining.update(item.needs())
                if item.check == "recorded":
                    self.recordings.collected.add(str(item.case.path))
                    self.recordings.expect(item.case.path, item.case.name, item.capture)
        checks = {str(getattr(item, "check", "")) for item in session.items}
        if any(check.startswith(LOWERED_PREFIX) for check in checks) and self._runs_items():
            from pytest_exportcheck.lowering import artifact_cache

            cache = getattr(self.config, "cache", None)  # None under -p no:cacheprovider
            artifact_cache.use(cache.mkdir(artifact_cache.CACHE_NAME) if cache else None)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        # A case file whose recorded items were not all selected did not run whole:
        # its stale recorded entries are kept.
        for item in items:
            if getattr(item, "check", None) == "recorded":
                self.recordings.incomplete.add(str(item.case.path))  # type: ignore[attr-defined]

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after skipping's XPASS
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        """An XPASS(strict) of an xfail that a ``torch:`` condition applied names it."""
        report = yield
        longrepr = report.longrepr
        if report.failed and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]"):
            note = item.xpass_note() if hasattr(item, "xpass_note") else ""
            report.longrepr = f"{longrepr}\n{note}" if note else longrepr
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take an observation as its item reports (xdist: on the controller), so what a
        worker observed reaches the recording even if the worker dies later."""
        self._reported.add(report.nodeid)
        if not self.recordings.update or report.when != "call":
            return
        properties = dict(report.user_properties)
        entry, observation = properties.get(RECORDED_ENTRY), properties.get(OBSERVATION)
        if isinstance(entry, str) and isinstance(observation, str):
            case_file, case, capture = json.loads(entry)
            self.recordings.observe(Path(case_file), case, capture, json.loads(observation))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: take a finished worker's observations (and why a dead one died)."""
        if error:
            self._worker_died(node, error)
        output = getattr(node, "workeroutput", {})
        payload = output.get(WORKER_RECORDINGS)
        if payload:
            self.recordings.merge(payload)
        peak = output.get(WORKER_GPU_PEAK)
        if peak:
            self.gpu_peak = max(peak, self.gpu_peak or 0)

    def pytest_report_header(self) -> list[str]:
        from pytest_exportcheck.containment import supervisor

        return supervisor.header_lines(self.config) + self._memory_limit_header()

    def _memory_limit_header(self) -> list[str]:
        if self.memory_limit is None:
            return []
        from pytest_exportcheck.containment import memory_limit

        return [
            memory_limit.header_line(
                self.memory_limit,
                derived=self.memory_limit_derived,
                checks_cuda=self._checks_cuda(),
            )
        ]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):  # the cores shared out (worker_threads.py)
            from pytest_exportcheck.parallel import worker_threads

            workers = int(self.config.workerinput.get("workercount", 1))
            worker_threads.limit_for_worker(workers)
            worker_threads.limit_compile_threads(workers)
        if self.memory_limit is not None and self._runs_items() and not self._checks_cuda():
            from pytest_exportcheck.containment import memory_limit

            self._limit_replaced = memory_limit.apply(self.memory_limit)

    def _runs_items(self) -> bool:
        """This process runs items: an xdist worker, or a run without workers."""
        numprocesses = getattr(self.config.option, "numprocesses", None)
        return hasattr(self.config, "workerinput") or not numprocesses

    def _checks_cuda(self) -> bool:
        devices = self.devices
        possible = devices.discovered if devices.needs_discovery else devices.request
        return any(device.startswith("cuda") for device in possible)

    @pytest.hookimpl(tryfirst=True)  # before the reports: they read the exit status it sets
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._session = session
        if not hasattr(self.config, "workerinput"):
            import shutil

            for made in (self._crash_log, self.summaries):
                if made is not None:
                    shutil.rmtree(made.directory, ignore_errors=True)
        from pytest_exportcheck.parallel.gpu_sharing import PEAK_CACHE_KEY, worker_peak_bytes

        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller writes
            workeroutput[WORKER_RECORDINGS] = self.recordings.payload()
            workeroutput[WORKER_GPU_PEAK] = worker_peak_bytes()
            return
        self.gpu_peak = self.gpu_peak or worker_peak_bytes()
        cache = getattr(self.config, "cache", None)
        if self.gpu_peak and cache is not None:  # the next run's auto cap of workers per GPU
            cache.set(PEAK_CACHE_KEY, self.gpu_peak)
        if self.recordings.update and self.config.option.collectonly:
            # Nothing ran, so nothing was observed: writing would only drop entries.
            self._recording_lines = ["not written: --collect-only runs no item"]
        elif self.recordings.update:
            whole = not (session.shouldstop or session.shouldfail) and exitstatus in (0, 1)
            self._recording_lines = self.recordings.write(whole_run=whole)
            if self.recordings.unwritten and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the update did not happen
        else:
            self.stale_recordings = self.recordings.stale_report()
            self._recording_lines = [f"{path}: {text}" for path, text in self.stale_recordings]

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """A thread a case left running that this Python gave no way to detach would keep
        the process alive after its summary: it ends here, with the run's own status."""
        if self._limit_replaced is not None:
            from pytest_exportcheck.containment import memory_limit

            memory_limit.restore(self._limit_replaced)
        artifact_cache = sys.modules.get("pytest_exportcheck.lowering.artifact_cache")
        if artifact_cache is not None:  # the caller's process as it was (check_model)
            artifact_cache.use(None)
        process_state = sys.modules.get("pytest_exportcheck.containment.process_state")
        session = getattr(self, "_session", None)
        if process_state is None or session is None or hasattr(config, "workerinput"):
            return
        if process_state.undetached_threads():
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(session.exitstatus))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.gpu_sharing or self.gpu_peak:
            from pytest_exportcheck.parallel.gpu_sharing import show_size

            terminalreporter.section("exportcheck GPU sharing")
            for line in self.gpu_sharing:
                terminalreporter.line(line)
            if self.gpu_peak:
                terminalreporter.line(
                    f"largest GPU memory one worker reserved: {show_size(self.gpu_peak)} "
                    "(the next run's auto cap reads it)"
                )
        if self._recording_lines:
            terminalreporter.section("exportcheck recordings")
            for line in self._recording_lines:
                terminalreporter.line(line)
        for line, markup in self._crash_lines():
            terminalreporter.line(line, **markup)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: hand every worker the same device list, the crash log and
        the directory of consistency summaries."""
        node.workerinput[WORKER_CRASHES] = str(self.crash_log.directory)
        self.summaries = self.summaries or SummaryHandoff.create()
        node.workerinput[WORKER_SUMMARIES] = str(self.summaries.directory)
        if self.devices.needs_discovery:  # else the controller need not import torch at all
            node.workerinput[WORKER_DEVICES] = ",".join(self.devices.discovered)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from pytest_exportcheck.parallel.scheduler import make_scheduler

        return make_scheduler(config, log)

    def source_for(self, item: CheckItem) -> Source:
        """The subjects and captures ``item`` may use, cached for the whole run."""
        return SourceFor(self, item)

    def capture_for(self, item: CheckItem, device: str, name: str) -> CaptureRecord:
        from pytest_exportcheck.capture import capture, dynamo_globals
        from pytest_exportcheck.containment.failures import ExportCheckError

        subject = self.subject_for(item, device)
        key = (*item.subject_key(device), name)
        cached = self._captures.get(key)
        if cached is None:
            try:
                self._raise_if_crashed(key)
                with (
                    spent_capturing(item, name),
                    stage("capture"),
                    self.breadcrumb.at("capture", key),
                    dynamo_globals.noting() as self._dynamo_globals[key],
                ):
                    cached = capture(name, subject)
            except (ExportCheckError, StageTimeout) as exc:
                cached = Failed(exc, item.nodeid)
            except BaseException as exc:
                cached = Failed(user_exit_error(exc, item.case.location), item.nodeid)
            self._captures[key] = cached
            if self.summaries is not None and "consistency" in item.case.checks:
                from pytest_exportcheck.items.capture_summaries import hand_on

                hand_on(self.summaries, item.case, key, cached)
            while len(self._captures) > self.max_captures:
                self._drop_capture(next(iter(self._captures)))
        self._captures.move_to_end(key)
        if isinstance(cached, Failed):
            cached.raise_for(item.nodeid)
        return cached

    def subject_for(self, item: CheckItem, device: str) -> Subject:
        from pytest_exportcheck.containment.failures import ExportCheckError
        from pytest_exportcheck.model.subject import Subject

        self.heap.freeze_imports()
        key = item.subject_key(device)
        cached = self._subjects.get(key)
        if cached is None:
            try:
                self._raise_if_crashed(key)
                with spent_building(item):
                    with stage("case"), self.breadcrumb.at("case", key):
                        cached = Subject(item.case, device, self.max_elements)
                    with stage("eager"), self.breadcrumb.at("eager", key):
                        cached.eager  # noqa: B018 - an eager forward that raises is a case error
            except (ExportCheckError, StageTimeout) as exc:
                cached = Failed(exc, item.nodeid)
            except BaseException as exc:
                cached = Failed(user_exit_error(exc, item.case.location), item.nodeid)
            self._subjects[key] = cached
            # Subjects are bounded like captures: an xdist worker's counts include
            # items other workers run, so counting alone would keep every model.
            while len(self._subjects) > self.max_captures:
                self._subjects.pop(next(iter(self._subjects)))
        if isinstance(cached, Failed):
            cached.raise_for(item.nodeid)
        return cached

    def release(self, item: CheckItem) -> None:
        """Drop subjects and captures once no collected item needs them any more."""
        freed_devices = set()
        for key in item.needs():
            self._remaining[key] -= 1
            if self._remaining[key] > 0:
                continue
            dropped = self._drop_capture(key) or self._subjects.pop(key, None)
            if dropped is not None:
                freed_devices.add(key[2])
        for device in freed_devices:
            if is_accelerator(device):
                from pytest_exportcheck.model.devices import free_memory

                free_memory(device)
        if freed_devices:
            self._freed = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logfinish(self) -> None:
        """Once an item that dropped a case's objects is done, give their memory back.

        Not at the drop itself: until the item's protocol ends, its reports and
        frames still reach them (AlexNet: 630 MB still mapped at the drop, 5 MB
        after this point's collection and trim)."""
        if self._freed:
            from pytest_exportcheck.capture import dynamo_globals

            self._freed = False
            dynamo_globals.reset_dynamo()
            self.heap.return_freed_memory(cases_held=bool(self._subjects or self._captures))

    def _drop_capture(self, key: Key) -> CaptureRecord | Failed | None:
        from pytest_exportcheck.capture import dynamo_globals

        dynamo_globals.remove(self._dynamo_globals.pop(key, []))
        return self._captures.pop(key, None)

    def cached_captures(self) -> list[Key]:
        """For tests: the keys of captures alive now."""
        return list(self._captures)
