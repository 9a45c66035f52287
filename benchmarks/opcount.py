"""Count and time the expensive operations of a run: exports, unflattens, decompositions, copies,
calls.

Used two ways, so that the plugin and the floor are counted by the same code:

* as a pytest plugin: ``PYTHONPATH=benchmarks pytest -p opcount --exportcheck ...`` with
  ``EXPORTCHECK_BENCH_OPS=/path/out.json`` writes the counts at the end of the run
  (under xdist, each worker to ``out.json.gwN``);
* from ``floor.py --ops``: ``install()`` then ``counts()``.

Only *top-level* operations are counted: a deep copy or module call made inside
``torch.export.export`` / ``unflatten`` / ``run_decompositions`` / ``ep.module()``
(or inside another counted call) is part of that operation. Forward calls are
keyed by what was called: ``eager`` (the user's module), ``ep.module()`` (a
GraphModule unlifted from an exported program), ``decomposed`` (the same, from a
``run_decompositions()`` program) and ``unflatten``. Each count comes with the
wall time spent in those calls (``time.perf_counter``; the wrappers cost
microseconds, nothing like a profiler's overhead).
"""

from __future__ import annotations

import copy
import functools
import gc
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ENV = "EXPORTCHECK_BENCH_OPS"
_COUNTS: Counter[str] = Counter()
_SECONDS: defaultdict[str, float] = defaultdict(float)
# Garbage collection overlaps the operations above (it runs inside them), so it is kept apart.
_GC: dict[str, float] = {"seconds": 0.0, "collections": 0, "full": 0}
_gc_started = 0.0
_depth = 0
_installed = False

ORDER = (
    "export",
    "unflatten",
    "run_decompositions",
    "ep.module()",
    "deepcopy(Module)",
    "deepcopy(ExportedProgram)",
    "forward:eager",
    "forward:ep.module()",
    "forward:unflatten",
    "forward:decomposed",
    "torch.manual_seed",
)


@contextmanager
def _nested() -> Iterator[bool]:
    """Yields whether this is a top-level operation; everything inside is not."""
    global _depth
    top = _depth == 0
    _depth += 1
    try:
        yield top
    finally:
        _depth -= 1


@contextmanager
def _op(name: str | Callable[[], str]) -> Iterator[None]:
    """Count and time the block under ``name`` if it is a top-level operation."""
    with _nested() as top:
        if not top:
            yield
            return
        started = time.perf_counter()
        try:
            yield
        finally:
            key = name if isinstance(name, str) else name()
            _COUNTS[key] += 1
            _SECONDS[key] += time.perf_counter() - started


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _op(name):
            return fn(*args, **kwargs)

    return wrapper


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    global _gc_started
    if phase == "start":
        _gc_started = time.perf_counter()
        return
    _GC["seconds"] += time.perf_counter() - _gc_started
    _GC["collections"] += 1
    _GC["full"] += info.get("generation") == 2


def install() -> Counter[str]:
    """Patch torch and ``copy`` (once per process); return the live counter."""
    global _installed
    if _installed:
        return _COUNTS
    _installed = True
    gc.callbacks.append(_on_gc)
    import torch
    from torch.export import ExportedProgram
    from torch.export.unflatten import UnflattenedModule

    torch.export.export = _counted("export", torch.export.export)
    torch.export.unflatten = _counted("unflatten", torch.export.unflatten)
    # On a CPU-only build torch.manual_seed queues a lazy CUDA seed with
    # traceback.format_stack(): its cost grows with the depth of the caller's stack.
    torch.manual_seed = _counted("torch.manual_seed", torch.manual_seed)

    run_decompositions = ExportedProgram.run_decompositions

    @functools.wraps(run_decompositions)
    def counted_decompositions(self: ExportedProgram, *args: Any, **kwargs: Any) -> Any:
        with _op("run_decompositions"):
            program = run_decompositions(self, *args, **kwargs)
        program._bench_decomposed = True  # survives deepcopy (it copies __dict__)
        return program

    ExportedProgram.run_decompositions = counted_decompositions  # type: ignore[method-assign]

    unlift = ExportedProgram.module

    @functools.wraps(unlift)
    def counted_module(self: ExportedProgram, *args: Any, **kwargs: Any) -> Any:
        with _op("ep.module()"):
            module = unlift(self, *args, **kwargs)
        side = "decomposed" if getattr(self, "_bench_decomposed", False) else "ep.module()"
        object.__setattr__(module, "_bench_side", side)
        return module

    ExportedProgram.module = counted_module  # type: ignore[method-assign]

    deepcopy = copy.deepcopy

    @functools.wraps(deepcopy)
    def counted_deepcopy(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, ExportedProgram):
            name = "deepcopy(ExportedProgram)"
        elif isinstance(obj, torch.nn.Module):
            name = "deepcopy(Module)"
        else:
            with _nested():
                return deepcopy(obj, *args, **kwargs)
        with _op(name):
            return deepcopy(obj, *args, **kwargs)

    copy.deepcopy = counted_deepcopy

    call = torch.nn.Module.__call__

    def counted_call(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        def name() -> str:
            if isinstance(self, UnflattenedModule):
                return "forward:unflatten"
            return f"forward:{self.__dict__.get('_bench_side', 'eager')}"

        with _op(name):
            return call(self, *args, **kwargs)

    torch.nn.Module.__call__ = counted_call  # type: ignore[method-assign]
    return _COUNTS


def counts() -> dict[str, int]:
    return {key: _COUNTS.get(key, 0) for key in ORDER} | {
        k: v for k, v in _COUNTS.items() if k not in ORDER
    }


def seconds() -> dict[str, float]:
    return {key: round(_SECONDS.get(key, 0.0), 3) for key in counts()}


def gc_stats() -> dict[str, float]:
    """Time in the garbage collector, collections, and how many of them were full ones."""
    return {
        "seconds": round(_GC["seconds"], 3),
        "collections": _GC["collections"],
        "full": _GC["full"],
    }


# --- pytest plugin side -------------------------------------------------------------------


def pytest_configure(config: Any) -> None:
    if os.environ.get(ENV):
        install()


def pytest_unconfigure(config: Any) -> None:
    path = os.environ.get(ENV)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if path and worker:  # under xdist each worker reports to a file of its own
        path = f"{path}.{worker}"
    if path and _installed:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(
                {"counts": counts(), "seconds": seconds(), "gc": gc_stats()}, handle, indent=1
            )
