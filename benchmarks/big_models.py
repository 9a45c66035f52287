"""Big models: one plugin item against a plain script doing the same work, as a user pays.

    python benchmarks/big_models.py                  # alexnet, vgg11, resnet50; both modes
    python benchmarks/big_models.py --models alexnet --items "mutation[export-cpu]"
    python benchmarks/big_models.py --one-process    # every item in one process: RSS after each
    python benchmarks/big_models.py --whole-cases    # every item under -n 2

The architectures are torchvision's, written out in ``big_archs.py`` (random
weights), so the benchmark runs on any torch the plugin supports. Each
measurement is a whole process (peak RSS from ``os.wait4``, wall time from
outside, torch's import included in both):

- **plain**: what a user's script does for the same work, sharing what it can:
  build, ``torch.export.export`` (strict as the item's capture says),
  ``run_decompositions()``, ``ep.module()``, ``unflatten(ep)``, the program saved
  and loaded again (``torch.export.save`` / ``load``: the item runs that one too),
  and three seeded calls of eager and of each of those on cloned inputs;
- **issue's loop**: the same without the save and load (the loop of issue 29's table);
- **plugin**: ``pytest --exportcheck`` on a one-case YAML, ``-k`` the one item.

The two sides take turns, three runs each (``--repeat``): wall time on this shared
VM varies by ~20% from run to run, so each figure is a median, and the
plugin-to-plain range is printed beside it.

The bar (issue 29): the plugin's peak RSS and wall time at most 1.3x the plain
script's. Hypothesis's pytest plugin is disabled in the plugin's process: where
hypothesis is installed it imports hypothesis at the terminal summary (1.6 s),
whether or not this plugin runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {"rss": 1.3, "time": 1.3}
ITEMS = ("mutation[export-cpu]", "mutation[export-strict-cpu]")
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
PYTEST += ["-p", "no:hypothesispytest", "--exportcheck"]

MODELS = {"alexnet": "AlexNet", "vgg11": "VGG11", "resnet50": "ResNet50"}
INPUT = [1, 3, 224, 224]

CASE = """
cases:
  {name}:
    description: {cls} with random weights (benchmarks/big_models.py)
    model: {{target: archs.py:{cls}}}
    inputs: {{args: [{{shape: {shape}}}]}}
    captures: [export, export-strict]
    checks: [signature, hierarchy, mutation, parity]
"""

PLAIN = """
import io, sys, torch
sys.path.insert(0, {directory!r})
from archs import {cls}
torch.manual_seed(0)
model = {cls}()
x = torch.randn({shape})
ep = torch.export.export(model, (x,), strict={strict})
decomposed = ep.run_decompositions()
runs = [model, ep.module(), torch.export.unflatten(ep)]
if {saved}:
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    buffer.seek(0)
    runs.append(torch.export.load(buffer).module())
    del buffer
for run in runs:
    for _ in range(3):
        torch.manual_seed(0)
        run(x.clone())
"""


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0,):
        sys.stderr.write(output.decode("utf-8", "replace")[-3000:])
    return wall, usage.ru_maxrss / 1024, rc


def _median(runs: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    """Median wall and median peak RSS of a side's runs; the worst exit status."""
    middle = len(runs) // 2
    wall = sorted(run[0] for run in runs)[middle]
    rss = sorted(run[1] for run in runs)[middle]
    return wall, rss, max((run[2] for run in runs), key=abs)


def project_with(models: list[str], directory: Path) -> Path:
    """A project whose ``cases/`` holds one YAML case per model and ``archs.py``."""
    (directory / "cases").mkdir()
    shutil.copy(HERE / "big_archs.py", directory / "cases" / "archs.py")
    for name in models:
        (directory / "cases" / f"{name}.yaml").write_text(
            CASE.format(name=name, cls=MODELS[name], shape=INPUT)
        )
    return directory


def whole_cases(models: list[str], workers: int = 2) -> int:
    """The issue's sweep in small: all items of the big cases under ``-n 2``, no worker lost."""
    with tempfile.TemporaryDirectory() as tmp:
        project = project_with(models, Path(tmp))
        command = [*PYTEST, "-n", str(workers), "cases"]
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=project, capture_output=True, text=True)
        wall = time.perf_counter() - started
    # The controller reaps its workers: its children's peak is the largest worker's.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"{', '.join(models)}: every item, -n {workers}; python {sys.executable}")
    print(f"wall {wall:.1f} s; largest process's peak RSS {peak:.0f} MB; rc {proc.returncode}")
    print(summary)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return proc.returncode


RSS_AFTER_ITEMS = """
import os

def pytest_runtest_logfinish(nodeid, location):
    # After the item's teardown: the session has dropped what no later item needs.
    # VmData is what the memory limit (RLIMIT_DATA) counts.
    status = dict(
        line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line
    )
    kib = [int(status[key].split()[0]) for key in ("VmRSS", "VmData")]
    with open(os.environ["BIG_MODELS_RSS_LOG"], "a") as log:
        log.write(f"{nodeid}\\t{kib[0] << 10}\\t{kib[1] << 10}\\n")
"""


def one_process(models: list[str]) -> int:
    """Every item of the big cases one after another in one process: RSS after each, and
    after each case's last item against the level before its first."""
    with tempfile.TemporaryDirectory() as tmp:
        project = project_with(models, Path(tmp))
        (project / "conftest.py").write_text(RSS_AFTER_ITEMS)
        log = project / "rss.log"
        env = dict(os.environ, BIG_MODELS_RSS_LOG=str(log))
        wall, peak, rc = measure([*PYTEST, "-p", "no:xdist", "cases"], project, env)
        rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    print(f"{', '.join(models)}: every item in one process; python {sys.executable}")
    print(f"wall {wall:.1f} s; peak RSS {peak:.0f} MB; rc {rc}")
    before = None
    for index, (nodeid, rss_bytes, data_bytes) in enumerate(rows):
        rss, data = int(rss_bytes) / 2**20, int(data_bytes) / 2**20
        case = nodeid.split("::")[0]
        last = index + 1 == len(rows) or rows[index + 1][0].split("::")[0] != case
        note = ""
        if last and before is not None:
            note = f"  case done: {rss - before:+.0f} MB against the case before it"
        print(f"{rss:8.0f} MB  (VmData {data:6.0f} MB)  {nodeid}{note}")
        if last:
            before = rss
    return rc if rc != 1 else 0  # 1: some item failed, which the rows show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--items", default=",".join(ITEMS))
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--whole-cases",
        action="store_true",
        help="instead: every item of the models' cases (both captures, all four checks) "
        "in one `pytest --exportcheck -n 2` run; wall, outcomes, the largest process's peak",
    )
    mode.add_argument(
        "--one-process",
        action="store_true",
        help="instead: every item of the models' cases in one process, RSS after each",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each side per item (medians printed)"
    )
    args = parser.parse_args(argv)
    models = args.models.split(",")
    if args.whole_cases:
        return whole_cases(models)
    if args.one_process:
        return one_process(models)
    # As an installed package runs: Python caches its bytecode (pytest its rewritten
    # plugin modules) after the first run. This machine sets PYTHONDONTWRITEBYTECODE,
    # under which every process compiles the plugin's modules again (~1.4 s).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:  # the first run, which fills those caches
        project = project_with(models[:1], Path(tmp))
        measure([*PYTEST, "-p", "no:xdist", "cases", "-k", "signature"], project, env)
    print(f"input {INPUT}; python {sys.executable}; bytecode cached as after a first run")
    print(f"each side run {args.repeat} times, taking turns: medians, and the plugin's range")
    header = ("model", "item", "plain s", "plugin s", "x", "plain MB", "plugin MB", "x")
    widths = (10, 28, 9, 10, 6, 10, 11, 6)
    print(
        "".join(
            f"{h:>{w}}" if i > 1 else f"{h:<{w}}"
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    )
    failed = worst = 0.0
    loops = []
    for name in models:
        for item in args.items.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                project = project_with([name], Path(tmp))
                fields = dict(directory=str(project / "cases"), cls=MODELS[name])
                fields.update(shape=tuple(INPUT), strict="strict" in item)
                plain_command = [sys.executable, "-c", PLAIN.format(**fields, saved=True)]
                plugin_command = [*PYTEST, "-p", "no:xdist", f"cases/{name}.yaml", "-k", item]
                # Wall time on a shared VM varies by 20% from run to run: the sides
                # take turns, and each figure is the median of its runs.
                runs = [
                    (measure(plain_command, project, env), measure(plugin_command, project, env))
                    for _ in range(args.repeat)
                ]
                plain = _median([run[0] for run in runs])
                plugin = _median([run[1] for run in runs])
                spread = sorted(run[1][0] / run[0][0] for run in runs)
                issue_loop = measure(
                    [sys.executable, "-c", PLAIN.format(**fields, saved=False)], project, env
                )
            failed += plain[2] != 0 or issue_loop[2] != 0 or plugin[2] != 0
            ratios = plugin[0] / plain[0], plugin[1] / plain[1]
            worst = max(worst, *ratios)
            print(
                f"{name:<10}{item:<28}{plain[0]:>9.1f}{plugin[0]:>10.1f}{ratios[0]:>6.2f}"
                f"{plain[1]:>10.0f}{plugin[1]:>11.0f}{ratios[1]:>6.2f}"
                + (f"  (time x {spread[0]:.2f}-{spread[-1]:.2f})" if len(spread) > 1 else "")
                + ("" if plugin[2] == 0 else f"  (plugin rc {plugin[2]})")
            )
            loops.append(f"{name} {item}: {issue_loop[0]:.1f} s, {issue_loop[1]:.0f} MB")
    print(f"bar: time and peak RSS <= {TARGETS['time']}x the plain script's; worst {worst:.2f}x")
    print("issue's loop (no save and load): " + "; ".join(loops))
    return 1 if failed or worst > TARGETS["time"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
