"""What lowering costs a user, with the run's cache cold and then warm.

The bundled case files named (default: ``cases/basics.yaml``) are copied into a
temporary project and run through ``pytest --exportcheck --exportcheck-lower
TARGET -k "lowered and TARGET-export-cpu"``, each run a whole process timed from outside:
first with ``--cache-clear`` (nothing compiled: pytest's cache, which holds the
AOTInductor packages and Inductor's own caches, emptied), then again unchanged.
Per target, serially and under ``-n 2``. ``TORCHINDUCTOR_CACHE_DIR`` is removed
from the children's environment, so Inductor's caches are the run's.

    python benchmarks/lowering_cache.py [--targets aoti,inductor] [--cases cases/basics.yaml]
    python benchmarks/lowering_cache.py --cases cases/lowering.yaml \
        --targets all,aoti,inductor,executorch,onnx,saved   # the lowering corpus

``all``: every target the cases' ``lower:`` names, in one run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(project: Path, args: list[str]) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    command = [sys.executable, "-m", "pytest", "--exportcheck", "-q", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return seconds, (summary[-1].strip("= ") if summary else f"rc {done.returncode}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="aoti,inductor")
    parser.add_argument("--cases", default="cases/basics.yaml")
    parser.add_argument("--workers", default="0,2", help="0: one process")
    args = parser.parse_args(argv)
    print(f"cases {args.cases}; python {sys.executable}")
    print(
        f"{'target':<11}{'workers':>8}{'cold s':>9}{'warm s':>9}{'warm/cold':>11}  outcome (warm)"
    )
    with tempfile.TemporaryDirectory(prefix="lowering-cache-") as directory:
        project = Path(directory)
        shutil.copytree(
            ROOT / "cases", project / "cases", ignore=shutil.ignore_patterns("field", "thirdparty")
        )
        files = [str(Path(name)) for name in args.cases.split(",")]
        for target in args.targets.split(","):
            for workers in map(int, args.workers.split(",")):
                if target == "all":  # every target the cases name, together
                    run_args = [*files, "-k", "lowered and export-cpu"]
                else:
                    run_args = [*files, "--exportcheck-lower", target]
                    run_args += ["-k", f"lowered and {target}-export-cpu"]
                run_args += ["-n", str(workers)] if workers else ["-p", "no:xdist"]
                cold, _ = timed_run(project, [*run_args, "--cache-clear"])
                warm, outcome = timed_run(project, run_args)
                print(
                    f"{target:<11}{workers or 1:>8}{cold:>9.1f}{warm:>9.1f}{warm / cold:>11.2f}"
                    f"  {outcome}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
