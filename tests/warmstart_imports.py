"""What the warm server (``warmstart_server.py``) imports and builds before its first fork.

A warm child is to be the process ``python ARGS`` would have started, for less. Torch's
import is most of a start (~3 s of CPU). After it, a process's first export,
decomposition and unlifted module still cost ~0.4 s more than its next ones (torch
2.13, measured): ~400 modules torch imports on first use (networkx the most), and the
CompositeImplicitAutograd overrides ``run_decompositions`` installs the first time.
Nearly every warm child exports, so both are made here once (~0.5 s) and each child
saves ~0.3 s.

No op runs (a thread pool or device started before a fork is what the server must not
have), and no warning is issued: a warning given here would be "already given" in each
child. Each step is skipped where a torch lays its modules out otherwise: a child then
imports or builds it itself, as a fresh interpreter does.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings

# Imported by a process's first torch.export.export, run_decompositions and .module()
# (torch 2.13): the modules that import the rest.
FIRST_EXPORT_IMPORTS = (
    "torch.export._trace", "torch.export._unlift", "torch.export.pt2_archive",
    "torch._export.serde.serialize", "torch._export.passes",
    "torch._export.passes.replace_set_grad_with_hop_pass",
    "torch._export.passes.replace_autocast_with_hop_pass",
    "torch._functorch.partitioners", "torch._functorch._aot_autograd.graph_compile",
    "torch._functorch._aot_autograd.subclass_parametrization",
    "torch._inductor.codecache", "torch._inductor.output_code", "torch._inductor.codegen.common",
    "torch._inductor.inductor_prims", "torch._inductor.ops_handler", "torch._inductor.sizevars",
    "torch._inductor.compiler_bisector", "torch._inductor.fx_passes.dedupe_symint_uses",
    "torch._subclasses.schema_check_mode", "torch.fx.experimental.validator",
    "networkx", "filelock",
)  # fmt: skip


# The warnings the server's imports and warm-up issued, as its children find them.
ISSUED: list[str] = []


def import_and_warm_up() -> list[str]:
    """Torch and what its first export needs; the warnings that were issued meanwhile
    (none expected: the caller says any it gets)."""
    with warnings.catch_warnings(record=True) as issued:
        warnings.simplefilter("always")
        import numpy  # noqa: F401  (torch's import reads it: imported here with one thread)
        import torch
        import torch._dynamo
        import torch.export
        import yaml  # noqa: F401

        for name in FIRST_EXPORT_IMPORTS:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        _decompositions_built(torch)
    ISSUED.extend(f"{w.category.__name__}: {w.message}" for w in issued)
    return ISSUED


def _decompositions_built(torch: object) -> None:
    """What ``ExportedProgram.run_decompositions()`` does before it traces, done once:
    the default table split as it splits it, and its CompositeImplicitAutograd overrides
    installed and taken off (the first time, ~0.2 s). What stays is what any process
    that decomposed once holds: the ops' fake-tensor rules, overload objects, caches.
    Not a real decomposition: that starts tqdm's monitor thread (measured, torch 2.13)."""
    with contextlib.suppress(Exception):  # another torch: its children build their own
        from torch.export.decomp_utils import CustomDecompTable
        from torch.export.exported_program import (
            _override_composite_implicit_decomp,
            _split_decomp_table_to_cia_and_python_decomp,
        )

        table = torch.export.default_decompositions()  # type: ignore[attr-defined]
        if isinstance(table, CustomDecompTable):
            table = table.materialize()
        overrides, _ = _split_decomp_table_to_cia_and_python_decomp(table)
        with _override_composite_implicit_decomp(overrides):
            pass
