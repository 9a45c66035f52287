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
"""

from __future__ import annotations

import os

USER_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


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
