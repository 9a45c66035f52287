"""The graphs Dynamo leaves behind after a capture, and letting them go.

Dynamo keeps a graph it compiled for as long as the code it compiled may run
again: the graph is a global of the traced frame's module
(``__compiled_fn_<n>_<uuid>``), removed when that code is evicted from Dynamo's
caches. Measured in plain torch, strict export of AlexNet in a function, then
``gc.collect()`` and ``malloc_trim(0)`` once the program is gone:

- torch 2.13: the frame strict export traces is a wrapper in
  ``torch._dynamo.functional_export`` whose compiled code is never cached, so
  nothing evicts its global. It holds Dynamo's graph module and, through it,
  every parameter of the exported model: 233 MB for the rest of the process,
  which ``torch._dynamo.reset()`` does not free.
- torch 2.9: the graph is held by Dynamo's caches (a compiler closure), which
  ``torch._dynamo.reset()`` frees (877 to 644 MB).

So each capture notes the compiled-graph globals it added (:func:`noting`); when
the session drops the capture, they let go of their graphs (:func:`remove`), and once a
case is done Dynamo starts afresh (:func:`reset_dynamo`), as in a new process.
A global is removed only with the capture that added it: another capture alive
may still run code that reads its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

Global = tuple[str, str]  # (module name, global name)

PREFIX = "__compiled_fn"
# Where Dynamo's export entry points live: the modules whose frames it traces as the
# root of a capture (a case's own forward, traced as the root by the legacy
# ``torch._dynamo.export``, is evicted by the reset instead).
_TORCH_MODULES = ("torch._dynamo", "torch.export", "torch._export", "torch._functorch")


def compiled_globals() -> set[Global]:
    """The compiled-graph globals in torch's export modules now (a few ms: ~150 modules)."""
    found = set()
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(_TORCH_MODULES):
            continue
        found.update((name, key) for key in list(vars(module)) if key.startswith(PREFIX))
    return found


@contextmanager
def noting() -> Iterator[list[Global]]:
    """The block's new compiled-graph globals, in the list it yields (filled at its end,
    however it ends)."""
    before = compiled_globals()
    added: list[Global] = []
    try:
        yield added
    finally:
        added.extend(sorted(compiled_globals() - before))


def remove(found: list[Global]) -> None:
    """Let go of what each global holds. The name stays, bound to None: where Dynamo
    did register a cleanup for it (a weak reference to the traced object), that cleanup
    deletes the name later, and would raise KeyError (an unraisable-exception warning
    in the run) had the name gone first."""
    for module_name, key in found:
        module = sys.modules.get(module_name)
        if module is not None and key in vars(module):
            vars(module)[key] = None


def reset_dynamo() -> None:
    """``torch._dynamo.reset()``, where a capture imported Dynamo (never importing it)."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()
