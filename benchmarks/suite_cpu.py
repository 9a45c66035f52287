"""Where the project's tests spend CPU: each test's own and its children's, per file.

The suite's target is its wall time on 2 cores, and on 2 cores the wall follows the
CPU: a test that starts a pytest run of its own (an xdist worker, a supervised
session, a reproduction's fresh interpreter) spends most of its CPU in children that
``--durations`` does not separate from waiting. As a pytest plugin (``-p suite_cpu``,
``benchmarks/`` on ``PYTHONPATH``) it writes, per test, the CPU of the process that
ran it and of the children it waited for (``RUSAGE_CHILDREN``: a child's own waited
children included) to ``$SUITE_CPU_DIR/tests-<pid>.tsv``; run as a script it sums
those files per test file. A warm child (``tests/warmstart.py``) is the child of its
test process's server, not of the test: the server writes each one's CPU, as a child's
of the test that asked for it, and its pid, where ``EXPORTCHECK_TESTS_WARMSTART_CPU``
says. The suite's own xdist workers fork from the server too: their tests are counted
by their own lines, and the rest of their CPU (start-up, collection) is said apart.

    SUITE_CPU_DIR=/tmp/cpu EXPORTCHECK_TESTS_WARMSTART_CPU=/tmp/cpu/tests-warm.tsv \
        PYTHONPATH=.:benchmarks pytest -n auto -p suite_cpu
    python benchmarks/suite_cpu.py /tmp/cpu [--top 40]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    before, started = _cpu(), time.time()
    yield
    after = _cpu()
    folder = Path(os.environ.get("SUITE_CPU_DIR", "suite-cpu"))
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"tests-{os.getpid()}.tsv", "a") as out:
        out.write(
            f"{item.nodeid}\t{after[0] - before[0]:.2f}\t{after[1] - before[1]:.2f}"
            f"\t{started:.2f}\t{time.time():.2f}\n"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=40)
    options = parser.parse_args()
    own: Counter[str] = Counter()
    children: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    spans: dict[str, tuple[float, float]] = {}  # a test process's first start, last end
    tables = list(options.folder.glob("tests-*.tsv"))
    processes = {table.stem.removeprefix("tests-") for table in tables}  # their pids
    whole: dict[str, float] = {}  # a test process's CPU, where the warm server forked it
    in_tests: Counter[str] = Counter()  # a test process's CPU in its tests
    for table in tables:
        process = table.stem.removeprefix("tests-")
        for line in table.read_text().splitlines():
            nodeid, self_cpu, child_cpu, *more = line.split("\t")
            when, pid = more[:2], (more[2:] or [""])[0]
            if pid in processes:  # a test process itself: its tests have lines of their own
                whole[pid] = float(child_cpu)
                continue
            if any(when):  # a test process's own line (the warm server's have no times)
                first, last = spans.get(table.name, (float(when[0]), float(when[1])))
                spans[table.name] = (min(first, float(when[0])), max(last, float(when[1])))
                in_tests[process] += float(self_cpu) + float(child_cpu)
            name = nodeid.split("::")[0]
            own[name] += float(self_cpu)
            children[name] += float(child_cpu)
            tests[name] += 1
    total = own + children
    print(f"tests {sum(tests.values())}: own {sum(own.values()):.0f} s, children "
          f"{sum(children.values()):.0f} s of CPU")  # fmt: skip
    if whole:  # what the test processes spent outside their tests
        outside = sum(cpu - in_tests[pid] for pid, cpu in whole.items())
        print(f"test processes: {len(whole)}, {sum(whole.values()):.0f} s of CPU in all, "
              f"{outside:.0f} s of it outside their tests (start-up, collection)")  # fmt: skip
    print(f"{'CPU s':>7} {'own':>6} {'kids':>6} {'tests':>5}  file")
    for name, cpu in total.most_common(options.top):
        print(f"{cpu:7.1f} {own[name]:6.1f} {children[name]:6.1f} {tests[name]:5d}  {name}")
    if spans:  # the tail: from the first test process out of work to the last
        start = min(first for first, _ in spans.values())
        ends = sorted(last - start for _, last in spans.values())
        print("test processes ended, s after the first test began: " + ", ".join(
            f"{end:.0f}" for end in ends))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
