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
milliseconds, once per case. Elsewhere than glibc nothing is trimmed.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import platform
from collections.abc import Callable


def return_freed_memory() -> None:
    """Collect cycles (a model's tensors often sit in one), then trim the heaps."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
