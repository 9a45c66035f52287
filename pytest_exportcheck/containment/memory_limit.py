"""A memory limit for each process that runs items (``exportcheck_memory_limit``).

Without one, a model too big for the machine grows its worker until the kernel's
out-of-memory killer ends it: the worker's items read ``[crashed]``, and what it
held is lost (``crashes.py`` names that afterwards). With one, the allocation
past the limit fails where it is made, as an exception of the model's stage::

    torch.empty(...)  ->  RuntimeError: DefaultCPUAllocator: can't allocate memory
    bytearray(...)    ->  MemoryError

so the item fails, naming the limit, and the process goes on with the next one.

The limit is ``RLIMIT_DATA``: since Linux 4.7 it counts a process's private
writable mappings, which is where CPU tensors and Python objects live (measured:
torch 2.13's CPU allocator and ``bytearray`` both fail cleanly over it, and a
2.14 CUDA build imports at 0.8 GB of it). It counts memory asked for, not
touched, so it is an upper bound on resident memory. It is not set in a process
that checks CUDA devices: the CUDA driver's own mappings count against it and
were not measured on a GPU, and a driver failing to initialize would fail every
GPU item for the wrong reason.

Unset, the limit is :func:`derived`: 90% of the memory this process's machine,
or its cgroup, allows, for each process that runs items. Not divided among the
workers: measured with VGG-11's eight items under ``-n 2`` in a memory cgroup
(``benchmarks/README.md``, Big models), a per-worker share refused items the
kernel would have let run (6 GiB: 2 items failed where none was killed without a
limit; 4.5 GiB: 6 failed where the kernel killed one worker, costing 4), while
the per-process 90% lost no item at 6 GiB and 2 at 4.5 GiB. What it stops is one
process asking for more than the machine has (a typo'd size, a runaway loop),
which would otherwise have the kernel kill a worker, or the machine swap.
"""

from __future__ import annotations

import sys

from pytest_exportcheck.parallel.gpu_sharing import SharingError, parse_size, show_size

INI = "exportcheck_memory_limit"

# The limit this process set (bytes), for the note on its failures; None: not set.
_active: int | None = None
# The limit the process was started under (inherited()), read before ours replaced it.
_started_under: tuple[int, str] | None = None


def parse(text: str) -> int | None:
    """``12GiB`` → bytes; empty or ``0`` → no limit. ValueError names the setting."""
    text = text.strip()
    if text in ("", "0"):
        return None
    try:
        size = parse_size(text)
    except SharingError as exc:
        raise ValueError(f"{INI}: {exc}") from None
    if size < 1 << 30:
        # Importing torch alone takes 0.2-0.8 GB of it: a smaller limit fails every item.
        raise ValueError(f"{INI}: {text!r} is under 1GiB, less than torch itself needs")
    return size


# The share of the machine's memory the processes running items may ask for, all
# together, when no limit is set: the rest is the controller's, the page cache's
# and the system's.
DEFAULT_SHARE = 0.9


def derived() -> int | None:
    """The default limit: :data:`DEFAULT_SHARE` of the machine's memory (or of the
    cgroup's, where it allows less), for each process, or the limit the process was
    started under (:func:`inherited`) where that is lower: an allocation fails there
    first. None where the memory cannot be read, or the limit is under 1 GiB (less
    than torch itself needs: every item would fail)."""
    total = machine_memory()
    candidates = [int(total * DEFAULT_SHARE)] if total is not None else []
    started_under = inherited()
    if started_under is not None:
        candidates.append(started_under[0])
    limit = min(candidates, default=None)
    return limit if limit is not None and limit >= 1 << 30 else None


# The limits a process can be started under that end an allocation before ours does:
# ulimit -v (address space: every mapping, so it binds first) and ulimit -d (data).
_INHERITED = (("RLIMIT_AS", "ulimit -v"), ("RLIMIT_DATA", "ulimit -d"))


def inherited() -> tuple[int, str] | None:
    """The lowest soft limit on memory this process was started under, in bytes, with
    the command that sets it (``ulimit -v``); None where there is none (Linux only).
    Once :func:`apply` has set RLIMIT_DATA, what it read before doing so."""
    if _active is not None:
        return _started_under
    if not sys.platform.startswith("linux"):
        return None
    import resource

    found = []
    for name, command in _INHERITED:
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft != resource.RLIM_INFINITY:
            found.append((soft, command))
    return min(found, default=None)


def machine_memory() -> int | None:
    """Bytes of memory this process's machine, or its cgroup, lets it use (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    sizes = []
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    sizes.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    for path in cgroup_limit_files():
        try:
            with open(path) as limit:
                text = limit.read().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else None


def cgroup_limit_files(
    proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> list[str]:
    """The memory-limit files of this process's cgroup and each of its ancestors (v2
    ``memory.max``, v1 ``memory.limit_in_bytes``): the tightest one binds. Read from
    ``/proc/self/cgroup``: a process started in a cgroup of its own (``systemd-run -p
    MemoryMax=``, a CI runner's job) is limited there, not at the mount's root."""
    found = [f"{root}/memory.max", f"{root}/memory/memory.limit_in_bytes"]
    try:
        with open(proc_cgroup) as listed:
            lines = listed.read().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers == "":  # v2: the unified hierarchy
            base, name = root, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = f"{root}/memory", "memory.limit_in_bytes"
        else:
            continue
        parts = [part for part in path.split("/") if part]
        found += ["/".join([base, *parts[:depth], name]) for depth in range(1, len(parts) + 1)]
    return found


def apply(limit: int) -> tuple[int, int] | None:
    """Set the process's limit; returns the previous one for :func:`restore` (None where
    the platform has no such limit: the setting then does nothing, as on macOS)."""
    global _active, _started_under
    if not sys.platform.startswith("linux"):
        return None
    import resource

    _started_under = inherited()
    previous = resource.getrlimit(resource.RLIMIT_DATA)
    hard = previous[1]
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    _active = soft
    return previous


def restore(previous: tuple[int, int] | None) -> None:
    """Put back what :func:`apply` replaced (an in-process pytest run ends; its host goes on)."""
    global _active
    if previous is None:
        return
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, previous)
    _active = None


def note_for(error: BaseException) -> str:
    """A line for a failure whose cause is an allocation this process's limit refused."""
    if _active is None or not _ran_out(error):
        return ""
    binding = min(_active, _started_under[0]) if _started_under is not None else _active
    source = _source(_active, _started_under)
    return (
        f"(this process's memory limit is {show_size(binding)}, {source}: the allocation past "
        "it failed here instead of the system killing the process; raise the limit or run "
        "this case on a larger machine)"
    )


def _source(limit: int, started_under: tuple[int, str] | None) -> str:
    """Where ``limit`` comes from: our setting, or the one the process was started with."""
    if started_under is not None and started_under[0] <= limit:
        return f"the limit this process was started under ({started_under[1]})"
    return INI


def _ran_out(error: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or _allocator_refused(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _allocator_refused(error: BaseException) -> bool:
    try:
        text = str(error)
    except Exception:  # a model's exception whose __str__ raises
        return False
    return "can't allocate memory" in text or "Cannot allocate memory" in text


def header_line(limit: int, *, derived: bool, checks_cuda: bool) -> str:
    """The run header's line on the limit."""

    if checks_cuda:
        return (
            "exportcheck: memory limit not set: this run checks CUDA devices, whose "
            "driver's mappings the limit would count (memory_limit.py)"
        )
    line = f"exportcheck: memory limit {show_size(limit)} per process"
    started_under = inherited()
    if started_under is not None and started_under[0] < limit:
        # A setting over what the process was started with: that one ends it first.
        return line + (
            f" ({INI}), but this process was started under {show_size(started_under[0])} "
            f"({started_under[1]}), which refuses an allocation first"
        )
    if derived and started_under is not None and started_under[0] == limit:
        return line + (
            f" (the limit this process was started under, {started_under[1]}; "
            "exportcheck_memory_limit sets a lower one)"
        )
    if derived:
        line += (
            f" ({DEFAULT_SHARE:.0%} of this machine's or cgroup's memory, for each process; "
            "exportcheck_memory_limit sets another, 0 none)"
        )
    return line
