"""How many xdist workers may use one GPU at a time, and why that many.

Measured on one H100 (80 GB), 16 cores, torch 2.11, the bundled corpus on all
devices at ``-n 8``: with each GPU owned by one worker (every cuda item in that
worker) 213 s; with every worker sharing it 85 s, same outcomes. Fourteen
workers sharing it peaked at 10.6 GB together (about 0.76 GB a worker: the
CUDA context and the case it holds), GPU utilisation under 1%: these items are
CPU-bound. So workers share a GPU by default, capped so that together they
cannot run it out of memory::

    cap = floor(free memory at start x 0.9 / memory per worker), at least 1,
          at most the number of workers

*Memory per worker* is the ``exportcheck_gpu_memory_per_worker`` ini option
if set; else the largest peak a worker reached in the last run on this
machine (pytest's cache), plus a CUDA context and half again; else 4 GiB, five
times what the corpus needs. ``--exportcheck-gpu-workers N`` (or the ini
option) sets the cap instead: ``1`` gives each GPU to one worker, for models
that need the whole GPU; ``all`` lifts it.

Nothing here imports torch at module level: the controller reads free memory
only when the run has GPU items.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

GIB = 1 << 30
DEFAULT_MEMORY_PER_WORKER = 4 * GIB
CONTEXT_BYTES = GIB // 2  # a CUDA context, which max_memory_reserved does not count
USABLE_FRACTION = 0.9  # of the free memory at start: leave room for fragmentation
PEAK_MARGIN = 1.5
PEAK_CACHE_KEY = "exportcheck/gpu_peak_bytes"
# Tests (and curious users) pretend a GPU has this much free memory: cuda:96=12GiB,...
SIMULATE_FREE_ENV = "EXPORTCHECK_SIMULATE_GPU_FREE"

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


class SharingError(ValueError):
    """A worker count or memory size nobody can read."""


def parse_workers(text: str) -> int | None:
    """``auto`` → None (derive it), ``all`` → no cap (a very large number), ``N`` → N >= 1."""
    value = text.strip().lower()
    if value == "auto":
        return None
    if value == "all":
        return 1 << 30
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise SharingError(f"workers per GPU {text!r}: use auto, all or a number from 1")


def parse_size(text: str) -> int:
    """``4GiB``, ``2.5G``, ``512MiB``, ``1073741824`` → bytes (K/M/G/T are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise SharingError(f"memory size {text!r}: use e.g. 4GiB, 512MiB or a number of bytes")
    number, unit, _ = match.groups()
    power = " kmgt".index(unit.lower() or " ")
    return int(float(number) * (1024**power))


def show_size(size: float) -> str:
    return f"{size / GIB:.1f} GiB"


@dataclass(frozen=True)
class Cap:
    """How many workers may use one GPU, and the arithmetic that gave the number."""

    workers: int
    why: str


def requested_workers_per_gpu(config: Any) -> int | None:
    """The cap the user set (None: derive it from free memory)."""
    if config.getoption("exportcheck_share_gpus"):
        return parse_workers("all")
    option = config.getoption("exportcheck_gpu_workers")
    return parse_workers(option if option is not None else config.getini("exportcheck_gpu_workers"))


def memory_per_worker(setting: str, last_peak: int | None) -> tuple[int, str]:
    """Bytes one worker may need on a GPU, and where the figure comes from."""
    if setting.strip():
        size = parse_size(setting)
        return size, f"{show_size(size)} per worker (exportcheck_gpu_memory_per_worker)"
    if last_peak:
        size = int((last_peak + CONTEXT_BYTES) * PEAK_MARGIN)
        return size, (
            f"{show_size(size)} per worker (last run's peak {show_size(last_peak)} + a CUDA "
            f"context, x{PEAK_MARGIN:g})"
        )
    return DEFAULT_MEMORY_PER_WORKER, f"{show_size(DEFAULT_MEMORY_PER_WORKER)} per worker (default)"


def cap_for(
    device: str, workers: int, requested: int | None, free: int | None, per_worker: tuple[int, str]
) -> Cap:
    """The cap of one GPU: ``requested`` if given, else derived from ``free`` memory."""
    if requested is not None:
        count = min(requested, workers)
        named = "all" if requested >= workers else str(requested)
        return Cap(count, f"{named} by --exportcheck-gpu-workers / exportcheck_gpu_workers")
    size, source = per_worker
    if free is None:
        return Cap(1, f"free memory of {device} unknown: one worker at a time")
    fit = math.floor(free * USABLE_FRACTION / size)
    count = max(1, min(fit, workers))
    return Cap(
        count,
        f"auto: {show_size(free)} free x {USABLE_FRACTION:g} / {source} = {fit}"
        + (f", at most the {workers} workers" if fit > workers else "")
        + (", at least one" if fit < 1 else ""),
    )


def deal(devices: list[str], workers: list[str], caps: dict[str, Cap]) -> dict[str, list[str]]:
    """Which workers use each GPU: ``caps[d].workers`` of them, GPUs spread over workers
    (two GPUs capped at 8 of 16 workers each get disjoint halves)."""
    owners: dict[str, list[str]] = {}
    start = 0
    for device in devices:
        count = min(caps[device].workers, len(workers))
        owners[device] = [workers[(start + i) % len(workers)] for i in range(count)]
        start += count
    return owners


def free_memory_bytes(device: str) -> int | None:
    """Free memory of an accelerator now, or None if it cannot be read.

    Read through NVML (``torch.cuda.device_memory_used``) where torch has it, so
    the controller does not create a CUDA context of its own on every GPU; else
    with ``torch.cuda.mem_get_info``, which does.
    """
    simulated = os.environ.get(SIMULATE_FREE_ENV)
    if simulated:
        for entry in simulated.split(","):
            name, _, size = entry.partition("=")
            if name.strip() == device:
                return parse_size(size)
        return None
    kind, _, index_text = device.partition(":")
    if kind != "cuda":
        return None
    import torch

    index = int(index_text or 0)
    try:
        used = getattr(torch.cuda, "device_memory_used", None)
        if used is not None:
            return int(torch.cuda.get_device_properties(index).total_memory - used(index))
    except Exception:
        pass
    try:
        return int(torch.cuda.mem_get_info(index)[0])
    except Exception:
        return None


def worker_peak_bytes() -> int | None:
    """The largest GPU memory this process's caching allocator reserved, over its GPUs;
    None where it never used one (torch is not even imported then)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    peaks = [torch.cuda.max_memory_reserved(i) for i in range(torch.cuda.device_count())]
    return max(peaks, default=0) or None
