"""A function of torch's swapped, for one block, in the modules that call it.

torch's export modules import their helpers by name (``from torch._export.utils
import _collect_all_valid_cia_ops``) or define them beside their callers, so a
helper is replaced where it is looked up: as a global of each calling module.
Outside the block every module has torch's own function back, and a block
inside another does not wrap the wrapper again.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_MARK = "__substituted_by_exportcheck__"


@contextmanager
def substituted(
    callers: tuple[str, ...], name: str, substitute: Callable[[Any], Any]
) -> Iterator[None]:
    """Within the block, ``name`` in each module of ``callers`` is ``substitute(original)``.

    A module that torch lacks, or that lacks ``name``, is left alone: the block
    then runs torch's own code there.
    """
    swapped = []
    for module_name in callers:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, name, None)
        if callable(original) and not hasattr(original, _MARK):
            replacement = substitute(original)
            setattr(replacement, _MARK, True)
            swapped.append((module, original))
            setattr(module, name, replacement)
    try:
        yield
    finally:
        for module, original in swapped:
            setattr(module, name, original)
