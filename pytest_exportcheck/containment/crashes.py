"""Surviving a worker that dies: where it was, and what not to run again.

A model can kill the process it runs in: ``os.abort()`` in ``forward``, a
segfault in a kernel, the OOM killer. Without pytest-xdist that ends the run
(pytest's faulthandler prints where). Under xdist the controller sees the
worker die, reports the item it was running as failed and starts a
replacement, and left alone it would hand the same item, and then the rest
of its case, to the replacement, which dies too, until
``--max-worker-restart`` is used up and the rest of the run is lost. So:

* each worker keeps a :class:`Breadcrumb`: the item and the stage it is in,
  and the subject or capture it is building, in a file that outlives it;
* when a worker dies, the scheduler reads that file, marks the item that
  crashed as done (xdist has reported it as failed) and writes to the
  :class:`CrashLog`, a directory every worker reads, which subject or capture
  crashed: a crash while building or running eager condemns the case on that
  device, a crash inside a capture condemns that capture, and a crash inside
  a check only its own item;
* workers look a subject or capture up in the log before building it, and
  fail the items that need a condemned one at once, as ``[crashed]``.

The same breadcrumb tells the live progress line where a busy item is
(``reports/live_progress.py``): in one process from memory (:meth:`Breadcrumb.where`),
on the xdist controller from each worker's file (:meth:`Breadcrumb.where_in`). A
second channel would mean a second write per stage for what this file already says.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_exportcheck.containment.exit_status import signal_name
from pytest_exportcheck.containment.failures import ExportCheckError
from pytest_exportcheck.recordings.atomic import write_atomically

Key = tuple[str, ...]

# Where a worker that died was, by the stage it was in: which cached object the
# crash condemns. A stage not listed (a check, setup) condemns only its item.
CONDEMNING_STAGES = ("case", "eager", "capture")
# The attribute the controller sets on a dead worker's node: the signal that ended it.
EXIT_SIGNAL = "exportcheck_exit_signal"
# How often a worker's breadcrumb records its memory between stages.
SAMPLE_SECONDS = 1.0


class WorkerCrash(ExportCheckError):
    """An item not run because its case or capture killed a worker before."""

    stage = "crashed"

    def as_dependency(self, first_reported_by: str) -> ExportCheckError:
        return self  # the message already names the item that crashed


@dataclass(frozen=True)
class Crash:
    """What a dead worker was doing, read back from its breadcrumb."""

    worker: str
    nodeid: str
    location: str
    stage: str
    key: Key | None  # the subject or capture it was building, if any
    properties: tuple[tuple[str, Any], ...] = ()  # the item's user properties, for reports
    unit: Key | None = None  # the capture (or subject) the item checks
    peak_rss: int | None = None  # the worker's peak resident memory when last measured
    signal: int | None = None  # the signal that ended the worker, where the controller saw it
    ended_by: str | None = None  # why this plugin ended the worker itself (stages.end_process)
    # The item's xfail as the worker wrote it (items/expected_crashes.py), for the
    # controller, which loads no cases, to judge the crash by.
    xfail: dict[str, Any] | None = None

    @property
    def killed_for_memory(self) -> bool:
        """SIGKILL: what the kernel's out-of-memory killer sends (nothing else of ours does)."""
        return self.signal == signal.SIGKILL

    def condemns(self) -> Key | None:
        if self.stage in CONDEMNING_STAGES:
            return self.key
        # Killed for memory inside a check: the capture's next heavy item would be too.
        return self.unit if self.killed_for_memory else None

    def describe(self, error: object | None = None, *, run_goes_on: bool = True) -> str:
        """The crashed item's own failure text (``run_goes_on``: xdist replaces the worker;
        with its ``--max-worker-restart`` used up it does not, and the run stops)."""
        died = f"worker {self.worker} died in the {self.stage} stage of this item"
        if self.ended_by is not None:
            died += f" (ended on purpose: {self.ended_by})"
        elif self.signal is not None:
            likely = ", likely the kernel's out-of-memory killer" if self.killed_for_memory else ""
            died += f" (killed by {signal_name(self.signal)}{likely})"
        elif error:
            died += f" ({str(error).splitlines()[0]})"
        if self.peak_rss:
            died += f"; its peak memory when last measured: {_size(self.peak_rss)}"
        condemned = self.condemns()
        if condemned is None:
            after = "its other items run as usual"
        elif self.stage == "capture" or self.stage not in CONDEMNING_STAGES:
            after = f"the {condemned[-1]} capture's other items on {condemned[2]} are not run"
        else:
            after = f"the case's other items on {condemned[2]} are not run"
        if not run_goes_on:
            hint = (
                "xdist's --max-worker-restart is used up, so no new worker is started: the "
                "run stops, and the items it did not run are listed at its end"
            )
            return f"{self.location}: {died}; {hint}"
        if self.ended_by is not None:
            hint = "a new worker runs the rest"
        elif self.killed_for_memory:
            hint = (
                "an out-of-memory kill leaves no traceback (run this case with fewer "
                "workers, or alone, to give it the memory)"
            )
        else:
            hint = (
                "the process ended, so no traceback is left (run this case without -n to "
                "see Python's fault handler output)"
            )
        return f"{self.location}: {died}; {hint}; {after}; the rest of the run goes on"


def _size(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def exit_signal(node: Any) -> int | None:
    """The signal that ended an xdist worker (execnet's popen of it), where it can be
    read: -9 from ``Popen.wait`` is SIGKILL."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        code = popen.wait(timeout=5)
    except Exception:  # still running, or not a Popen after all: say nothing
        return None
    return -code if isinstance(code, int) and code < 0 else None


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far (``VmHWM``), where the system says."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


@dataclass(frozen=True)
class Where:
    """Where an item is now: its stage, what it builds there, and a detail within it
    (the program a parity check runs, a lowering's step)."""

    nodeid: str
    stage: str
    key: Key | None = None
    detail: str | None = None

    @classmethod
    def of(cls, state: dict[str, Any]) -> Where | None:
        if not state.get("nodeid"):
            return None
        key = state.get("key")
        return cls(state["nodeid"], state.get("stage") or "setup",
                   tuple(key) if key else None, state.get("detail"))  # fmt: skip


class Breadcrumb:
    """A worker's current item and stage, in a file that is still there after it dies.

    One ``pwrite`` per stage: the kernel keeps the bytes even when the process
    aborts before flushing anything of its own.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None
        self._state: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._sampler: threading.Thread | None = None

    def start(
        self,
        nodeid: str,
        location: str,
        properties: list[tuple[str, Any]],
        unit: Key | None = None,
        xfail: dict[str, Any] | None = None,
    ) -> None:
        self._state = {"nodeid": nodeid, "location": location, "stage": "setup", "key": None,
                       "properties": [list(p) for p in properties],
                       "unit": list(unit) if unit is not None else None,
                       "xfail": xfail}  # fmt: skip
        self._write()
        global _CURRENT
        _CURRENT = self
        if self.path is not None and self._sampler is None:
            # The memory a worker had when the kernel killed it is the best clue to why:
            # measured every SAMPLE_SECONDS, not only when the stage changes.
            self._sampler = threading.Thread(
                target=self._sample, name="exportcheck-breadcrumb", daemon=True
            )
            self._sampler.start()

    def _sample(self) -> None:
        while True:
            time.sleep(SAMPLE_SECONDS)
            self._write()

    def ending(self, why: str) -> None:
        """The worker is about to end itself: why, for the controller's report."""
        self._state["ended_by"] = why
        self._write()

    @contextmanager
    def at(self, stage: str, key: Key | None = None) -> Iterator[None]:
        """Within the block, a crash is one of ``stage`` (building ``key``, if given)."""
        previous = dict(self._state)
        self._state.update(stage=stage, key=list(key) if key is not None else None)
        self._write()
        try:
            yield
        finally:
            self._state = previous
            self._write()

    @contextmanager
    def detail(self, what: str) -> Iterator[None]:
        """Within the block, the stage's detail is ``what`` (for the progress line only:
        a crash report names the stage, which decides what the crash condemns)."""
        previous = self._state.get("detail")
        self._state["detail"] = what
        self._write()
        try:
            yield
        finally:
            self._state["detail"] = previous
            self._write()

    def where(self) -> Where | None:
        """This process's item and stage (read from another thread: the state dict is
        replaced, never half-updated, when a stage ends)."""
        return Where.of(dict(self._state))

    @staticmethod
    def where_in(path: Path) -> Where | None:
        """A worker's item and stage, read from its breadcrumb file."""
        state = _load(path)
        return Where.of(state) if state is not None else None

    def _write(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        if self.path is None or not self._state:
            return
        self._state["peak_rss"] = peak_rss_bytes()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        # One line, read up to its newline: stale bytes of a longer earlier
        # record after it are ignored, so no truncate (a second syscall) is needed.
        os.pwrite(self._fd, (json.dumps(self._state) + "\n").encode(), 0)

    @staticmethod
    def read(path: Path, worker: str) -> Crash | None:
        state = _load(path)
        if state is None:
            return None  # died before its first item, or the file is gone
        key = state.get("key")
        return Crash(
            worker=worker,
            nodeid=state["nodeid"],
            location=state["location"],
            stage=state["stage"],
            key=tuple(key) if key is not None else None,
            properties=tuple((name, value) for name, value in state.get("properties", [])),
            unit=tuple(state["unit"]) if state.get("unit") else None,
            peak_rss=state.get("peak_rss"),
            ended_by=state.get("ended_by"),
            xfail=state.get("xfail"),
        )


def _load(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
    except (OSError, ValueError):  # not written yet, gone, or read mid-write (progress)
        return None
    return state if isinstance(state, dict) else None


_CURRENT: Breadcrumb | None = None  # this worker's, once an item started


@contextmanager
def doing(what: str) -> Iterator[None]:
    """Within the block, the running item's stage has the detail ``what``, for the live
    progress line: ``parity (decompose>save)``, ``lowered-aoti (lower)``."""
    if _CURRENT is None:
        yield
        return
    with _CURRENT.detail(what):
        yield


def note_ending(why: str) -> None:
    """Tell the controller (through the breadcrumb) why this worker ends itself."""
    if _CURRENT is not None:
        _CURRENT.ending(why)


class CrashLog:
    """Subjects and captures that killed a worker, shared by the controller and its workers.

    A directory of one small file per condemned key, written atomically by the
    controller only; workers read it before building anything.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.by_item: dict[str, Crash] = {}  # controller side: the crashed items

    def breadcrumb_path(self, worker: str) -> Path:
        return self.directory / f"{worker}.at"

    def record(self, crash: Crash) -> None:
        self.by_item[crash.nodeid] = crash
        condemned = crash.condemns()
        if condemned is not None:
            entry = {"key": list(condemned), "nodeid": crash.nodeid, "worker": crash.worker,
                     "stage": crash.stage, "memory": crash.killed_for_memory,
                     "signal": crash.signal}  # fmt: skip
            write_atomically(self._entry(condemned), json.dumps(entry))

    def find(self, key: Key) -> WorkerCrash | None:
        """The failure for an item that needs ``key``, if ``key`` killed a worker."""
        try:
            entry = json.loads(self._entry(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if entry.get("memory"):
            return WorkerCrash(
                f"not run: an item of the {key[-1]} capture on {key[2]} ({entry['nodeid']}) "
                f"got worker {entry['worker']} killed, likely for memory; its other items "
                "would likely be killed too: run this case with fewer workers, or alone"
            )
        what = f"the {key[-1]} capture" if entry["stage"] == "capture" else "this case"
        # The signal too: an xfail's match (stage crashed) reads it here as on the crash.
        by = f"by {signal_name(entry['signal'])}, " if entry.get("signal") else ""
        return WorkerCrash(
            f"not run: {what} killed worker {entry['worker']} in the {entry['stage']} stage "
            f"on {key[2]} ({by}while running {entry['nodeid']}); running it again would kill "
            "another worker"
        )

    def _entry(self, key: Key) -> Path:
        return self.directory / (hashlib.sha1("\0".join(key).encode()).hexdigest() + ".crash")
