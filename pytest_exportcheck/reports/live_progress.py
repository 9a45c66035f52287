"""The live progress line: which stage a long item is in, while it runs.

An item of a real model can build, export or compile for minutes, and pytest's
percentage says nothing meanwhile. Once an item has run
``exportcheck_progress_seconds`` (default 5), a line under pytest's says where it
is, refreshed about once a second and wiped before pytest writes anything:

    cases/x.yaml ..
    cases/x.yaml::resnet::parity[export-cpu]: 12 s in parity (decompose>save)

under ``-n``, one entry per busy worker:

    gw0 resnet::parity[export-cpu]: 12 s in capture export | gw1 bert::...: 8 s in build

Design:

- **Who draws.** The process that owns the terminal: the xdist controller, or the
  one process. Workers have no terminal; they already write where they are to a
  breadcrumb file each (``containment/crashes.py``, for crash reports), which the
  controller reads; one process reads its own breadcrumb from memory. Which items
  run, and since when, the controller learns from xdist's own relay of
  ``pytest_runtest_logstart``/``logfinish``, so a breadcrumb left behind by an item
  that finished is never shown.
- **Only on a terminal.** Off when pytest's output is not a TTY (CI logs, pytester),
  on a ``TERM=dumb`` terminal, with ``-s`` (a model's prints would land inside the
  line), with ``--exportcheck-progress=off``, or without the terminal reporter.
- **Never inside pytest's lines.** The text is drawn on the row below pytest's
  cursor and the cursor put back (save/restore cursor; index and reverse index first
  make that row exist, scrolling if the cursor is on the last one), so pytest's own
  line and its idea of it are untouched. pytest's ``TerminalWriter.write`` and
  ``write_raw`` are wrapped: under one lock with the drawing thread, they wipe the
  row, then write and flush, so a pytest line never meets half a live line, and
  nothing of pytest's is still buffered whenever the thread draws. The thread writes
  to a duplicate of the terminal's descriptor taken at session start: while an item
  runs, pytest's fd capture points descriptor 1 at a file, and the text would end up
  in the item's captured output.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_exportcheck.containment.crashes import Where

REFRESH_SECONDS = 1.0
DEFAULT_AFTER_SECONDS = 5.0
MIN_WIDTH = 16  # less room than this on the line: nothing drawn this time
PLUGIN = "exportcheck-live-progress"


@dataclass(frozen=True)
class Busy:
    """An item running past the threshold: its worker (None in one process), how long
    it has run, and its stage as shown (None before it reached one)."""

    worker: str | None
    nodeid: str
    seconds: float
    stage: str | None


def stage_text(where: Where) -> str | None:
    """A breadcrumb's stage in the words of the progress line: ``build`` for the case
    stage (the model's construction), the capture path, and the detail in brackets."""
    stage = {"case": "build", "setup": None}.get(where.stage, where.stage)
    if stage == "capture" and where.key:
        stage = f"capture {where.key[-1]}"
    if where.detail:
        return f"{stage} ({where.detail})" if stage else where.detail
    return stage


def live_text(busy: list[Busy], width: int) -> str:
    """The line's text in at most ``width`` characters (ASCII), or "" when too narrow.

    Node ids are given whole if they fit, then without their file, then each cut by the
    same number of characters; what is still too long is cut at the end with "...".
    """
    if width < MIN_WIDTH or not busy:
        return ""
    text = ""
    for shorten in (_whole, _without_file):
        text = _ascii(" | ".join(_entry(b, shorten(b.nodeid)) for b in busy))
        if len(text) <= width:
            return text
    # Still too long: every name gives up the same number of characters.
    cut = -(-(len(text) - width) // len(busy))
    entries = []
    for entry in busy:
        name = _ascii(_without_file(entry.nodeid))
        keep = max(len(name) - cut - 3, 4)
        entries.append(_entry(entry, name if keep >= len(name) else name[:keep] + "..."))
    text = " | ".join(entries)
    return text if len(text) <= width else text[: width - 3] + "..."


def _entry(busy: Busy, name: str) -> str:
    worker = f"{busy.worker} " if busy.worker else ""
    where = f" in {busy.stage}" if busy.stage else ""
    return f"{worker}{name}: {busy.seconds:.0f} s{where}"


def _ascii(text: str) -> str:
    """Written byte for byte to the terminal: one character, one column."""
    return text.encode("ascii", "replace").decode("ascii")


def _whole(nodeid: str) -> str:
    return nodeid


def _without_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def why_off(config: pytest.Config, reporter: Any) -> str | None:
    """Why this process draws no live line, or None when it does."""
    if config.getoption("exportcheck_progress", "auto") == "off":
        return "--exportcheck-progress=off"
    if hasattr(config, "workerinput"):
        return "an xdist worker has no terminal"
    if reporter is None or not reporter.isatty():
        return "the output is not a terminal"
    if os.environ.get("TERM") == "dumb":
        return "TERM=dumb: no cursor movement"
    if config.getoption("capture", "fd") == "no":
        return "-s: the items' own output goes to the terminal"
    return None


class LiveProgress:
    """The live line's plugin: item start times from the log hooks, a drawing thread."""

    def __init__(
        self, config: pytest.Config, locate: Callable[[], dict[str, tuple[str | None, Where]]]
    ) -> None:
        self.config = config
        self.after = _seconds(config.getini("exportcheck_progress_seconds"))
        self._locate = locate  # node id -> (worker, where), from the breadcrumbs
        self._running: dict[str, float] = {}  # node id -> when it started (monotonic)
        self._lock = threading.RLock()  # the writer's methods re-enter: write -> write_raw
        self._shown = ""  # the text on the screen now
        self._fd: int | None = None
        self._tw: Any = None
        self._originals: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @pytest.hookimpl(trylast=True)  # after the terminal reporter's: its header is written
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if why_off(self.config, reporter) is not None:
            return
        try:
            fd = os.dup(reporter._tw._file.fileno())
        except (AttributeError, OSError, ValueError):  # no descriptor behind it
            return
        if not os.isatty(fd):
            os.close(fd)
            return
        self._fd, self._tw = fd, reporter._tw
        self._wrap_writer()
        os.register_at_fork(after_in_child=self._forked)
        self._thread = threading.Thread(
            target=self._run, name="exportcheck-live-progress", daemon=True
        )
        self._thread.start()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._running[nodeid] = time.monotonic()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._running.pop(nodeid, None)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "???":  # an xdist worker died in it: no logfinish follows
            self._running.pop(report.nodeid, None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:
            self._finish()

    def pytest_unconfigure(self) -> None:
        self._finish()
        for name, method in self._originals.items():
            setattr(self._tw, name, method)
        self._originals.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._erase()

    def _wrap_writer(self) -> None:
        tw = self._tw
        write, write_raw = tw.write, tw.write_raw
        self._originals = {"write": write, "write_raw": write_raw}

        # Whole writes under the lock: ``write`` updates the writer's idea of the current
        # line before ``write_raw`` puts it out, and the thread reads that idea to place
        # the text.
        def wiping_write(msg: str, *, flush: bool = False, **markup: bool) -> None:
            with self._lock:
                self._erase()
                write(msg, flush=flush, **markup)

        def wiping_write_raw(msg: str, *, flush: bool = False) -> None:
            with self._lock:
                self._erase()
                write_raw(msg, flush=True)  # nothing of pytest's left buffered when we draw

        tw.write, tw.write_raw = wiping_write, wiping_write_raw

    def _run(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            try:
                self._refresh()
            except Exception:  # a progress line must never break the run
                continue

    def _refresh(self) -> None:
        now = time.monotonic()
        running = self._running.copy()  # one C call: safe against the main thread's edits
        started = {n: since for n, since in running.items() if now - since >= self.after}
        located = self._locate() if started else {}
        busy = []
        for nodeid, since in started.items():
            worker, where = located.get(nodeid, (None, None))
            stage = stage_text(where) if where is not None else None
            busy.append(Busy(worker, nodeid, now - since, stage))
        busy.sort(key=lambda b: (b.worker or "", -b.seconds))
        with self._lock:
            if self._stop.is_set():
                return
            text = self._placed(busy)
            if text != self._shown:
                self._erase()
                self._draw(text)

    def _placed(self, busy: list[Busy]) -> str:
        """The text to draw: the whole row is ours, less its last column (writing there
        leaves some terminals waiting to wrap)."""
        return live_text(busy, self._columns() - 1) if busy else ""

    def _columns(self) -> int:
        """The terminal's width, asked of our descriptor: pytest's writer asks descriptor
        1, which fd capture points at a file while an item runs (80 columns, then)."""
        try:
            return os.get_terminal_size(self._fd).columns if self._fd is not None else 0
        except OSError:
            return self._tw.fullwidth

    def _draw(self, text: str) -> None:
        if text:
            # Make the row below exist (index; reverse index), save the cursor, draw
            # there, and restore: pytest's cursor is where pytest left it.
            self._put(f"\x1bD\x1bM\x1b7\x1b[B\r\x1b[K{text}\x1b8")
        self._shown = text

    def _erase(self) -> None:
        if self._shown:
            self._put("\x1b7\x1b[B\r\x1b[K\x1b8")
            self._shown = ""

    def _put(self, text: str) -> None:
        if self._fd is not None:
            try:
                os.write(self._fd, text.encode("ascii", "replace"))
            except OSError:  # the terminal went away: stop drawing
                self._fd = None

    def _forked(self) -> None:
        """A fork's child (a model's, the lowering's fork server) draws nothing, and
        must not wait on a lock the parent's thread held at the fork."""
        self._lock = threading.RLock()
        self._shown = ""
        self._fd = None


def _seconds(value: Any) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return DEFAULT_AFTER_SECONDS
