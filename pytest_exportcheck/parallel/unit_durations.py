"""How long each item took last time, kept in pytest's cache, so that the xdist
scheduler hands out the longest work units first.

With units handed out in collection order, one long unit started last decides the
wall time: on 14 workers the bundled corpus's 24 s ``hf_bert`` unit, begun after the
short ones, ends well after every other worker is idle. Longest first, the long
units start at once and the short ones fill in around them (list scheduling's
classic bound: at most 4/3 of the best possible).

- **Where**: ``exportcheck/durations`` under pytest's cache directory
  (``.pytest_cache``, like ``--lf``'s failures): node id → seconds, all phases of
  the item. Written by the process that reports (the controller under xdist), after
  every run that is not ``--collect-only``; entries of items that did not run are kept
  (a ``-k`` run keeps the others' durations) while their case file exists.
- **Absent** (a first run, ``-p no:cacheprovider``, a fresh CI checkout): every item
  is estimated the same, so units are ordered by their number of items, which is
  xdist's own ``--loadscope-reorder`` order; lowered items, by a cold lowering's
  seconds, go first.
- **Stale** (items added, renamed, or slower since): an item the cache does not know
  is estimated as the median of the known items of its check (a lowering target's
  item, where none is known: a cold lowering's seconds); a wrong estimate only
  costs balance, never an outcome.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pytest_exportcheck import CASE_SUFFIXES
from pytest_exportcheck.items.item_names import split_item_name

CACHE_KEY = "exportcheck/durations"
# The estimate of an item when the cache knows nothing of its kind.
UNKNOWN_SECONDS = 1.0
# A lowering target's item the cache knows nothing of: a cold lowering of a small
# model on 2 cores (benchmarks/README.md, "Lowering, cold and warm"), so that a first
# run (a CI checkout) starts the compiles first rather than last.
COLD_LOWERING_SECONDS = {
    "lowered-aoti": 30.0,
    "lowered-inductor": 10.0,
    "lowered-executorch": 5.0,
    "lowered-onnx": 5.0,
    "lowered-saved": 4.0,
}


def check_of(nodeid: str) -> str | None:
    parsed = split_item_name(nodeid.rpartition("::")[2].split("@")[0])
    return parsed[0] if parsed else None


def is_case_item(nodeid: str) -> bool:
    """An item of a YAML case (``cases/a.yaml::mlp::parity[export-cpu]``)."""
    path = nodeid.split("::", 1)[0]
    return path.endswith(CASE_SUFFIXES) and check_of(nodeid) is not None


class Estimates:
    """Expected seconds of items and units, from the last runs' durations."""

    def __init__(self, known: Mapping[str, float]) -> None:
        self.known = dict(known)
        by_check: dict[str | None, list[float]] = defaultdict(list)
        for nodeid, seconds in self.known.items():
            by_check[check_of(nodeid)].append(seconds)
        self._median = {check: statistics.median(values) for check, values in by_check.items()}
        every = list(self.known.values())
        self._fallback = statistics.median(every) if every else UNKNOWN_SECONDS

    def item(self, nodeid: str) -> float:
        if nodeid in self.known:
            return self.known[nodeid]
        check = check_of(nodeid)
        if check in self._median:
            return self._median[check]
        return COLD_LOWERING_SECONDS.get(check or "", self._fallback)

    def unit(self, nodeids: Iterable[str]) -> float:
        return sum(self.item(nodeid) for nodeid in nodeids)


def load(config: pytest.Config) -> Estimates:
    cache = getattr(config, "cache", None)
    raw = cache.get(CACHE_KEY, {}) if cache is not None else {}
    # A hand-edited or foreign cache entry is ignored, never an error.
    known = {
        nodeid: float(seconds)
        for nodeid, seconds in (raw.items() if isinstance(raw, dict) else [])
        if isinstance(nodeid, str) and isinstance(seconds, (int, float)) and seconds >= 0
    }
    return Estimates(known)


class DurationLog:
    """Collects each exportcheck item's duration as it reports; writes them at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.durations: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_case_item(report.nodeid):
            self.durations[report.nodeid] += float(getattr(report, "duration", 0.0) or 0.0)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache: Any = getattr(self.config, "cache", None)
        if cache is None or not self.durations or hasattr(self.config, "workerinput"):
            return
        root = self.config.rootpath
        known = {
            nodeid: seconds
            for nodeid, seconds in load(self.config).known.items()
            if (root / nodeid.split("::", 1)[0]).is_file()  # a renamed or deleted file's go
        }
        known.update({nodeid: round(seconds, 3) for nodeid, seconds in self.durations.items()})
        cache.set(CACHE_KEY, known)
