"""Where a parallel run's wall time goes, per worker: start-up, collection, items, idle.

    PYTHONPATH=benchmarks EXPORTCHECK_TIMELINE=/tmp/tl pytest -p timeline --exportcheck -n 4
    python benchmarks/timeline.py /tmp/tl

As a pytest plugin (``-p timeline``), every process (controller and each xdist
worker) writes ``<dir>/<worker>.json``: its process start (from ``/proc``), when
pytest configured it (after importing pytest and the plugins), when it finished
collecting, and each item's start and end, all as wall-clock times. Run as a
script on that directory, it prints per worker:

    worker  start-up  collect  first item  items  idle  last item end
    gw0        4.1 s    3.2 s      7.3 s   80.2 s  1.1 s      88.6 s

start-up: from the controller's start to the worker's configure (its interpreter,
torch's import by the plugins that load it, xdist's handshake); collect: to the
end of its collection; items: the sum of its items; idle: between its first item's
start and its last item's end, when it ran none (waiting for work, or for the
controller). The critical path is the worker that ends last.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ENV = "EXPORTCHECK_TIMELINE"


def _process_start() -> float:
    """This process's start as wall-clock time (Linux ``/proc``; else now)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        hz = os.sysconf("SC_CLK_TCK")
        return time.time() - uptime + ticks / hz
    except (OSError, ValueError, IndexError):
        return time.time()


class _Timeline:
    def __init__(self, config: Any, directory: Path) -> None:
        self.worker = getattr(config, "workerinput", {}).get("workerid", "controller")
        self.path = directory / f"{self.worker}.json"
        self.doc: dict[str, Any] = {
            "worker": self.worker,
            "process_start": _process_start(),
            "configured": time.time(),
            "collected": None,
            "items": [],
        }

    def pytest_collection_finish(self, session: Any) -> None:
        self.doc["collected"] = time.time()

    def pytest_runtest_protocol(self, item: Any) -> None:
        self.doc["items"].append([item.nodeid, time.time(), None])

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.doc["items"] and self.doc["items"][-1][0] == nodeid:
            self.doc["items"][-1][2] = time.time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.doc["sessionfinish"] = time.time()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        self.doc.setdefault("nodes_down", []).append(time.time())

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self) -> None:
        self.doc["terminal_summary"] = time.time()

    def pytest_unconfigure(self) -> None:
        self.doc["unconfigured"] = time.time()
        self.path.write_text(json.dumps(self.doc))


def pytest_configure(config: Any) -> None:
    directory = os.environ.get(ENV)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        config.pluginmanager.register(_Timeline(config, Path(directory)), "exportcheck-timeline")


def summarize(directory: Path) -> list[str]:
    docs = {p.stem: json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}
    controller = docs.pop("controller", None)
    origin = (
        controller["process_start"]
        if controller
        else min(d["process_start"] for d in docs.values())
    )
    lines = ["worker  start-up  collect  first item   items    idle  last item end"]
    workers = docs or ({"controller": controller} if controller else {})
    for name, doc in sorted(workers.items()):
        spans = [(start, end) for _, start, end in doc["items"] if end is not None]
        if not spans:
            lines.append(f"{name:6}  (ran no item)")
            continue
        busy = sum(end - start for start, end in spans)
        first, last = spans[0][0], max(end for _, end in spans)
        collected = doc["collected"] or doc["configured"]
        lines.append(
            f"{name:6}  {doc['configured'] - origin:6.1f} s {collected - doc['configured']:6.1f} s"
            f"  {first - origin:7.1f} s  {busy:6.1f} s {last - first - busy:5.1f} s"
            f"  {last - origin:9.1f} s"
        )
    if controller:
        end = controller.get("unconfigured", controller["configured"])
        marks = {
            "configured": controller["configured"],
            "workers down": max(controller.get("nodes_down") or [0.0]) or None,
            "sessionfinish": controller.get("sessionfinish"),
            "terminal summary": controller.get("terminal_summary"),
            "unconfigure": end,
        }
        lines.append(
            "controller: "
            + ", ".join(f"{k} {v - origin:.1f} s" for k, v in marks.items() if v is not None)
        )
    return lines


if __name__ == "__main__":
    print("\n".join(summarize(Path(sys.argv[1]))))
