"""The scaling curve: the corpus serially, then under ``-n 2, 4, 8, 14`` as far as the
machine's cores allow, each ratio to serial from the same run.

    python benchmarks/run.py --scaling            # bundled corpus + generated cases
    python benchmarks/run.py --scaling --quick    # one file, one repetition

Runs are interleaved round by round (serial, -n 2, -n 4, ... then again), so a change
in the machine's load hits every worker count alike; the table shows medians. The
machine (cores, torch, Python) is printed with the figures: a curve means nothing
without it.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Callable
from typing import Any

from pytest_exportcheck.parallel.worker_threads import usable_cores

WORKER_COUNTS = (2, 4, 8, 14)
TARGETS = {2: 0.58, 8: 0.30, 14: 0.22}  # issue 18: at most this x serial


def worker_counts(cores: int) -> list[int]:
    """Serial (0), then each count the machine has cores for."""
    return [0, *(n for n in WORKER_COUNTS if n <= cores)]


def machine(python: str) -> dict[str, Any]:
    torch = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "torch": torch or "?",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def scaling(
    pytest_command: list[str],
    paths: list[str],
    repeat: int,
    run_series: Callable[..., None],
    series_type: type,
    env: dict[str, str],
    python: str,
) -> dict[str, Any]:
    """Measure the curve and print it; returns the figures for ``--json``."""
    info = machine(python)
    cores = info["usable_cores"] or info["cores"] or 1
    series = {
        n: series_type(
            "serial" if n == 0 else f"-n {n}",
            [*pytest_command, "--exportcheck", "-n", str(n), *paths],
        )
        for n in worker_counts(cores)
    }
    print(
        f"scaling: {cores} usable cores, torch {info['torch']}, python {info['python']}",
        flush=True,
    )
    run_series(list(series.values()), repeat, env)
    serial = series[0].wall
    print(f"\n{'workers':<10}{'wall (median)':>15}{'x serial':>10}{'target':>9}")
    curve = {}
    for n, s in series.items():
        ratio = s.wall / serial
        target = TARGETS.get(n)
        verdict = "" if target is None else ("  ok" if ratio <= target else "  MISSED")
        shown = f"<= {target:.2f}" if target is not None else ""
        print(f"{s.label:<10}{s.wall:>13.1f} s{ratio:>10.2f}{shown:>9}{verdict}")
        curve[s.label] = {"wall_median": s.wall, "walls": [x.wall for x in s.samples], "x": ratio}
    return {"machine": info, "curve": curve}
