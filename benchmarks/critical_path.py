"""Predict the wall time of a run on N workers from one run's item durations.

    python benchmarks/critical_path.py report.json [--workers 2,4,8,14] [--overhead S]

Reads an ``--exportcheck-report`` (any worker count: item durations are per item),
groups items into work units, and replays greedy list scheduling: each unit goes
to the worker that frees up first, in the order given. Printed per worker count:

- *whole, nodeid order*: a case with a ``consistency`` item one unit per device
  (as before capture summaries were handed on), in collection order;
- *whole, longest first*: the same units, longest first;
- *today*: the scheduler's units (``scheduler.unit_of``: one per (case, capture,
  device), a consistency item one of its own), longest first. The replay does
  not hold a consistency item back until its captures ran, as the scheduler does.

No unit can be cut, so the longest unit bounds the wall: ``max(longest, sum / N)``
is the floor any scheduler meets. ``--overhead`` adds the seconds outside the
items (start-up, torch import, collection), measured as the run's duration less
its items' sum when the report came from a serial run.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_exportcheck.parallel.scheduler import unit_of


def unit_durations(items: list[dict], *, whole_cases: bool) -> dict[str, float]:
    """Seconds per work unit: the scheduler's (``unit_of``), or, with ``whole_cases``, as it
    was before captures handed their consistency summaries on: every item of a case with a
    ``consistency`` item on a device, one unit."""
    compared = {unit_of(i["nodeid"])[0] for i in items if i.get("check") == "consistency"}
    units: dict[str, float] = defaultdict(float)
    for item in items:
        unit, device = unit_of(item["nodeid"])
        whole = f"{item['nodeid'].rpartition('::')[0]}::[{device}]"
        if whole_cases and whole in compared:
            unit = whole
        units[unit] += float(item.get("duration") or 0.0)
    return dict(units)


def replay(durations: list[float], workers: int) -> float:
    """Greedy list scheduling: each duration to the worker that frees up first."""
    free = [0.0] * workers
    for duration in durations:
        heapq.heappush(free, heapq.heappop(free) + duration)
    return max(free)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--workers", default="2,4,8,14")
    parser.add_argument("--overhead", type=float, default=None, help="seconds outside items")
    args = parser.parse_args(argv)
    doc = json.loads(args.report.read_text())
    items = doc["items"]
    total = sum(float(i.get("duration") or 0.0) for i in items)
    overhead = args.overhead
    if overhead is None:
        overhead = max(0.0, float(doc["run"].get("duration") or 0.0) - total)
    whole = unit_durations(items, whole_cases=True)
    split = unit_durations(items, whole_cases=False)
    print(f"{len(items)} items, {total:.1f} s of item time; {overhead:.1f} s outside items")
    print(f"units with whole compared cases: {len(whole)}, longest {max(whole.values()):.1f} s:")
    for unit, seconds in sorted(whole.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {seconds:6.1f} s  {unit}")
    print(f"units today (summaries handed on): {len(split)}, longest {max(split.values()):.1f} s")
    serial = total + overhead
    print("\nworkers  floor   whole, nodeid order  whole, longest first  today  (x serial)")
    for workers in (int(w) for w in args.workers.split(",")):
        floor = max(max(split.values()), total / workers) + overhead
        rows = [
            replay(list(whole.values()), workers),
            replay(sorted(whole.values(), reverse=True), workers),
            replay(sorted(split.values(), reverse=True), workers),
        ]
        cells = "  ".join(f"{r + overhead:6.1f} s {(r + overhead) / serial:4.2f}" for r in rows)
        print(f"{workers:7d}  {floor / serial:4.2f}   {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
