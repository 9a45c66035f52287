"""The quick loop covers every module: run ``pytest -m quick`` traced, name what it missed.

    python tests/quick_coverage.py            # -n 2, as the README's quick loop runs it
    python tests/quick_coverage.py -- -p no:xdist -x     # extra pytest arguments

Every ``pytest_exportcheck/**/*.py`` must be exercised by some quick test: one of its
functions called (in the test process, a worker, a forked child or a pytest subprocess a
test starts; ``quick_trace.py`` records them), or, for a module that defines no function,
imported. Exits 1 naming each module that is not, or when the quick tests fail; prints
the wall time (the quick loop's budget is 60 s on 2 cores, see docs/architecture.md).
Run it after marking or unmarking tests ``quick``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
PACKAGE = ROOT / "pytest_exportcheck"
# Comprehensions run where they are written (at import, for a module's or a class's);
# a module's own functions say whether it was exercised.
_INLINE = {"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"}


@dataclass(frozen=True)
class Coverage:
    module: str  # path relative to the repository root
    functions: int
    called: int
    imported: bool

    @property
    def exercised(self) -> bool:
        return self.called > 0 if self.functions else self.imported


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_objects(const)


def functions_of(source: str, filename: str) -> set[tuple[int, str]]:
    """(first line, qualified name) of every function ``source`` defines, lambdas too."""
    return {
        (code.co_firstlineno, code.co_qualname)
        for code in _code_objects(compile(source, filename, "exec"))
        if code.co_flags & inspect.CO_NEWLOCALS and code.co_name not in _INLINE
    }


def read_trace(lines: Iterable[str]) -> dict[str, set[tuple[int, str]]]:
    """``quick_trace.py``'s lines -> file -> (first line, qualified name) of what ran."""
    ran: dict[str, set[tuple[int, str]]] = {}
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 3 and parts[1].isdigit():
            ran.setdefault(os.path.realpath(parts[0]), set()).add((int(parts[1]), parts[2]))
    return ran


def coverage(package: Path, ran: dict[str, set[tuple[int, str]]]) -> list[Coverage]:
    rows = []
    for path in sorted(package.rglob("*.py")):
        functions = functions_of(path.read_text(encoding="utf-8"), str(path))
        hits = ran.get(os.path.realpath(path), set())
        rows.append(
            Coverage(
                module=str(path.relative_to(package.parent)),
                functions=len(functions),
                called=len(functions & hits),
                imported=(1, "<module>") in hits,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", default="2", help="pytest-xdist workers (default 2)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every module")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="exportcheck-quick-") as tmp:
        trace = Path(tmp) / "trace.tsv"
        env = dict(os.environ, EXPORTCHECK_QUICK_TRACE=str(trace), PYTEST_PLUGINS="quick_trace")
        # The tracer is imported from tests/ by every pytest process, subprocesses too;
        # the checkout's package comes first (the editable install may point elsewhere).
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), str(TESTS), env.get("PYTHONPATH")) if p
        )
        command = [sys.executable, "-m", "pytest", "-m", "quick", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "quick_trace", "-n", args.n, *args.pytest_args]
        started = time.perf_counter()
        status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        wall = time.perf_counter() - started
        ran = read_trace(trace.read_text(encoding="utf-8").splitlines() if trace.exists() else [])
    rows = coverage(PACKAGE, ran)
    missed = [row for row in rows if not row.exercised]
    for row in rows if args.verbose else missed:
        state = "ok" if row.exercised else "NOT EXERCISED"
        print(f"{row.module:<58} {row.called:>4}/{row.functions:<4} functions called  {state}")
    called = sum(row.called for row in rows)
    functions = sum(row.functions for row in rows)
    print(
        f"quick loop: {wall:.1f} s wall (traced), pytest exit status {status}; "
        f"{len(rows) - len(missed)}/{len(rows)} modules exercised, "
        f"{called}/{functions} functions called"
    )
    if missed:
        print(f"{len(missed)} module(s) no quick test exercises: mark a test that does `quick`")
    return 1 if missed or status != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
