"""torch's CPU threads in an xdist worker: the machine's cores shared out, not multiplied.

torch sizes its intra-op thread pool to the machine's cores in every process. So
``-n 14`` on 16 cores starts 14 workers of 16 threads each, 224 threads on 16
cores, and every parallel kernel (matmul, conv, reductions) waits on threads the
other workers preempt. Each worker is given its share instead::

    threads per worker = max(1, usable cores // workers)

One process (no ``-n``) keeps torch's default. A user who set ``OMP_NUM_THREADS``
or ``MKL_NUM_THREADS`` decided already: their setting stands. The thread count
changes no outcome the checks compare: parity has tolerances, and eager is
compared with itself within one process.

Inductor (the ``inductor`` and ``aoti`` lowering targets) is the same story with
processes: it compiles with a pool of one process per core, in every process that
compiles. On the 16-core GPU machine, 14 workers lowering ``cases/lowering.yaml``
spent 818 s of item time in 13 cases' CPU compiles (``benchmarks/results/
2026-11-27b-h100-16cores.md``). Each worker gets its share of compile processes too
(``TORCHINDUCTOR_COMPILE_THREADS``, unless the user set it; 1 compiles in the worker
itself): on 2 cores under ``-n 2``, a cold run of that file took 68.8 and 71.1 s
against 79.7 and 74.0 s with torch's default. The generated code is the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

USER_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
COMPILE_THREADS = "TORCHINDUCTOR_COMPILE_THREADS"


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def share(cores: int, workers: int) -> int:
    return max(1, cores // max(1, workers))


def limit_for_worker(workers: int) -> int | None:
    """Set this worker's torch threads to its share; the number set (None: left alone)."""
    if any(os.environ.get(name) for name in USER_SETTINGS):
        return None
    import torch

    threads = share(usable_cores(), workers)
    if threads < torch.get_num_threads():
        torch.set_num_threads(threads)
        return threads
    return None


def limit_compile_threads(
    workers: int, environ: MutableMapping[str, str] = os.environ
) -> int | None:
    """Set this worker's Inductor compile processes to its share; the number set (None:
    the user's ``TORCHINDUCTOR_COMPILE_THREADS`` stands). Inductor reads the variable when
    its config is first imported, so it is set for that, and on the config if it is in."""
    if environ.get(COMPILE_THREADS):
        return None
    threads = share(usable_cores(), workers)
    environ[COMPILE_THREADS] = str(threads)
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = threads  # type: ignore[attr-defined]
    return threads
