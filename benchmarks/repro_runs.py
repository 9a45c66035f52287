"""What running a run's reproductions costs the user, as whole processes.

    python benchmarks/repro_runs.py [--findings 8] [--repeat 3]

A project of ``--findings`` cases, each a model that counts its calls in a Python int
(the program bakes the count: parity fails at step 2), so each case's one item fails
and gets its own script. The same run is timed three ways, taking turns, medians:

- ``no scripts``: ``--exportcheck`` alone;
- ``written``: ``--exportcheck-repro=repro --exportcheck-repro-run=no``;
- ``written and run``: ``--exportcheck-repro=repro``, each script run and its verdict
  read (``repro/confirm.py``).

The last minus the second is what running the scripts costs, per finding. Wall and
CPU (the process and every child it waited for, ``wait4``); the plugin under test is
the one ``PYTHONPATH`` or the environment imports.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
PYTEST += ["-p", "no:hypothesispytest", "--exportcheck", "cases"]

MODELS = """
import torch
from torch import nn


class Baked(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls
"""

CASE = """
  baked{n}:
    description: a count the program bakes
    model: {{target: models.py:Baked, kwargs: {{width: {width}}}}}
    inputs: {{args: [{{shape: [2, {width}]}}]}}
    captures: [export]
    checks: [parity]
    expect: {{parity: {{steps: 2}}}}
"""

WAYS = {
    "no scripts": [],
    "written": ["--exportcheck-repro=repro", "--exportcheck-repro-run=no"],
    "written and run": ["--exportcheck-repro=repro"],
}


def project(directory: Path, findings: int) -> Path:
    (directory / "cases").mkdir(parents=True)
    (directory / "cases" / "models.py").write_text(MODELS)
    cases = "".join(CASE.format(n=n, width=4 + n) for n in range(findings))
    (directory / "cases" / "baked.yaml").write_text("cases:" + cases)
    return directory


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall, CPU (self and waited children) and output of one whole process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read() if process.stdout else b""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 1:  # each case fails, on purpose
        sys.exit(f"{command}: exit status {status}\n{output.decode(errors='replace')[-3000:]}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, output.decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="repro-runs-") as tmp:
        for _ in range(options.repeat):
            for way, args in WAYS.items():
                where = Path(tmp) / f"{way.replace(' ', '-')}-{len(runs[way])}"
                wall, cpu, output = timed([*PYTEST, *args], project(where, options.findings))
                if way == "written and run":
                    reproduced = f"of {options.findings} failures, {options.findings} reproduced"
                    assert reproduced in output, output[-2000:]
                runs[way].append((wall, cpu))
    middle = options.repeat // 2
    medians = {
        way: tuple(sorted(run[i] for run in done)[middle] for i in (0, 1))
        for way, done in runs.items()
    }
    print(f"{options.findings} findings, {options.repeat} rounds, medians (wall s, CPU s):")
    for way, (wall, cpu) in medians.items():
        print(f"  {way:16} {wall:6.1f} {cpu:6.1f}")
    wall = (medians["written and run"][0] - medians["written"][0]) / options.findings
    cpu = (medians["written and run"][1] - medians["written"][1]) / options.findings
    print(f"running the scripts: {wall:.2f} s of wall, {cpu:.2f} s of CPU per finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
