"""Benchmark pytest-exportcheck: vs the floor, under xdist, at start-up, optionally in memory.

    python benchmarks/run.py                 # the full run (~10 min on 2 cores)
    python benchmarks/run.py --quick         # smoke run: one generated case, once (~10 s)
    python benchmarks/run.py --memory        # also peak RSS: 500 cases vs the largest one (slow)
    python benchmarks/run.py --ops           # also count exports/unflattens/copies/calls

Every measurement is a fresh subprocess (wall time from outside, CPU time and
peak RSS from ``os.wait4``), repeated ``--repeat`` times; the table shows
medians. The repetitions of floor / plugin / plugin ``-n 2`` are interleaved so
that a change in machine load hits all three alike.

A run that did not do the work stops the benchmark rather than time it: the floor
must exit 0 having run at least one case (a floor that died at import once exited 1,
which reads like "items failed", and its 2 s stood as the floor). ``--quick`` is the
smoke run that keeps the harness working (tests/plugin/test_benchmark_smoke.py runs
it): floor and plugin once on one generated case, no ``-n 2``, one start-up run each;
every process must exit 0 and the plugin must pass as many items as the floor ran checks.

``--plugin-src DIR`` puts ``DIR`` first on ``PYTHONPATH`` (for the floor too, and
with ``PYTHONSAFEPATH=1`` so that the working directory does not shadow it),
e.g. ``git archive HEAD pytest_exportcheck | tar -x -C /tmp/head`` then
``--plugin-src /tmp/head``: a fixed revision while the checkout is being edited.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate_cases  # noqa: E402

PYTHON = sys.executable
# hypothesis is a test dependency of this project, not of the plugin: its pytest plugin
# costs each process ~1.5 s of start-up and end that is not ours to measure.
PYTEST = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
QUICK = "generated-quick-"  # the smoke run's corpus directory, under benchmarks/
# Only the export paths' items: the floor has no counterpart for the others (export_paths.py).
EXPORT_ONLY = ["-p", "export_paths"]
# plugin/floor as issue 47 sets it (0.90 before, issue 18), (-n 2)/single as issue 18 does.
TARGETS = {"plugin/floor": 0.70, "xdist/single": 0.58, "startup_ms": 20.0, "memory": 1.5}


@dataclass
class Sample:
    wall: float
    cpu: float  # user + sys of the process and its reaped children
    maxrss_mb: float
    rc: int
    tail: str


@dataclass
class Series:
    label: str
    command: list[str]
    samples: list[Sample] = field(default_factory=list)
    # Exit statuses that still measured the work: 1 is a pytest run with failing items
    # (counted, with a warning); the floor exits 0 or did not run.
    statuses: tuple[int, ...] = (0, 1)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def maxrss_mb(self) -> float:
        return max(s.maxrss_mb for s in self.samples)

    @property
    def failed_runs(self) -> int:
        return sum(s.rc != 0 for s in self.samples)


def environment(plugin_src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(plugin_src)] if plugin_src else []
    if plugin_src:
        # `python -m pytest` (and xdist's `python -c` workers) would put the working
        # directory, hence this checkout's package, ahead of PYTHONPATH.
        env["PYTHONSAFEPATH"] = "1"
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    # The benchmarks' own pytest plugins (export_paths, opcount) are imported from here.
    paths.append(str(HERE))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def measure(command: Sequence[str], *, env: dict[str, str], cwd: Path = ROOT) -> Sample:
    """Run ``command`` once; wall time, CPU time and peak RSS of it (and its children)."""
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        tail = log.read()[-3000:].decode("utf-8", "replace")
    return Sample(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        maxrss_mb=usage.ru_maxrss / 1024,
        rc=proc.returncode,
        tail=tail,
    )


def run_series(series: list[Series], repeat: int, env: dict[str, str]) -> None:
    """``repeat`` rounds, each running every series once (interleaved).

    A run with failing items (exit status 1) still counts, with a warning: its
    time is real, but the failures change the work, so the table says so. Any
    other non-zero status (usage error, internal error) stops the benchmark.
    """
    for round_ in range(1, repeat + 1):
        for s in series:
            sample = measure(s.command, env=env)
            if sample.rc not in s.statuses:
                raise SystemExit(
                    f"{s.label} failed (rc {sample.rc}):\n{' '.join(s.command)}\n{sample.tail}"
                )
            if sample.rc == 1:
                summary = [line for line in sample.tail.splitlines() if "FAILED" in line]
                print(f"  WARNING: {s.label}: items failed:", *summary[:10], sep="\n    ")
            s.samples.append(sample)
            print(
                f"  [{round_}/{repeat}] {s.label:<22} wall {sample.wall:7.2f} s   "
                f"cpu {sample.cpu:7.2f} s   rss {sample.maxrss_mb:6.0f} MB",
                flush=True,
            )


FLOOR_LINE = re.compile(
    r"^floor: (\d+) cases, (\d+) captures, (\d+) checks, (\d+) not passed", re.M
)
PASSED = re.compile(r"\b(\d+) passed\b")


def floor_counts(tail: str) -> tuple[int, int, int, int]:
    """The floor's closing line: (cases, captures, checks, not passed); it must have run."""
    found = FLOOR_LINE.search(tail)
    if found is None or int(found[1]) == 0:
        raise SystemExit(f"the floor ran no case:\n{tail}")
    cases, captures, checks, failed = map(int, found.groups())
    return cases, captures, checks, failed


def check_smoke(results: dict[str, Series]) -> None:
    """``--quick``: the plugin ran and passed the items the floor ran checks for."""
    _, _, checks, failed = floor_counts(results["floor"].samples[-1].tail)
    passed = PASSED.findall(results["plugin"].samples[-1].tail)
    if failed or not passed or int(passed[-1]) != checks:
        raise SystemExit(
            f"smoke run: the floor ran {checks} checks ({failed} not passed), the plugin "
            f"passed {passed[-1] if passed else 'nothing'}:\n{results['plugin'].samples[-1].tail}"
        )
    print(f"  smoke run: floor and plugin agree on {checks} checks", flush=True)


# --- start-up ------------------------------------------------------------------------------

PROBE_CONFTEST = """\
import sys


def pytest_collection_finish(session):
    # The plugin must not import torch in a run without --exportcheck.
    if "torch" in sys.modules:
        raise RuntimeError("torch was imported during a plain pytest start-up")
"""


def startup(runs: int, env: dict[str, str], *, warm: bool = True) -> tuple[Series, Series]:
    """``pytest --collect-only`` of one trivial test, with the plugin vs ``-p no:exportcheck``."""
    with tempfile.TemporaryDirectory(prefix="exportcheck-startup-") as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (project / "conftest.py").write_text(PROBE_CONFTEST, encoding="utf-8")
        (project / "test_trivial.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
        # hypothesis's plugin too is not ours to measure (PYTEST above): without it, both
        # sides lose the same ~1.5 s and their difference stands out of less noise.
        base = [*PYTEST[:3], "--collect-only", *PYTEST[3:]]
        loaded = Series("startup (plugin)", base)
        blocked = Series("startup (no:exportcheck)", [*base, "-p", "no:exportcheck"])
        if warm:  # the file cache (a smoke run measures nothing and skips it)
            measure(base, env=env, cwd=project)
        for index in range(runs):
            pair = (loaded, blocked) if index % 2 == 0 else (blocked, loaded)
            for s in pair:
                sample = measure(s.command, env=env, cwd=project)
                if sample.rc != 0 or "1 test collected" not in sample.tail:
                    raise SystemExit(f"{s.label} failed (rc {sample.rc}):\n{sample.tail}")
                s.samples.append(sample)
    print(
        f"  startup: {runs} runs each; torch was not imported in any (probe conftest)", flush=True
    )
    return loaded, blocked


# --- memory --------------------------------------------------------------------------------


def memory(count: int, env: dict[str, str]) -> dict[str, Series]:
    """Peak RSS of the plugin (and the floor) on ``count`` generated cases vs the largest one."""
    out = HERE / f"generated-memory-{count}"  # git-ignored; not under generated/, which
    # a `floor.py benchmarks/generated` would search recursively
    files = generate_cases.generate(out, count)
    big_file, big_case = generate_cases.largest_case(out)
    print(f"  memory corpus: {count} cases in {out}; largest case {big_file.name}::{big_case}")
    rel = [str(f.relative_to(ROOT)) for f in files]
    one = f"{big_file.relative_to(ROOT)}::{big_case}"
    series = {
        "plugin, corpus": Series(f"plugin, {count} cases", [*PYTEST, "--exportcheck", *rel]),
        "plugin, largest": Series("plugin, largest case", [*PYTEST, "--exportcheck", one]),
        "floor, corpus": Series(f"floor, {count} cases", [PYTHON, str(HERE / "floor.py"), *rel]),
    }
    for s in series.values():
        run_series([s], 1, env)
    return series


# --- operation counts ----------------------------------------------------------------------


def operation_counts(paths: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="exportcheck-ops-") as tmp:
        report = Path(tmp) / "plugin.json"
        ops_env = dict(env, EXPORTCHECK_BENCH_OPS=str(report))
        ops_env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(HERE)) if p)
        sample = measure(
            [*PYTEST, *EXPORT_ONLY, "-p", "opcount", "--exportcheck", *paths], env=ops_env
        )
        if sample.rc != 0:
            raise SystemExit(f"plugin with opcount failed:\n{sample.tail}")
        plugin = json.loads(report.read_text(encoding="utf-8"))
    plugin["wall"] = sample.wall
    sample = measure([PYTHON, str(HERE / "floor.py"), "--ops", *paths], env=env)
    lines = [line.split() for line in sample.tail.splitlines()]
    rows = [row for row in lines if row and row[0] == "ops"]
    collector = next(row for row in lines if row and row[0] == "gc")
    floor = {
        "counts": {row[1]: int(row[2]) for row in rows},
        "seconds": {row[1]: float(row[3]) for row in rows},
        "gc": {
            "seconds": float(collector[1]),
            "collections": int(collector[2]),
            "full": int(collector[3]),
        },
        "wall": sample.wall,
    }
    return {"plugin": plugin, "floor": floor}


# --- report --------------------------------------------------------------------------------


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "MISSED"


def report(
    results: dict[str, Series] | None,
    startup_pair: tuple[Series, Series] | None,
    mem: dict[str, Series] | None,
    ops: dict[str, Any] | None,
    corpus: str,
) -> dict[str, object]:
    print(f"\ncorpus: {corpus}")
    print(f"{'measurement':<30}{'wall (median)':>15}{'cpu (median)':>15}{'peak RSS':>11}{'n':>4}")
    rows = [*(results or {}).values(), *(startup_pair or ()), *(mem or {}).values()]
    for s in rows:
        note = f"  ({s.failed_runs} with failing items)" if s.failed_runs else ""
        print(
            f"{s.label:<30}{s.wall:>13.3f} s{s.cpu:>13.3f} s{s.maxrss_mb:>8.0f} MB"
            f"{len(s.samples):>4}{note}"
        )
    summary: dict[str, object] = {"corpus": corpus}
    print("\nratio                          value   target")
    if results:
        floor, single = results["floor"], results["plugin"]
        ratio = single.wall / floor.wall
        print(
            f"plugin / floor (wall)       {ratio:8.2f}  <= {TARGETS['plugin/floor']:.2f}  "
            f"{verdict(ratio, TARGETS['plugin/floor'])}   (cpu: {single.cpu / floor.cpu:.2f})"
        )
        summary["plugin_over_floor"] = ratio
    if results and "plugin -n 2" in results:
        speedup = results["plugin -n 2"].wall / results["plugin"].wall
        print(
            f"(-n 2) / single (wall)      {speedup:8.2f}  <= {TARGETS['xdist/single']:.2f}  "
            f"{verdict(speedup, TARGETS['xdist/single'])}"
        )
        summary["xdist_over_single"] = speedup
    if startup_pair:
        loaded, blocked = startup_pair
        diff_ms = (loaded.wall - blocked.wall) * 1000
        best_ms = (
            min(s.wall for s in loaded.samples) - min(s.wall for s in blocked.samples)
        ) * 1000
        print(
            f"start-up difference (ms)    {diff_ms:8.1f}  <= {TARGETS['startup_ms']:.0f}    "
            f"{verdict(diff_ms, TARGETS['startup_ms'])}   (best-of: {best_ms:.1f} ms)"
        )
        summary |= {"startup_diff_ms": diff_ms, "startup_best_diff_ms": best_ms}
    if mem:
        corpus_rss = mem["plugin, corpus"].maxrss_mb
        one_rss = mem["plugin, largest"].maxrss_mb
        mem_ratio = corpus_rss / one_rss
        print(
            f"peak RSS corpus / largest   {mem_ratio:8.2f}  <= {TARGETS['memory']:.2f}  "
            f"{verdict(mem_ratio, TARGETS['memory'])}   ({corpus_rss:.0f} MB vs {one_rss:.0f} MB;"
            f" floor on the corpus {mem['floor, corpus'].maxrss_mb:.0f} MB)"
        )
        summary |= {"memory_ratio": mem_ratio}
    if ops:
        floor_ops, plugin_ops = ops["floor"], ops["plugin"]
        keys = list(dict.fromkeys([*floor_ops["counts"], *plugin_ops["counts"]]))
        print(
            f"\n{'operation (one run each)':<28}{'floor':>8}{'plugin':>8}"
            f"{'floor s':>10}{'plugin s':>10}{'extra s':>10}"
        )
        for key in [*keys, "rest", "total"]:
            if key == "total":
                f_s, p_s = floor_ops["wall"], plugin_ops["wall"]
                f_n = p_n = ""
            elif key == "rest":  # interpreter, imports, pytest, comparisons, cloning, ...
                f_s = floor_ops["wall"] - sum(floor_ops["seconds"].values())
                p_s = plugin_ops["wall"] - sum(plugin_ops["seconds"].values())
                f_n = p_n = ""
            else:
                f_s, p_s = floor_ops["seconds"].get(key, 0.0), plugin_ops["seconds"].get(key, 0.0)
                f_n, p_n = floor_ops["counts"].get(key, 0), plugin_ops["counts"].get(key, 0)
            print(f"{key:<28}{f_n:>8}{p_n:>8}{f_s:>10.2f}{p_s:>10.2f}{p_s - f_s:>+10.2f}")
        f_gc, p_gc = floor_ops["gc"], plugin_ops["gc"]
        print(
            f"{'gc (inside the above)':<28}{f_gc['full']:>8}{p_gc['full']:>8}"
            f"{f_gc['seconds']:>10.2f}{p_gc['seconds']:>10.2f}"
            f"{p_gc['seconds'] - f_gc['seconds']:>+10.2f}   (counts: full collections)"
        )
        summary["ops"] = ops
    summary["series"] = {
        s.label: {
            "wall_median": s.wall,
            "cpu_median": s.cpu,
            "peak_rss_mb": s.maxrss_mb,
            "walls": [x.wall for x in s.samples],
            "failed_runs": s.failed_runs,
        }
        for s in rows
    }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument(
        "--count", type=int, default=None, help="generated cases (default 60; --quick: 1)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1 generated case, 1 repeat, no -n 2; every process must succeed",
    )
    parser.add_argument("--startup-runs", type=int, default=None, help="default 15 (--quick: 1)")
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS (slow)")
    parser.add_argument("--memory-count", type=int, default=500, help="cases for --memory")
    parser.add_argument("--ops", action="store_true", help="also count expensive operations")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up runs")
    parser.add_argument(
        "--scaling", action="store_true", help="only the scaling curve: serial, -n 2, 4, 8, 14"
    )
    parser.add_argument(
        "--no-main", action="store_true", help="skip floor / plugin / -n 2 (e.g. --memory alone)"
    )
    parser.add_argument("--plugin-src", type=Path, help="put this directory first on PYTHONPATH")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    repeat = args.repeat or (1 if args.quick else 3)
    count = args.count if args.count is not None else (1 if args.quick else 60)
    startup_runs = args.startup_runs or (1 if args.quick else 15)
    plugin_src = args.plugin_src.resolve() if args.plugin_src else None
    env = environment(plugin_src)

    with contextlib.ExitStack() as stack:
        out = HERE / "generated"
        if args.quick:  # apart (generated-*/ is git-ignored): a full run may be reading generated/
            out = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=HERE, prefix=QUICK)))
        files = generate_cases.generate(out, count, sizes=False)
        return run(args, env, files, count, repeat, startup_runs)


def run(
    args: argparse.Namespace,
    env: dict[str, str],
    files: list[Path],
    count: int,
    repeat: int,
    startup_runs: int,
) -> int:
    # --quick: the generated cases alone (a bundled file holds xfails, and costs seconds).
    bundled = [] if args.quick else sorted((ROOT / "cases").glob("*.yaml"))
    paths = [str(p.relative_to(ROOT)) for p in [*bundled, *files]]
    corpus = f"{len(bundled)} bundled files (cases/) + {count} generated cases ({len(files)} files)"
    if not args.no_main:
        print(f"benchmark: {corpus}, {repeat} repetition(s); python {PYTHON}", flush=True)
    started = time.perf_counter()
    if args.scaling:
        import scaling

        figures = scaling.scaling(PYTEST, paths, repeat, run_series, Series, env, PYTHON)
        print(f"\ncorpus: {corpus}\ntotal {time.perf_counter() - started:.0f} s")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
        return 0

    results = None
    if not args.no_main:
        # A smoke run's plugin must pass every item (exit 0): nothing in it fails.
        plugin_statuses = (0,) if args.quick else (0, 1)
        results = {
            "floor": Series("floor", [PYTHON, str(HERE / "floor.py"), *paths], statuses=(0,)),
            "plugin": Series(
                "plugin",
                [*PYTEST, *EXPORT_ONLY, "--exportcheck", *paths],
                statuses=plugin_statuses,
            ),
        }
        if not args.quick:  # two workers' start-up would dominate a smoke run's few items
            results["plugin -n 2"] = Series(
                "plugin -n 2", [*PYTEST, *EXPORT_ONLY, "--exportcheck", "-n", "2", *paths]
            )
        run_series(list(results.values()), repeat, env)
        for sample in results["floor"].samples:
            floor_counts(sample.tail)
        if args.quick:
            check_smoke(results)
    startup_pair = None if args.no_startup else startup(startup_runs, env, warm=not args.quick)
    mem = memory(args.memory_count, env) if args.memory else None
    ops = operation_counts(paths, env) if args.ops else None
    summary = report(results, startup_pair, mem, ops, corpus)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
