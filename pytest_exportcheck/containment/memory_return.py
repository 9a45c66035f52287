"""Giving a worker's freed memory back to the system once a case's items are done.

A case's subject and captures are dropped when no later item needs them
(``session.release``). Python then frees their tensors, but glibc keeps much of
what it freed: a freed block below its mmap threshold goes back to the heap,
not to the kernel, and the threshold itself rises (up to 32 MiB) each time a
larger mapped block is freed, so after a big model most tensors live in heaps.
Without a trim, an xdist worker that ran vgg11 stayed at ~9 GiB for the rest of
the run, and the next big item on it was killed by the kernel (issue 29).
``malloc_trim(0)`` hands every free page of every heap back (glibc >= 2.8
releases pages inside a heap too, not only at its top); it costs a few
milliseconds. Elsewhere than glibc nothing is trimmed.

The collection before the trim is what costs: a full ``gc.collect()`` walks
every object the process holds, ~300k once torch has exported something
(0.12-0.14 s each: a third of the plugin's time on a corpus of small cases).
So what outlives the cases is frozen (``gc.freeze``: later collections skip
it): torch's import before the first model is built, then whatever survives a
collection made where no case's objects are held (the modules the first export
imports, torch's caches). A frozen object that becomes garbage is collected
only by a walk over everything (``gc.unfreeze`` first): one is made where
resident memory has grown by ``GROWTH_TO_COLLECT`` since the last, which also
reaches what a freeze caught that was not the process's own (a failed item's
frames, which pytest keeps in ``sys.last_traceback`` until the next failure).
Where a case's objects are still held (an xdist worker keeps a subject that
other workers' units share), nothing is frozen, since a model frozen and
dropped later would wait for such a walk; there the small models' cycles are
left to Python's own collections and a collection is made on that growth only.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import platform
from collections.abc import Callable

GROWTH_TO_COLLECT = 64 << 20  # bytes of resident memory


class HeapKeeper:
    """One process's freezes and collections, between cases."""

    def __init__(self) -> None:
        self._frozen = False
        self._resident_after_full: int | None = None  # after the last walk over everything

    def freeze_imports(self) -> None:
        """Before the first model: torch's import leaves a large heap that every full
        collection would walk again (export allocates enough to trigger dozens)."""
        if not self._frozen:
            gc.freeze()
            self._frozen = True
            # The baseline growth is measured from: a first walk over everything then
            # would walk what the process held before (in a test process, every earlier
            # in-process run's) for no memory.
            self._resident_after_full = resident_bytes()

    def return_freed_memory(self, *, cases_held: bool) -> None:
        """Collect cycles (a model's tensors often sit in one), then trim the heaps."""
        grown = has_grown(resident_bytes(), self._resident_after_full)
        if cases_held and not grown:
            return
        if grown and not cases_held:
            gc.unfreeze()  # the walk over everything: frozen garbage too
        gc.collect()
        if not cases_held:
            gc.freeze()  # what survives now outlives every case
            self._frozen = True
        trim = _malloc_trim()
        if trim is not None:
            trim(0)
        if grown:
            self._resident_after_full = resident_bytes()


def has_grown(resident: int | None, after_full: int | None) -> bool:
    """Whether resident memory has grown by ``GROWTH_TO_COLLECT`` since the last walk over
    everything (yes where there was none, or where it cannot be read)."""
    if resident is None or after_full is None:
        return True
    return resident - after_full >= GROWTH_TO_COLLECT


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux), else None."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
